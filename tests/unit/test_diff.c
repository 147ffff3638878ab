/* test_diff.c - the trace comparison behind `lockstep diff`: one case per kind of divergence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/diff.h"
#include "common/fsutil.h"
#include "common/lsfp1.h"

/* A run under construction: for each rank, steps [from, to) of three records
 * ("loss" metric, "w" tensor twice), with edits applied on the way. */
typedef struct edit {
    int rank;
    int64_t step;
    const char *what; /* "value", "drop", "dtype", "shape", "extra"; "saved", "restored", "restored-other": a state
                         entry `name` of step `step` (a restored one before the run's first step) */
    const char *name;
} edit;

static char root[256];

/* state_entry - frame edit `ed` as a state entry (its value a function of its name, one more for
 * "restored-other") into `out`; returns the bytes written. */
static size_t state_entry(const edit *ed, uint64_t seq, unsigned char *out)
{
    rec_record r;
    memset(&r, 0, sizeof(r));
    r.seq = seq;
    r.step = ed->step;
    r.name = ed->name;
    r.name_len = (uint16_t)strlen(ed->name);
    r.dtype = LS_U64;
    r.nbytes = 8;
    r.value = 1000 * strlen(ed->name) + (unsigned char)ed->name[0] + (strcmp(ed->what, "restored-other") == 0);
    r.fp = fp_lsfp1(&r.value, 8);
    r.flags = (uint8_t)(REC_HAS_VALUE | (ed->what[0] == 's' ? REC_STATE_SAVED : REC_STATE_RESTORED));
    return rec_encode(&r, out);
}

static void write_run(const char *sub, int ranks, int64_t from, int64_t to, const edit *edits, int n_edits,
                      char *out_dir)
{
    snprintf(out_dir, 512, "%s/%s", root, sub);
    assert_int_equal(fs_mkdir_p(out_dir), 0);
    for (int rank = 0; rank < ranks; rank++) {
        unsigned char *buf = malloc(1 << 20);
        rec_header h;
        memset(&h, 0, sizeof(h));
        h.kind = REC_KIND_TRACE;
        h.rank = (uint32_t)rank;
        snprintf(h.run_id, sizeof(h.run_id), "%s", sub);
        size_t len = rec_header_encode(&h, buf);
        uint64_t seq = 0;
        for (int e = 0; e < n_edits; e++) /* restored blocks come first: the run loads, then trains */
            if (edits[e].rank == rank && strncmp(edits[e].what, "restored", 8) == 0)
                len += state_entry(&edits[e], seq++, buf + len);
        for (int64_t step = from; step < to; step++) {
            const char *names[3] = {"loss", "w", "w"};
            for (int k = 0; k < 3; k++) {
                rec_record r;
                memset(&r, 0, sizeof(r));
                r.step = step;
                r.name = names[k];
                r.name_len = (uint16_t)strlen(names[k]);
                r.occurrence = k == 2 ? 1 : 0;
                double v = 1.0 / (double)(step + 1) + rank;
                if (k == 0) {
                    r.level = LS_LEVEL_METRIC;
                    r.dtype = LS_F64;
                    r.nbytes = 8;
                    r.flags = REC_HAS_VALUE;
                } else {
                    r.level = LS_LEVEL_MODULE;
                    r.dtype = LS_F32;
                    r.ndim = 1;
                    r.shape[0] = 2;
                    r.nbytes = 8;
                    v += k;
                }
                int drop = 0;
                for (int e = 0; e < n_edits; e++) {
                    const edit *ed = &edits[e];
                    if (ed->rank != rank || ed->step != step || strcmp(ed->name, names[k]) != 0 || (k == 2))
                        continue;
                    if (strcmp(ed->what, "value") == 0) {
                        uint64_t bits;
                        memcpy(&bits, &v, 8);
                        bits ^= 1; /* one ulp */
                        memcpy(&v, &bits, 8);
                    } else if (strcmp(ed->what, "drop") == 0) {
                        drop = 1;
                    } else if (strcmp(ed->what, "dtype") == 0) {
                        r.dtype = LS_BF16;
                    } else if (strcmp(ed->what, "shape") == 0) {
                        r.shape[0] = 4;
                    }
                }
                if (drop)
                    continue;
                memcpy(&r.value, &v, 8);
                r.fp = fp_lsfp1(&v, 8);
                r.seq = seq++;
                len += rec_encode(&r, buf + len);
                for (int e = 0; e < n_edits; e++) {
                    const edit *ed = &edits[e];
                    if (ed->rank == rank && ed->step == step && strcmp(ed->what, "extra") == 0 && k == 0) {
                        rec_record x = r;
                        x.name = ed->name;
                        x.name_len = (uint16_t)strlen(ed->name);
                        x.seq = seq++;
                        len += rec_encode(&x, buf + len);
                    }
                }
            }
            for (int e = 0; e < n_edits; e++) /* a saved block after its step's records: the checkpoint */
                if (edits[e].rank == rank && edits[e].step == step && strcmp(edits[e].what, "saved") == 0)
                    len += state_entry(&edits[e], seq++, buf + len);
        }
        char path[600];
        snprintf(path, sizeof(path), "%s/rank-%05d.lstrace", out_dir, rank);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(buf, 1, len, f), len);
        fclose(f);
        free(buf);
    }
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/ls-test-diff-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* compare - load two runs and diff them. */
static void compare(const char *a, const char *b, int overlap, diff_result *res, td_run *ra, td_run *rb)
{
    char why[600];
    if (td_load(ra, a, why, sizeof(why)) < 0 || td_load(rb, b, why, sizeof(why)) < 0)
        fail_msg("load: %s", why);
    assert_int_equal(diff_runs(ra, rb, overlap, res), 0);
}

static void done(diff_result *res, td_run *ra, td_run *rb)
{
    diff_release(res);
    td_release(ra);
    td_release(rb);
}

static void test_identical(void **state)
{
    (void)state;
    char a[512], b[512];
    write_run("a", 3, 0, 20, NULL, 0, a);
    write_run("b", 3, 0, 20, NULL, 0, b);
    diff_result res;
    td_run ra, rb;
    compare(a, b, 0, &res, &ra, &rb);
    assert_false(res.diverged);
    assert_int_equal(res.n_ranks, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(res.ranks[i].kind, DIFF_MATCH);
        assert_int_equal(res.ranks[i].compared, 60);
    }
    done(&res, &ra, &rb);
}

static void test_metric_differs(void **state)
{
    (void)state;
    char a[512], b[512];
    /* rank 1 differs from step 7 on; rank 2 later, at step 12 */
    edit e[] = {{1, 7, "value", "loss"}, {1, 8, "value", "loss"}, {2, 12, "value", "w"}};
    write_run("a", 3, 0, 20, NULL, 0, a);
    write_run("b", 3, 0, 20, e, 3, b);
    diff_result res;
    td_run ra, rb;
    compare(a, b, 0, &res, &ra, &rb);
    assert_true(res.diverged);
    assert_int_equal(res.first_step, 7);
    assert_int_equal(res.ranks[0].kind, DIFF_MATCH);
    const diff_rank *d = &res.ranks[1];
    assert_int_equal(d->kind, DIFF_CONTENT);
    assert_int_equal(d->step, 7);
    assert_memory_equal(d->a->name, "loss", 4);
    assert_int_equal(d->a->seq, 21);
    assert_true(d->has_ulp);
    assert_int_equal(d->ulp, 1);
    assert_int_equal(res.ranks[2].kind, DIFF_CONTENT);
    assert_int_equal(res.ranks[2].step, 12);
    assert_memory_equal(res.ranks[2].a->name, "w", 1);
    assert_int_equal(res.ranks[2].a->occurrence, 0);
    done(&res, &ra, &rb);
}

static void test_missing_and_extra(void **state)
{
    (void)state;
    char a[512], b[512];
    edit eb[] = {{0, 4, "drop", "w"}, {1, 9, "extra", "debug.probe"}};
    write_run("a", 2, 0, 10, NULL, 0, a);
    write_run("b", 2, 0, 10, eb, 2, b);
    diff_result res;
    td_run ra, rb;
    compare(a, b, 0, &res, &ra, &rb);
    assert_int_equal(res.first_step, 4);
    assert_int_equal(res.ranks[0].kind, DIFF_MISSING);
    assert_int_equal(res.ranks[0].step, 4);
    assert_null(res.ranks[0].b);
    assert_int_equal(res.ranks[1].kind, DIFF_EXTRA);
    assert_int_equal(res.ranks[1].step, 9);
    assert_memory_equal(res.ranks[1].b->name, "debug.probe", 11);
    done(&res, &ra, &rb);

    /* A run that stopped early: B lacks everything from step 6 on. */
    write_run("c", 2, 0, 6, NULL, 0, b);
    compare(a, b, 0, &res, &ra, &rb);
    assert_int_equal(res.first_step, 6);
    assert_int_equal(res.ranks[0].kind, DIFF_MISSING);
    done(&res, &ra, &rb);
}

static void test_extra_rank(void **state)
{
    (void)state;
    char a[512], b[512];
    write_run("a", 2, 0, 5, NULL, 0, a);
    write_run("b", 3, 0, 5, NULL, 0, b);
    diff_result res;
    td_run ra, rb;
    compare(a, b, 0, &res, &ra, &rb);
    assert_true(res.diverged);
    assert_int_equal(res.n_ranks, 3);
    assert_int_equal(res.ranks[2].kind, DIFF_ONLY_B);
    assert_int_equal(res.ranks[2].rank, 2);
    done(&res, &ra, &rb);
    compare(b, a, 0, &res, &ra, &rb);
    assert_int_equal(res.ranks[2].kind, DIFF_ONLY_A);
    done(&res, &ra, &rb);
}

static void test_dtype_and_shape(void **state)
{
    (void)state;
    char a[512], b[512];
    edit e[] = {{0, 3, "dtype", "w"}, {1, 2, "shape", "w"}};
    write_run("a", 2, 0, 6, NULL, 0, a);
    write_run("b", 2, 0, 6, e, 2, b);
    diff_result res;
    td_run ra, rb;
    compare(a, b, 0, &res, &ra, &rb);
    assert_int_equal(res.ranks[0].kind, DIFF_DTYPE);
    assert_int_equal(res.ranks[0].step, 3);
    assert_int_equal(res.ranks[1].kind, DIFF_SHAPE);
    assert_int_equal(res.ranks[1].step, 2);
    assert_int_equal(res.first_step, 2);
    done(&res, &ra, &rb);
}

/* A run resumed at step 8 matches on the steps both hold; without
 * --overlap its missing early steps are a divergence. */
static void test_overlap(void **state)
{
    (void)state;
    char a[512], b[512];
    write_run("full", 2, 0, 20, NULL, 0, a);
    write_run("resumed", 2, 8, 20, NULL, 0, b);
    diff_result res;
    td_run ra, rb;
    compare(a, b, 1, &res, &ra, &rb);
    assert_false(res.diverged);
    assert_int_equal(res.overlap_lo, 8);
    assert_int_equal(res.overlap_hi, 19);
    assert_int_equal(res.ranks[0].compared, 36);
    done(&res, &ra, &rb);
    compare(a, b, 0, &res, &ra, &rb);
    assert_true(res.diverged);
    assert_int_equal(res.ranks[0].kind, DIFF_MISSING);
    assert_int_equal(res.first_step, 0);
    done(&res, &ra, &rb);

    /* A divergence inside the overlap is still found, at the right step. */
    edit e[] = {{1, 15, "value", "loss"}};
    write_run("resumed2", 2, 8, 20, e, 1, b);
    compare(a, b, 1, &res, &ra, &rb);
    assert_true(res.diverged);
    assert_int_equal(res.first_step, 15);
    assert_int_equal(res.ranks[1].kind, DIFF_CONTENT);
    done(&res, &ra, &rb);
}

static void test_restores(void **state)
{
    (void)state;
    char a[512], b[512];
    edit saved[] = {
        {0, 7, "saved", "params"}, {0, 7, "saved", "momentum"}, {1, 7, "saved", "params"}, {1, 7, "saved", "momentum"}};
    edit good[] = {{0, 7, "restored", "params"},
                   {0, 7, "restored", "momentum"},
                   {1, 7, "restored", "params"},
                   {1, 7, "restored", "momentum"}};
    edit forgot[] = {{0, 7, "restored", "params"}, {0, 7, "restored", "momentum"}, {1, 7, "restored", "params"}};
    edit other[] = {{0, 7, "restored-other", "params"}, {0, 7, "restored", "momentum"}};
    edit late[] = {{0, 7, "restored", "params"}, {0, 7, "restored", "momentum"}, {0, 9, "value", "loss"}};
    write_run("full", 2, 0, 20, saved, 4, a);
    diff_result res;
    td_run ra, rb;

    /* a good resume: state entries are no step records, and the block is verified on both ranks */
    write_run("good", 2, 8, 20, good, 4, b);
    compare(a, b, 1, &res, &ra, &rb);
    assert_false(res.diverged);
    assert_int_equal(res.overlap_lo, 8); /* the restored block's step 7 is not a step both runs hold */
    assert_int_equal(res.ranks[0].compared, 36);
    assert_int_equal(res.ranks[0].restores, 1);
    assert_int_equal(res.ranks[0].restores_same, 1);
    done(&res, &ra, &rb);

    /* rank 1 forgot its momentum: a restore difference at step 7, B restored, nothing for A */
    write_run("forgot", 2, 8, 20, forgot, 3, b);
    compare(a, b, 1, &res, &ra, &rb);
    assert_true(res.diverged);
    assert_int_equal(res.first_step, 7);
    assert_int_equal(res.ranks[0].kind, DIFF_MATCH);
    assert_int_equal(res.ranks[1].kind, DIFF_RESTORE);
    assert_int_equal(res.ranks[1].restore.status, REC_RESTORE_NOT_RESTORED);
    assert_int_equal(res.ranks[1].restored_by, 1);
    assert_non_null(res.ranks[1].a);
    assert_null(res.ranks[1].b);
    assert_memory_equal(res.ranks[1].a->name, "momentum", 8);
    done(&res, &ra, &rb);

    /* other contents; and rank 1 restored nothing at all: unverified is not a difference... */
    write_run("other", 2, 8, 20, other, 2, b);
    compare(a, b, 1, &res, &ra, &rb);
    assert_int_equal(res.ranks[0].kind, DIFF_RESTORE);
    assert_int_equal(res.ranks[0].restore.status, REC_RESTORE_DIFFERS);
    assert_int_equal(res.ranks[0].restore.diff, REC_DIFF_CONTENT);
    assert_true(res.ranks[0].has_ulp);
    assert_int_equal(res.ranks[0].ulp, 1);
    assert_int_equal(res.ranks[1].kind, DIFF_MATCH);
    assert_int_equal(res.ranks[1].restores, 0);
    done(&res, &ra, &rb);

    /* ...and the restore difference comes before a later step's, whichever run is A */
    write_run("late", 2, 8, 20, late, 3, b);
    write_run("full-other", 2, 0, 20, (edit[]){{0, 7, "saved", "params"}, {0, 7, "saved", "momentum!"}}, 2, a);
    compare(b, a, 1, &res, &ra, &rb);
    assert_int_equal(res.first_step, 7);
    assert_int_equal(res.ranks[0].kind, DIFF_RESTORE);
    assert_int_equal(res.ranks[0].restored_by, 0);
    assert_int_equal(res.ranks[0].restore.status, REC_RESTORE_NOT_RESTORED);
    done(&res, &ra, &rb);

    /* a run that restored the checkpoint of step 7 is compared from step 8, the rule lockstepd applies
     * (rec_resume_start): what it recorded of step 7 itself (an evaluation after loading) is not compared */
    write_run("full", 2, 0, 20, saved, 4, a);
    edit early[] = {{0, 7, "restored", "params"},
                    {0, 7, "restored", "momentum"},
                    {1, 7, "restored", "params"},
                    {1, 7, "restored", "momentum"},
                    {0, 7, "value", "loss"}};
    write_run("early", 2, 7, 20, early, 5, b);
    compare(a, b, 1, &res, &ra, &rb);
    assert_false(res.diverged);
    assert_int_equal(res.overlap_lo, 8);
    done(&res, &ra, &rb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_identical, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metric_differs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_and_extra, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extra_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dtype_and_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restores, setup, teardown),
    };
    return cmocka_run_group_tests_name("diff", tests, NULL, NULL);
}
