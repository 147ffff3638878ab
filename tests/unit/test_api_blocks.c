/* test_api_blocks.c - the public API's state blocks, shards, scaled low-precision tensors and chunked records: what
 * each writes, and the clear errors for bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/tracedir.h"
#include "common/lsfp1.h"
#include "common/recmatch.h"
#include "common/shard.h"
#include "include/lockstep.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ls-test-blocks-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    setenv("LOCKSTEP_TRACE_DIR", dir, 1);
    setenv("LOCKSTEP_RANK", "0", 1);
    setenv("LOCKSTEP_RUN_ID", "run-blocks", 1);
    setenv("LOCKSTEP_TRACE", "modules", 1);
    unsetenv("LOCKSTEP_MODE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ls_shutdown();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void load(td_run *run)
{
    char why[512];
    if (td_load(run, dir, why, sizeof(why)) < 0)
        fail_msg("cannot load the trace: %s", why);
    assert_int_equal(run->n_ranks, 1);
    assert_int_equal(run->ranks[0].status, REC_OK);
}

static const rec_record *find(const td_run *run, const char *name, int state)
{
    const td_rank *r = &run->ranks[0];
    for (size_t i = 0; i < r->n; i++)
        if (r->recs[i].name_len == strlen(name) && !memcmp(r->recs[i].name, name, r->recs[i].name_len) &&
            (r->recs[i].flags & REC_STATE_MASK) == state)
            return &r->recs[i];
    return NULL;
}

static void test_state_blocks(void **state)
{
    (void)state;
    assert_int_equal(ls_init(), 0);
    double momentum[4] = {0.5, 0.25, 0.125, 1};
    uint64_t data_pos = 4096;
    int64_t shape[1] = {4};

    assert_int_equal(ls_state("momentum", momentum, sizeof(momentum), LS_F64, 1, shape), -1);
    assert_non_null(strstr(ls_last_error(), "no state block is open"));
    assert_int_equal(ls_state_end(), -1);
    assert_int_equal(ls_state_begin(3, 7), -1);
    assert_non_null(strstr(ls_last_error(), "neither"));

    ls_step_begin(3);
    assert_int_equal(ls_metric("loss", 0.5), 0);
    ls_step_end();
    assert_int_equal(ls_state_begin(3, LS_STATE_SAVED), 0);
    assert_int_equal(ls_state_begin(3, LS_STATE_SAVED), -1); /* one block at a time */
    assert_non_null(strstr(ls_last_error(), "still open"));
    assert_int_equal(ls_state("momentum", momentum, sizeof(momentum), LS_F64, 1, shape), 0);
    assert_int_equal(ls_state("data_pos", &data_pos, sizeof(data_pos), LS_U64, 0, NULL), 0);
    assert_int_equal(ls_state_fp("rng", 0x1234, 16, LS_BYTES, 0, NULL), 0);
    assert_int_equal(ls_metric("loss", 0.75), 0); /* a record beside the block is a step record */
    assert_int_equal(ls_state_end(), 0);
    ls_step_begin(4);
    assert_int_equal(ls_state_begin(3, LS_STATE_RESTORED), 0);
    assert_int_equal(ls_state("momentum", momentum, sizeof(momentum), LS_F64, 1, shape), 0);
    assert_int_equal(ls_state_end(), 0);
    assert_int_equal(ls_metric("loss", 1.0), 0);
    ls_shutdown();

    td_run run;
    load(&run);
    const rec_record *saved = find(&run, "momentum", REC_STATE_SAVED);
    const rec_record *restored = find(&run, "momentum", REC_STATE_RESTORED);
    const rec_record *pos = find(&run, "data_pos", REC_STATE_SAVED);
    assert_non_null(saved);
    assert_non_null(restored);
    assert_non_null(pos);
    assert_int_equal(saved->step, 3);
    assert_int_equal(restored->step, 3); /* the block's step, not the open step 4 */
    assert_int_equal(saved->occurrence, 0);
    assert_int_equal(saved->fp, ls_fingerprint(momentum, sizeof(momentum)));
    assert_int_equal(saved->fp, restored->fp);
    assert_true(pos->flags & REC_HAS_VALUE);
    assert_int_equal(pos->value, 4096);
    assert_int_equal(find(&run, "rng", REC_STATE_SAVED)->fp, 0x1234);
    /* the loss beside the open block stayed a step record, counted with the step's own occurrences */
    const td_rank *r = &run.ranks[0];
    int losses = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->recs[i].name_len == 4 && !memcmp(r->recs[i].name, "loss", 4)) {
            assert_false(rec_is_state(&r->recs[i]));
            losses++;
            if (r->recs[i].value == 0x3fe8000000000000ULL) /* 0.75 */
                assert_int_equal(r->recs[i].occurrence, 1);
        }
    assert_int_equal(losses, 3);
    td_release(&run);
}

/* State blocks are kept whatever the step window says (metrics are recorded on this rank). */
static void test_state_outside_window(void **state)
{
    (void)state;
    setenv("LOCKSTEP_TRACE", "modules:steps=100-200", 1);
    assert_int_equal(ls_init(), 0);
    double x = 1;
    assert_int_equal(ls_state_begin(5, LS_STATE_SAVED), 0);
    assert_int_equal(ls_state("x", &x, sizeof(x), LS_F64, 0, NULL), 0);
    assert_int_equal(ls_state_end(), 0);
    ls_step_begin(5);
    assert_int_equal(ls_metric("loss", 1.0), 0); /* filtered out: step 5 is outside the window */
    ls_shutdown();
    td_run run;
    load(&run);
    assert_int_equal(run.n_records, 1);
    assert_non_null(find(&run, "x", REC_STATE_SAVED));
    td_release(&run);
}

/* LOCKSTEP_IGNORE leaves out state entries, shards and scaled tensors like any record; LOCKSTEP_STEP_ON never takes a
 * state entry for the record that opens a step (an entry does not move the current step). */
static void test_ignore_and_step_on(void **state)
{
    (void)state;
    setenv("LOCKSTEP_IGNORE", "optim.*,tmp.*", 1);
    setenv("LOCKSTEP_STEP_ON", "data_pos", 1);
    int rc = ls_init();
    unsetenv("LOCKSTEP_IGNORE");
    unsetenv("LOCKSTEP_STEP_ON");
    assert_int_equal(rc, 0);
    double m = 0.5;
    uint64_t pos = 7;
    int64_t one[1] = {1};
    assert_int_equal(ls_state_begin(0, LS_STATE_SAVED), 0);
    assert_int_equal(ls_state("optim.m", &m, sizeof(m), LS_F64, 0, NULL), 0);      /* ignored: no error, no record */
    assert_int_equal(ls_state_fp("optim.v", 0x99, 8, LS_F64, 0, NULL), 0);         /* ignored */
    assert_int_equal(ls_state("data_pos", &pos, sizeof(pos), LS_U64, 0, NULL), 0); /* kept; opens no step */
    assert_int_equal(ls_state_end(), 0);
    assert_int_equal(ls_tensor_shard("tmp.w", &m, 8, 0, 8, LS_F64, 1, one), 0); /* ignored */
    assert_int_equal(ls_tensor_shard("w", &m, 8, 0, 8, LS_F64, 1, one), 0);
    assert_int_equal(ls_metric("data_pos", 7), 0); /* a step record of that name opens step 1 */
    assert_int_equal(ls_metric("loss", 1), 0);
    ls_shutdown();
    td_run run;
    load(&run);
    assert_int_equal(run.n_records, 4);
    assert_null(find(&run, "optim.m", REC_STATE_SAVED));
    assert_null(find(&run, "optim.v", REC_STATE_SAVED));
    assert_null(find(&run, "tmp.w", 0));
    assert_int_equal(find(&run, "data_pos", REC_STATE_SAVED)->step, 0);
    assert_int_equal(find(&run, "w", 0)->step, 0); /* the state entry did not open a step */
    assert_int_equal(find(&run, "data_pos", 0)->step, 1);
    assert_int_equal(find(&run, "loss", 0)->step, 1);
    td_release(&run);
}

static void test_shards(void **state)
{
    (void)state;
    assert_int_equal(ls_init(), 0);
    enum { N = 3 * (1 << 18) + 5 }; /* f32 elements: 3 MiB + 20 bytes, four chunks */
    float *w = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        w[i] = (float)i * 0.5f;
    int64_t full[2] = {N, 1};
    uint64_t total = N * sizeof(float);
    /* three ranks' worth, recorded by one process under three names */
    uint64_t cuts[4] = {0, 1000 * 8, 2 * (1 << 20) + 64, total};
    char name[32];
    for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof(name), "w.part%d", k);
        assert_int_equal(
            ls_tensor_shard(name, (const char *)w + cuts[k], cuts[k + 1] - cuts[k], cuts[k], total, LS_F32, 2, full),
            0);
    }
    /* bad input, each a clear error */
    assert_int_equal(ls_tensor_shard("w.bad", w, 64, 4, total, LS_F32, 2, full), -1);
    assert_non_null(strstr(ls_last_error(), "offset 4 is not a multiple of 8"));
    assert_int_equal(ls_tensor_shard("w.bad", w, 64, 0, 32, LS_F32, 2, full), -1);
    assert_non_null(strstr(ls_last_error(), "does not fit in the tensor's total of 32 bytes"));
    assert_int_equal(ls_tensor_shard("w.bad", w, 12, 0, total, LS_F32, 2, full), -1);
    assert_non_null(strstr(ls_last_error(), "inside a 64-bit word"));
    ls_shutdown();

    td_run run;
    load(&run);
    assert_int_equal(run.n_records, 3);
    shard_piece ps[3];
    for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof(name), "w.part%d", k);
        ps[k] = (shard_piece){.r = find(&run, name, 0), .rank = (uint32_t)k};
        assert_non_null(ps[k].r);
        assert_true(rec_same_shape(ps[k].r, ps[0].r));
    }
    shard_tensor t;
    char why[200];
    if (shard_assemble(ps, 3, &t, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    uint64_t whole[4];
    assert_int_equal(t.fp, fp_lsfp1_chunks(w, total, whole));
    assert_int_equal(t.fp, ls_fingerprint(w, total));
    assert_int_equal(t.n_chunks, 4);
    assert_memory_equal(t.chunks, whole, sizeof(whole));
    shard_tensor_release(&t);
    td_release(&run);
    free(w);
}

static void test_scaled(void **state)
{
    (void)state;
    assert_int_equal(ls_init(), 0);
    unsigned char values[64], scales[2] = {127, 130};
    for (int i = 0; i < 64; i++)
        values[i] = (unsigned char)(i * 7);
    int64_t vshape[1] = {128}, sshape[1] = {2}; /* 128 FP4 values, packed, one E8M0 scale per 64 */
    assert_int_equal(ls_tensor_scaled("fc.w", values, 64, LS_F4E2M1, 1, vshape, scales, 2, LS_E8M0, 1, sshape), 0);
    scales[1] = 131;
    assert_int_equal(ls_tensor_scaled("fc.w", values, 64, LS_F4E2M1, 1, vshape, scales, 2, LS_E8M0, 1, sshape), 0);
    scales[1] = 130;
    values[5] ^= 1;
    assert_int_equal(ls_tensor_scaled("fc.w", values, 64, LS_F4E2M1, 1, vshape, scales, 2, LS_E8M0, 1, sshape), 0);
    assert_int_equal(ls_tensor_scaled("fc.w", values, 64, LS_F4E2M1, 1, vshape, NULL, 2, LS_E8M0, 1, sshape), -1);
    assert_int_equal(ls_tensor_scaled("fc.w", values, 64, LS_F4E2M1, 1, vshape, scales, 2, (ls_dtype)77, 1, sshape),
                     -1);
    ls_shutdown();

    td_run run;
    load(&run);
    assert_int_equal(run.n_records, 3);
    const rec_record *r = run.ranks[0].recs;
    rec_ext x;
    rec_ext_of(&r[0], &x);
    assert_true(x.has_scales);
    assert_int_equal(x.scales_dtype, LS_E8M0);
    assert_int_equal(x.scales_nbytes, 2);
    assert_false(r[0].flags & REC_HAS_VALUE);                      /* FP4 bytes are not a scalar */
    assert_int_equal(rec_compare(&r[0], &r[1]), REC_DIFF_SCALES);  /* scale-only change */
    assert_int_equal(rec_compare(&r[0], &r[2]), REC_DIFF_CONTENT); /* value-only change */
    assert_false(rec_scales_differ(&r[0], &r[2]));
    td_release(&run);
}

static void test_chunked(void **state)
{
    (void)state;
    assert_int_equal(ls_init(), 0);
    enum { N = 16384 }; /* a 64 KiB routing map of i32 expert ids */
    int32_t *map = malloc(N * sizeof(int32_t));
    for (int i = 0; i < N; i++)
        map[i] = i % 8;
    int64_t shape[1] = {N};
    assert_int_equal(ls_tensor_chunked(LS_LEVEL_MODULE, "moe.route", map, N * 4, 4096, LS_I32, 1, shape), 0);
    map[9000] = 7 - map[9000]; /* one token routed elsewhere: byte 36000, chunk 8 */
    assert_int_equal(ls_tensor_chunked(LS_LEVEL_MODULE, "moe.route", map, N * 4, 4096, LS_I32, 1, shape), 0);
    assert_int_equal(ls_tensor_chunked(LS_LEVEL_MODULE, "moe.route", map, N * 4, 100, LS_I32, 1, shape), -1);
    assert_non_null(strstr(ls_last_error(), "chunk size 100"));
    assert_int_equal(ls_tensor_chunked(LS_LEVEL_MODULE, "moe.route", map, N * 4, 0, LS_I32, 1, shape), -1);
    assert_int_equal(ls_tensor_chunked(LS_LEVEL_MODULE, "moe.route", map, N * 4, 64, LS_I32, 1, shape), 0);
    ls_shutdown();

    td_run run;
    load(&run);
    assert_int_equal(run.n_records, 3);
    const rec_record *r = run.ranks[0].recs;
    assert_int_equal(r[0].n_chunks, 16);
    assert_int_equal(rec_chunk_bytes(&r[0]), 4096);
    assert_int_equal(r[2].n_chunks, 1024);
    assert_int_equal(rec_chunk_bytes(&r[2]), 64);
    assert_int_equal(r[1].fp, ls_fingerprint(map, N * 4)); /* the fingerprint is ls_tensor's */
    assert_int_equal(rec_compare(&r[0], &r[1]), REC_DIFF_CONTENT);
    int first = -1;
    for (uint32_t c = 0; c < r[0].n_chunks && first < 0; c++)
        if (r[0].chunks[c] != r[1].chunks[c])
            first = (int)c;
    assert_int_equal(first, 8);
    td_release(&run);
    free(map);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_state_blocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_outside_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ignore_and_step_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scaled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
