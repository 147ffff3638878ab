/* test_restore.c - lockstepd integration: restored state blocks checked against the twin's saved block (or its
 * records), restore differences named by entry before any later step, twin groups of different rank counts compared on
 * their logical tensors, and records' state and extension fields through both ingest forms and the records endpoint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "common/lsfp1.h"
#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    const char *args[] = {"--db", pg.conninfo, NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    int st = h_srv_kill(&srv, SIGTERM);
    h_srv_cleanup(&srv);
    h_pg_stop(&pg);
    return st == 0 ? 0 : -1;
}

/* A state entry: a name and the 8 bytes it holds. */
typedef struct entry {
    const char *name;
    uint64_t value;
} entry;

/* post_block - one state block (flag REC_STATE_SAVED or REC_STATE_RESTORED) of `step` on `rank` as its own batch. */
static void post_block(const char *run, int rank, uint64_t bseq, int64_t step, int flag, const entry *e, int n,
                       uint64_t *seq)
{
    h_batch b = {0};
    h_batch_begin(&b, run, (uint32_t)rank, bseq);
    for (int i = 0; i < n; i++) {
        rec_record r = {0};
        r.seq = (*seq)++;
        r.step = step;
        r.name = e[i].name;
        r.name_len = (uint16_t)strlen(e[i].name);
        r.level = LS_LEVEL_METRIC;
        r.dtype = LS_U64;
        r.nbytes = 8;
        r.value = e[i].value;
        r.flags = (uint8_t)(REC_HAS_VALUE | flag);
        r.fp = fp_lsfp1(&e[i].value, 8);
        h_batch_add(&b, &r);
    }
    char url[512];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", srv.base, run);
    assert_int_equal(h_http("POST", url, "application/x-lockstep", b.buf, b.len, NULL, NULL), 200);
    h_batch_free(&b);
}

/* run_full - a run of one rank, steps 0..9, that saved `saved` (n entries) after step 4. */
static void run_full(const char *job, const char *group, const entry *saved, int n, char *id)
{
    uint64_t seq = 0;
    assert_int_equal(it_register(&srv, job, group, 1, 0, NULL, id), 0);
    assert_int_equal(it_post_steps(&srv, id, 0, 0, 0, 5, 5, -1, -1, -1, -1, &seq, NULL), 200);
    if (n)
        post_block(id, 0, 1, 4, REC_STATE_SAVED, saved, n, &seq);
    assert_int_equal(it_post_steps(&srv, id, 0, 2, 5, 5, 5, -1, -1, -1, -1, &seq, NULL), 200);
    assert_int_equal(it_end(&srv, id, 0, NULL), 200);
}

/* run_resumed_from - a run of one rank resumed after step 4 that restored `restored` there, registered with start
 * step `registered` (5 when the job said so, 0 as the plugin registers it: before the program loads anything); its
 * step 7 differs from its twin's when `flip7`. */
static void run_resumed_from(const char *job, const char *group, const entry *restored, int n, int flip7,
                             int registered, char *id)
{
    uint64_t seq = 0; /* the resumed run numbers its records from 0: the block, then its steps */
    assert_int_equal(it_register(&srv, job, group, 1, registered, NULL, id), 0);
    post_block(id, 0, 0, 4, REC_STATE_RESTORED, restored, n, &seq);
    assert_int_equal(it_post_steps(&srv, id, 0, 1, 5, 5, 5, flip7 ? 7 : -1, 2, -1, -1, &seq, NULL), 200);
    assert_int_equal(it_end(&srv, id, 0, NULL), 200);
}

static void run_resumed(const char *job, const char *group, const entry *restored, int n, int flip7, char *id)
{
    run_resumed_from(job, group, restored, n, flip7, 5, id);
}

static json_t *restore_of(json_t *group, int i)
{
    return json_array_get(json_object_get(group, "restores"), (size_t)i);
}

static const entry SAVED[] = {{"params", 11}, {"momentum", 22}, {"rng", 33}, {"data_pos", 44}};

static void test_restore_verified(void **state)
{
    (void)state;
    char a[40], b[40];
    run_full("300", "rs-good", SAVED, 4, a);
    run_resumed("301", "rs-good", SAVED, 4, 0, b);
    json_t *o = it_wait_group(&srv, "rs-good", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    for (int i = 0; i < 100 && !json_array_size(json_object_get(o, "restores")); i++) {
        json_decref(o);
        usleep(50000);
        o = it_wait_group(&srv, "rs-good", "match");
    }
    assert_int_equal(json_array_size(json_object_get(o, "restores")), 1);
    json_t *r = restore_of(o, 0);
    assert_string_equal(json_string_value(json_object_get(r, "run_id")), b);
    assert_string_equal(json_string_value(json_object_get(r, "reference_run_id")), a);
    assert_string_equal(json_string_value(json_object_get(r, "reference")), "saved");
    assert_string_equal(json_string_value(json_object_get(r, "status")), "same");
    assert_int_equal(json_integer_value(json_object_get(r, "step")), 4);
    assert_int_equal(json_integer_value(json_object_get(r, "compared")), 4);
    json_decref(o);
}

static void test_restore_difference_first(void **state)
{
    (void)state;
    char a[40], b[40];
    const entry forgot[] = {{"params", 11}, {"rng", 33}, {"data_pos", 44}}; /* the optimizer was not loaded */
    run_full("310", "rs-bad", SAVED, 4, a);
    run_resumed("311", "rs-bad", forgot, 3, 1, b); /* and a later step differs too */
    json_t *o = it_wait_group(&srv, "rs-bad", "diverged");
    json_t *fd = json_object_get(o, "first_divergence");
    /* the step comparison may store step 7 first; the restore check's step 4 replaces it */
    for (int i = 0; i < 100 && json_integer_value(json_object_get(fd, "step")) != 4; i++) {
        json_decref(o);
        usleep(50000);
        o = it_wait_group(&srv, "rs-bad", "diverged");
        fd = json_object_get(o, "first_divergence");
    }
    assert_int_equal(json_integer_value(json_object_get(fd, "step")), 4);
    assert_string_equal(json_string_value(json_object_get(fd, "kind")), "restore");
    assert_string_equal(json_string_value(json_object_get(fd, "name")), "momentum");
    assert_string_equal(json_string_value(json_object_get(fd, "odd_run_id")), b);
    json_t *runs = json_object_get(fd, "runs");
    assert_int_equal(json_array_size(runs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 0), "role")), "saved");
    assert_true(json_is_true(json_object_get(json_array_get(runs, 0), "present")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 1), "role")), "restored");
    assert_true(json_is_false(json_object_get(json_array_get(runs, 1), "present")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 1), "status")), "not-restored");
    json_t *r = restore_of(o, 0);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "not-restored");
    assert_string_equal(json_string_value(json_object_get(r, "entry")), "momentum");
    /* one story: the verdict's cause is the restore, on the rank that restored other state */
    assert_string_equal(json_string_value(json_object_get(o, "status")), "diverged");
    assert_string_equal(json_string_value(json_object_get(fd, "cause")), "restore");
    assert_int_equal(json_array_size(json_object_get(fd, "origin_ranks")), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(fd, "origin_ranks"), 0)), 0);
    assert_non_null(strstr(json_string_value(json_object_get(fd, "cause_detail")), "momentum"));
    json_decref(o);
    /* the CLI says the same */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "%s/bin/lockstep twins rs-bad --server %s", getenv("LOCKSTEP_BUILD") ?: "build",
             srv.base);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    int said = 0, listed = 0, cause = 0;
    while (fgets(line, sizeof(line), p)) {
        said |= strstr(line, "RESTORE DIFFERENCE at step 4, rank 0: state entry \"momentum\"") != NULL;
        listed |= strstr(line, "not-restored") != NULL && strstr(line, "momentum") != NULL;
        cause |= strstr(line, "cause: restore: ") != NULL;
    }
    assert_int_equal(pclose(p) >> 8, 1);
    assert_true(said);
    assert_true(listed);
    assert_true(cause);
    /* the fleet calls it software: the checkpoint code, not the hardware */
    json_t *al = NULL;
    int found = 0;
    for (int i = 0; i < 100 && !found; i++) {
        json_decref(al);
        al = NULL;
        usleep(100000);
        if (it_call(&srv, "GET", "/api/v1/alerts", NULL, NULL, &al) != 200)
            continue;
        size_t k;
        json_t *x;
        json_array_foreach(json_object_get(al, "items"), k, x)
        {
            const char *s = json_string_value(json_object_get(x, "summary"));
            const char *body = json_string_value(json_object_get(x, "text"));
            if (s && strstr(s, "rs-bad") && strstr(s, "restored step 4") && strstr(s, "): restore") && body &&
                strstr(body, "Cause: restore: ") && strstr(body, "Classified as software"))
                found = 1;
        }
    }
    assert_true(found);
    json_decref(al);
}

/* A resume registered at step 0 (under Slurm the plugin registers before the program runs): its restored block of
 * step 4 makes it compared from step 5, as `lockstep diff --overlap` compares it. */
static void test_resume_registered_at_zero(void **state)
{
    (void)state;
    char a[40], b[40];
    run_full("320", "rs-zero", SAVED, 4, a);
    run_resumed_from("321", "rs-zero", SAVED, 4, 0, 0, b);
    json_t *o = it_wait_group(&srv, "rs-zero", "match");
    if (strcmp(json_string_value(json_object_get(o, "status")), "match"))
        fail_msg("a correct resume registered at step 0: %s", json_dumps(o, JSON_COMPACT));
    json_decref(o);
    char url[200];
    snprintf(url, sizeof(url), "/api/v1/runs/%s", b);
    assert_int_equal(it_call(&srv, "GET", url, NULL, NULL, &o), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "start_step")), 5);
    json_decref(o);
}

/* A resume registered at step 0 that forgot the optimizer: the first report is the restore difference with its
 * count of saved entries not restored and the first of them, never a step-0 record missing. */
static void test_forgotten_optimizer_counted(void **state)
{
    (void)state;
    char a[40], b[40];
    static const entry saved[] = {{"params", 11}, {"optim.lr", 21}, {"optim.m", 22}, {"optim.v", 23}, {"rng", 33}};
    static const entry forgot[] = {{"params", 11}, {"rng", 33}};
    run_full("330", "rs-optim", saved, 5, a);
    run_resumed_from("331", "rs-optim", forgot, 2, 1, 0, b);
    json_t *o = it_wait_group(&srv, "rs-optim", "diverged");
    json_t *fd = json_object_get(o, "first_divergence");
    for (int i = 0; i < 100 && json_integer_value(json_object_get(fd, "step")) != 4; i++) {
        json_decref(o);
        usleep(50000);
        o = it_wait_group(&srv, "rs-optim", "diverged");
        fd = json_object_get(o, "first_divergence");
    }
    if (json_integer_value(json_object_get(fd, "step")) != 4)
        fail_msg("a resume that forgot the optimizer: %s", json_dumps(fd, JSON_COMPACT));
    assert_string_equal(json_string_value(json_object_get(fd, "cause")), "restore");
    const char *why = json_string_value(json_object_get(fd, "cause_detail"));
    if (!strstr(why, "3 saved entries were not restored (first: optim.lr): the optimizer state was not restored"))
        fail_msg("cause detail: %s", why);
    json_decref(o);
}

static void test_restore_against_records(void **state)
{
    (void)state;
    char a[40], b[40];
    run_full("320", "rs-rec", NULL, 0, a); /* saved nothing */
    /* layer1.out is a record of the twin's step 4 (it_post_steps: f32 [4,256]); the entry is a u64 */
    const entry restored[] = {{"data_pos", 44}, {"layer1.out", 7}};
    run_resumed("321", "rs-rec", restored, 2, 0, b);
    json_t *o = it_wait_group(&srv, "rs-rec", "diverged");
    json_t *fd = json_object_get(o, "first_divergence");
    assert_string_equal(json_string_value(json_object_get(fd, "kind")), "restore");
    assert_string_equal(json_string_value(json_object_get(fd, "name")), "layer1.out");
    json_t *r = restore_of(o, 0);
    assert_string_equal(json_string_value(json_object_get(r, "reference")), "records");
    assert_string_equal(json_string_value(json_object_get(r, "status")), "differs");
    assert_string_equal(json_string_value(json_object_get(r, "diff")), "dtype"); /* u64 [] against f32 [4,256] */
    assert_int_equal(json_integer_value(json_object_get(r, "unverified")), 1);   /* data_pos has no record */
    json_decref(o);
}

/* Shards of one 2.5 MiB logical tensor, per step a function of the step. */
#define LG_BYTES ((size_t)5 << 19)

static unsigned char *lg_tensor(int64_t step)
{
    unsigned char *t = malloc(LG_BYTES);
    for (size_t i = 0; i < LG_BYTES; i++)
        t[i] = (unsigned char)((i * 131 + (size_t)step * 7 + (i >> 12)) & 0xff);
    return t;
}

/* run_sharded - a run of `ranks` ranks over steps 0..5, each rank recording its row block of "w" (plus a per-rank
 * metric that is not a shard); `flip_step` flips one byte at offset `flip_at` on whichever rank holds it. */
static void run_sharded(const char *job, const char *group, int ranks, int64_t flip_step, size_t flip_at, char *id)
{
    assert_int_equal(it_register(&srv, job, group, ranks, 0, NULL, id), 0);
    for (int rank = 0; rank < ranks; rank++) {
        uint64_t seq = 0;
        h_batch b = {0};
        h_batch_begin(&b, id, (uint32_t)rank, 0);
        size_t rows = LG_BYTES / 1280, per = rows / (size_t)ranks, lo = (size_t)rank * per;
        size_t hi = rank == ranks - 1 ? rows : lo + per;
        for (int64_t step = 0; step < 6; step++) {
            unsigned char *t = lg_tensor(step);
            if (step == flip_step)
                t[flip_at] ^= 4;
            uint64_t off = lo * 1280, len = (hi - lo) * 1280, first, chunks[8];
            size_t nc = fp_chunk_span(off, len, FP_CHUNK_BYTES, &first);
            rec_ext x = {0};
            unsigned char ext[REC_EXT_ENCODED_MAX];
            x.has_shard = 1;
            x.shard_offset = off;
            x.shard_total = LG_BYTES;
            x.shard_acc = fp_acc_chunked(t + off, len, off, FP_CHUNK_BYTES, chunks);
            rec_record r = {0};
            r.seq = seq++;
            r.step = step;
            r.name = "w";
            r.name_len = 1;
            r.level = LS_LEVEL_MODULE;
            r.dtype = LS_F32;
            r.ndim = 2;
            r.shape[0] = (int64_t)rows;
            r.shape[1] = 320;
            r.nbytes = len;
            r.fp = fp_finish(x.shard_acc, len);
            r.chunks = chunks;
            r.n_chunks = (uint32_t)nc;
            r.ext_len = (uint16_t)rec_ext_encode(&x, ext);
            r.ext = ext;
            h_batch_add(&b, &r);
            double mine = (double)(hi - lo); /* rank-local: not compared across layouts */
            rec_record m;
            it_scalar(&m, "rows", seq++, step, mine);
            h_batch_add(&b, &m);
            free(t);
        }
        char url[512];
        snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", srv.base, id);
        assert_int_equal(h_http("POST", url, "application/x-lockstep", b.buf, b.len, NULL, NULL), 200);
        h_batch_free(&b);
        assert_int_equal(it_end(&srv, id, rank, NULL), 200);
    }
}

static void test_logical_across_rank_counts(void **state)
{
    (void)state;
    char a[40], b[40], c[40], d[40];
    run_sharded("330", "lg-match", 2, -1, 0, a);
    run_sharded("331", "lg-match", 4, -1, 0, b);
    json_t *o = it_wait_group(&srv, "lg-match", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    assert_true(json_is_true(json_object_get(o, "logical")));
    json_decref(o);
    /* a flipped byte in MiB 1 of the 3-rank run at step 3: named by tensor and chunk, with the ranks holding it */
    run_sharded("332", "lg-div", 4, -1, 0, c);
    run_sharded("333", "lg-div", 3, 3, (size_t)1 << 20 | 5, d);
    o = it_wait_group(&srv, "lg-div", "diverged");
    json_t *fd = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(fd, "step")), 3);
    assert_int_equal(json_integer_value(json_object_get(fd, "rank")), -1);
    assert_true(json_is_true(json_object_get(fd, "logical")));
    assert_string_equal(json_string_value(json_object_get(fd, "name")), "w");
    assert_string_equal(json_string_value(json_object_get(fd, "cause")), "layout"); /* no rank named */
    assert_int_equal(json_array_size(json_object_get(fd, "origin_ranks")), 0);
    json_t *runs = json_object_get(fd, "runs");
    assert_int_equal(json_array_size(runs), 2);
    json_t *rc = json_array_get(runs, 0), *rd = json_array_get(runs, 1);
    assert_int_equal(json_integer_value(json_object_get(rd, "first_chunk")), 1);
    /* 2048 rows of 1280 bytes: MiB 1 is rows 819..1638, on ranks 1, 2 and 3 of 4 (512 rows each) and 1 and 2 of 3 */
    assert_int_equal(json_array_size(json_object_get(rc, "chunk_holders")), 3);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(rc, "chunk_holders"), 0)), 1);
    assert_int_equal(json_array_size(json_object_get(rd, "chunk_holders")), 2);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(rd, "chunk_holders"), 1)), 2);
    assert_int_equal(json_integer_value(json_object_get(rd, "ranks")), 3);
    assert_string_not_equal(json_string_value(json_object_get(rc, "fp")), json_string_value(json_object_get(rd, "fp")));
    json_decref(o);
    /* the match map does not judge rank by rank across layouts */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/lg-div/steps?from=0&to=1", NULL, NULL, &o), 200);
    assert_true(json_is_true(json_object_get(o, "logical")));
    json_t *cell = json_array_get(json_object_get(json_array_get(json_object_get(o, "steps"), 0), "ranks"), 0);
    assert_string_equal(json_string_value(json_object_get(cell, "status")), "layout");
    json_decref(o);
}

static void test_fields_round_trip(void **state)
{
    (void)state;
    char id[40];
    assert_int_equal(it_register(&srv, "340", NULL, 1, 0, NULL, id), 0);
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records", id);
    const char *body =
        "{\"rank\": 0, \"batch_seq\": 0, \"records\": ["
        "{\"seq\": 0, \"step\": 1, \"name\": \"mx.w\", \"dtype\": \"f8e4m3\", \"level\": \"module\", \"nbytes\": 64, "
        "\"fp\": \"00000000000000aa\", \"chunk_bytes\": 4096, \"scales\": {\"dtype\": \"e8m0\", \"shape\": [2], "
        "\"nbytes\": 2, \"fp\": \"00000000000000bb\"}},"
        "{\"seq\": 1, \"step\": 1, \"name\": \"w\", \"dtype\": \"f32\", \"nbytes\": 16, \"fp\": \"00000000000000cc\", "
        "\"shard\": {\"offset\": 16, \"total\": 32, \"acc\": \"00000000000000dd\"}},"
        "{\"seq\": 2, \"step\": 1, \"name\": \"data_pos\", \"dtype\": \"u64\", \"nbytes\": 8, "
        "\"fp\": \"00000000000000ee\", \"value_bits\": \"0000000000000009\", \"state\": \"saved\"}]}";
    assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
    const char *bad[] = {
        "{\"rank\": 0, \"batch_seq\": 1, \"records\": [{\"seq\": 3, \"step\": 1, \"name\": \"x\", \"fp\": "
        "\"00000000000000ee\", \"state\": \"loaded\"}]}",
        "{\"rank\": 0, \"batch_seq\": 1, \"records\": [{\"seq\": 3, \"step\": 1, \"name\": \"x\", \"nbytes\": 8, "
        "\"fp\": \"00000000000000ee\", \"shard\": {\"offset\": 4, \"total\": 32, \"acc\": \"0000000000000001\"}}]}",
        "{\"rank\": 0, \"batch_seq\": 1, \"records\": [{\"seq\": 3, \"step\": 1, \"name\": \"x\", \"fp\": "
        "\"00000000000000ee\", \"scales\": {\"dtype\": \"f128\", \"nbytes\": 1, \"fp\": \"0000000000000001\"}}]}",
    };
    const char *want[] = {"unknown state", "not a multiple of 8", "bad scales"};
    for (int i = 0; i < 3; i++) {
        json_t *e = NULL;
        assert_int_equal(it_call(&srv, "POST", path, bad[i], NULL, &e), 400);
        const char *what = json_string_value(json_object_get(e, "error"));
        const char *detail = json_string_value(json_object_get(e, "detail"));
        if (!(what && strstr(what, want[i])) && !(detail && strstr(detail, want[i])))
            fail_msg("case %d: %s / %s", i, what ? what : "?", detail ? detail : "?");
        json_decref(e);
    }
    /* a binary record carrying a call site and a shard in its one extension block, on a saved state entry */
    h_batch b = {0};
    h_batch_begin(&b, id, 0, 2);
    rec_ext x = {0};
    unsigned char ext[REC_EXT_ENCODED_MAX];
    x.has_shard = 1;
    x.shard_offset = 8;
    x.shard_total = 24;
    x.shard_acc = 0x77;
    rec_record r = {.seq = 3,
                    .step = 1,
                    .name = "g",
                    .name_len = 1,
                    .level = LS_LEVEL_COLLECTIVE,
                    .dtype = LS_F32,
                    .ndim = 1,
                    .shape = {6},
                    .nbytes = 16,
                    .fp = 0xff,
                    .flags = REC_STATE_SAVED,
                    .site = {.offset = 0x1c0,
                             .function_offset = 0x40,
                             .module = "train",
                             .module_len = 5,
                             .function = "save_ckpt",
                             .function_len = 9}};
    r.ext_len = (uint16_t)rec_ext_encode(&x, ext);
    r.ext = ext;
    h_batch_add(&b, &r);
    char url[512];
    snprintf(url, sizeof(url), "%s%s", srv.base, path);
    assert_int_equal(h_http("POST", url, "application/x-lockstep", b.buf, b.len, NULL, NULL), 200);
    h_batch_free(&b);
    json_t *o = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=0", id);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    json_t *items = json_object_get(o, "items");
    assert_int_equal(json_array_size(items), 4);
    json_t *g = json_array_get(items, 3);
    assert_string_equal(json_string_value(json_object_get(g, "state")), "saved");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(g, "shard"), "offset")), 8);
    assert_string_equal(json_string_value(json_object_get(json_object_get(g, "site"), "function")), "save_ckpt");
    assert_string_equal(json_string_value(json_object_get(json_object_get(g, "site"), "module")), "train");
    /* stored as its frame, in a segment of the saved state entries (kind 2: the restore checks' index), with the
     * site and the shard in its one extension block (the site's function once) */
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PGresult *q = PQexec(
        c,
        "SELECT n, (length(encode(frames, 'hex')) - length(replace(encode(frames, 'hex'), "
        "encode('save_ckpt'::bytea, 'hex'), ''))) / 18 "
        "FROM record_frames WHERE rank = 0 AND kind = 2 AND step = 1 AND position('save_ckpt'::bytea IN frames) > 0");
    assert_int_equal(PQresultStatus(q), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(q), 1);
    assert_string_equal(PQgetvalue(q, 0, 0), "1");
    assert_string_equal(PQgetvalue(q, 0, 1), "1");
    PQclear(q);
    PQfinish(c);
    json_t *mx = json_array_get(items, 0), *w = json_array_get(items, 1), *dp = json_array_get(items, 2);
    assert_int_equal(json_integer_value(json_object_get(mx, "chunk_bytes")), 4096);
    assert_string_equal(json_string_value(json_object_get(json_object_get(mx, "scales"), "dtype")), "e8m0");
    assert_string_equal(json_string_value(json_object_get(json_object_get(mx, "scales"), "fp")), "00000000000000bb");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(w, "shard"), "offset")), 16);
    assert_string_equal(json_string_value(json_object_get(json_object_get(w, "shard"), "acc")), "00000000000000dd");
    assert_string_equal(json_string_value(json_object_get(dp, "state")), "saved");
    assert_true(json_object_get(mx, "site") == NULL && json_object_get(dp, "shard") == NULL);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restore_verified),
        cmocka_unit_test(test_restore_difference_first),
        cmocka_unit_test(test_restore_against_records),
        cmocka_unit_test(test_logical_across_rank_counts),
        cmocka_unit_test(test_fields_round_trip),
        cmocka_unit_test(test_resume_registered_at_zero),
        cmocka_unit_test(test_forgotten_optimizer_counted),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
