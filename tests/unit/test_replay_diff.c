/* test_replay_diff.c - two runs' records of a window compared (server/rules/replay_diff.h), from tables of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "server/rules/replay_diff.h"

/* One record of a case: run (0: a, 1: b), rank, step, seq, name, output fingerprint, input fingerprint (0: none). */
typedef struct crec {
    int run, rank;
    int64_t step;
    uint64_t seq;
    const char *name;
    uint64_t fp, in;
} crec;

#define MAX_ROWS 400

/* diff - replay_diff over the records recs[0..n) (the rows' inputs point into `ins`, the caller's, n entries). */
static rc_result diff(const crec *recs, int n, uint64_t *ins)
{
    static rc_row rows[MAX_ROWS];
    assert_true(n <= MAX_ROWS);
    memset(rows, 0, sizeof(rows));
    for (int i = 0; i < n; i++) {
        rc_row *r = &rows[i];
        r->run = recs[i].run;
        r->rank = recs[i].rank;
        r->step = recs[i].step;
        r->rec.rank = (uint32_t)recs[i].rank;
        r->rec.step = recs[i].step;
        r->rec.seq = recs[i].seq;
        r->rec.name = recs[i].name;
        r->rec.name_len = (uint16_t)strlen(recs[i].name);
        r->rec.fp = recs[i].fp;
        ins[i] = recs[i].in;
        r->rec.inputs = &ins[i];
        r->rec.n_inputs = recs[i].in ? 1 : 0;
    }
    rc_result out;
    replay_diff(rows, n, &out);
    return out;
}

/* Both runs the same: nothing differs; each record both hold counted once, records one run lacks left out. */
static void test_same(void **state)
{
    (void)state;
    const crec R[] = {
        {0, 0, 1, 1, "loss", 7, 0}, {1, 0, 1, 1, "loss", 7, 0},  {0, 1, 1, 1, "loss", 7, 0},
        {1, 1, 1, 1, "loss", 7, 0}, {1, 1, 1, 2, "extra", 9, 0}, /* traced finer: only run b holds it */
    };
    uint64_t ins[8];
    rc_result o = diff(R, 5, ins);
    assert_int_equal(o.common, 2);
    assert_int_equal(o.differs, 0);
    assert_int_equal(o.ranks_differ, 0);
    assert_int_equal(o.norigin, 0);
}

/* One rank's inputs differ first: the cause rule names it the origin; the first and the clean record. */
static void test_origin_and_clean(void **state)
{
    (void)state;
    const crec R[] = {
        /* rank 0: its inputs match, its output differs at step 6 (after rank 1's change reached it) */
        {0, 0, 5, 1, "h", 1, 10},
        {1, 0, 5, 1, "h", 1, 10},
        {0, 0, 6, 2, "h", 2, 11},
        {1, 0, 6, 2, "h", 3, 12},
        /* rank 1: inputs differ at step 5 */
        {0, 1, 5, 1, "h", 4, 20},
        {1, 1, 5, 1, "h", 5, 21},
        /* rank 2: output differs while its inputs matched, at step 5: the clean record */
        {0, 2, 5, 1, "h", 6, 30},
        {1, 2, 5, 1, "h", 8, 30},
    };
    uint64_t ins[8];
    rc_result o = diff(R, 8, ins);
    assert_int_equal(o.common, 4);
    assert_int_equal(o.differs, 1);
    assert_int_equal(o.first.step, 5);
    assert_int_equal(o.has_clean, 1);
    assert_int_equal(o.clean.rank, 2);
    assert_int_equal(o.ranks_differ, 3);
    assert_int_equal(o.cause, CAUSE_ORIGIN);
    assert_int_equal(o.norigin, 1);
    assert_int_equal(o.origin[0], 1);
}

/* Many differing records on ranks above 0: each rank weighs once, with its earliest difference, however many of its
 * records differ (more than the first 64 the comparison keeps room for). Before, every differing record of a rank
 * above 0 counted as one more rank, and past 64 the search read memory no one had written. */
static void test_each_rank_once(void **state)
{
    (void)state;
    static crec R[MAX_ROWS];
    int n = 0;
    for (int rank = 1; rank <= 2; rank++)
        for (int step = 10; step < 10 + 90; step++)
            for (int run = 0; run < 2; run++)
                R[n++] = (crec){run,
                                rank,
                                step,
                                (uint64_t)step,
                                "grad",
                                (uint64_t)(step * 4 + run + rank * 1000),
                                (uint64_t)(rank == 1 && step == 10 ? 100 + run : 100)};
    uint64_t ins[MAX_ROWS];
    rc_result o = diff(R, n, ins);
    assert_int_equal(o.common, 180);
    assert_int_equal(o.differs, 1);
    assert_int_equal(o.ranks_differ, 2);
    assert_int_equal(o.first.rank, 1);
    assert_int_equal(o.first.step, 10);
    assert_int_equal(o.cause, CAUSE_ORIGIN);
    assert_int_equal(o.norigin, 1);
    assert_int_equal(o.origin[0], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same),
        cmocka_unit_test(test_origin_and_clean),
        cmocka_unit_test(test_each_rank_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
