/* test_step_packs.c - the step digests as the batch write packs them (step_digest_packs, one row per rank and block of
 * steps: sql/migrations/029_step_digest_packs.sql) and as the views step_digests and step_consensus add them up again
 * (sql/functions/write.sql): a step's parts from several batches, or several batches of one statement, read as one
 * row with the sums the upsert they replaced wrote; a batch that crosses a block makes two packs; a replay makes
 * none. And the segments of series points that span the steps of a block (030_series_spans.sql): lockstepd's block
 * is the SQL's, and its reads find them; and the one rank-major index of the frames (034) serves a series read. On a
 * real PostgreSQL with lockstepd's schema. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/frames.h"
#include "tests/sql/sqlt.h"

/* store - one batch of rank 0 with step digests only (a group of one: lockstep_store_batches), its packs the slices
 * from..to of its step rows (packs_cons: whether each carries consensus digests); returns its reply ("" for a
 * replay). */
static void store(const char *key, const char *bseq, const char *steps, const char *n, const char *digest,
                  const char *inputs, const char *cons, const char *packs_from, const char *packs_to,
                  const char *packs_cons, char *out, size_t cap)
{
    const char *p[] = {key, bseq, steps, n, digest, inputs, cons, packs_from, packs_to, packs_cons};
    sqlt_value(
        sqlt_c,
        "SELECT CASE WHEN NOT b.duplicate THEN b.want::text END FROM lockstep_store_batches(ARRAY[$1]::bigint[], "
        "'{0}', ARRAY[$2]::bigint[], '{0}', '{false}', ARRAY[(SELECT min(s) FROM unnest($3::bigint[]) s)], "
        "ARRAY[(SELECT max(s) FROM unnest($3::bigint[]) s)], '{0}', "
        "ARRAY[(SELECT sum(c) FROM unnest($4::int[]) c)]::bigint[], "
        "ARRAY[(SELECT min(s) FROM unnest($3::bigint[], $4::int[]) x(s, c) WHERE c > 0)], '{}', '{}', '{}', "
        "'{}', '{}', '{}', '{}', array_fill(1, ARRAY[cardinality($8::int[])]), $8::int[], $9::int[], "
        "$10::boolean[], $3::bigint[], $4::int[], $5::bigint[], $6::bigint[], $7::bytea[], '{}', '{}', '{}', "
        "'{}') b",
        10, p, out, cap);
}

/* step_row - step `step` of rank 0 of run `key` through the views, as "n digest inputs cons" (cons in hex, "-" for
 * none). */
static char *step_row(const char *key, const char *step, char *out, size_t cap)
{
    const char *p[] = {key, step};
    return sqlt_value(sqlt_c,
                      "SELECT d.n || ' ' || d.digest || ' ' || coalesce(d.inputs::text, 'null') || ' ' || "
                      "coalesce((SELECT encode(c.cons, 'hex') FROM step_consensus c WHERE c.run_key = $1 AND "
                      "c.rank = 0 AND c.blk = lockstep_step_block($2) AND c.step = $2), '-') FROM step_digests d "
                      "WHERE d.run_key = $1 AND d.rank = 0 AND d.blk = lockstep_step_block($2) AND d.step = $2",
                      2, p, out, cap);
}

static char *packs(const char *key, char *out, size_t cap)
{
    const char *p[] = {key};
    return sqlt_value(sqlt_c, "SELECT count(*) FROM step_digest_packs WHERE run_key = $1", 1, p, out, cap);
}

/* test_parts_add_up - two batches bring parts of step 6 (the second's inputs not known, each with consensus
 * digests): the view adds them up, the consensus digests in the batches' order; the second batch also crosses into
 * the next block (steps 31 and 32): two packs for it. */
static void test_parts_add_up(void **state)
{
    (void)state;
    char key[32], v[256];
    sqlt_new_run("packs-a", key, sizeof(key));
    store(key, "1", "{5,6}", "{3,4}", "{16,32}", "{1,2}", "{NULL,\\\\x01}", "{1}", "{2}", "{true}", v, sizeof(v));
    assert_string_equal(v, "{}");
    store(key, "2", "{6,31,32}", "{2,1,5}", "{1,7,9}", "{NULL,4,8}", "{\\\\x02,NULL,NULL}", "{1,3}", "{2,3}",
          "{true,false}", v, sizeof(v));
    assert_string_equal(v, "{}");
    assert_string_equal(packs(key, v, sizeof(v)), "3");
    assert_string_equal(step_row(key, "5", v, sizeof(v)), "3 16 1 -");
    assert_string_equal(step_row(key, "6", v, sizeof(v)), "6 33 null 0102");
    assert_string_equal(step_row(key, "31", v, sizeof(v)), "1 7 4 -");
    assert_string_equal(step_row(key, "32", v, sizeof(v)), "5 9 8 -");
    const char *p[] = {key};
    assert_string_equal(sqlt_value(sqlt_c, "SELECT count(*) FROM step_digests WHERE run_key = $1", 1, p, v, sizeof(v)),
                        "4");
    /* a replay of the first batch adds nothing */
    store(key, "1", "{5,6}", "{3,4}", "{16,32}", "{1,2}", "{NULL,\\\\x01}", "{1}", "{2}", "{true}", v, sizeof(v));
    assert_string_equal(v, "");
    assert_string_equal(packs(key, v, sizeof(v)), "3");
    assert_string_equal(step_row(key, "6", v, sizeof(v)), "6 33 null 0102");
}

/* test_one_statement - two batches of one rank stored in one statement (a worker's group): a pack each, their parts
 * of a step added up by the views, the consensus digests in the batches' order. */
static void test_one_statement(void **state)
{
    (void)state;
    char key[32], v[256];
    sqlt_new_run("packs-b", key, sizeof(key));
    const char *p[] = {key};
    sqlt_do(sqlt_c,
            "SELECT * FROM lockstep_store_batches(ARRAY[$1, $1]::bigint[], '{0,0}', '{1,2}', '{0,0}', "
            "'{false,false}', '{7,7}', '{8,8}', '{0,0}', '{2,3}', '{7,7}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', "
            "'{1,2}', '{1,2}', '{1,3}', '{true,true}', '{7,7,8}', '{2,1,2}', '{5,3,11}', '{1,1,1}', "
            "ARRAY['\\xaa', '\\xcc', '\\xbb']::bytea[], '{}', '{}', '{}', '{}')",
            1, p);
    assert_string_equal(packs(key, v, sizeof(v)), "2");
    assert_string_equal(step_row(key, "7", v, sizeof(v)), "3 6 0 aacc");
    assert_string_equal(step_row(key, "8", v, sizeof(v)), "2 11 1 bb");
}

/* test_series_spans - segments of series points that span steps (migrations/030_series_spans.sql): lockstepd's
 * block (FRAMES_BLOCK_SHIFT) is the SQL's (lockstep_step_block, lockstep_block_first); FRAMES_SPANNING finds, for
 * each step, exactly the segments that start before it and span it; a held batch whose segment spans a step answers
 * that step's record request, and no other. */
static void test_series_spans(void **state)
{
    (void)state;
    char key[32], v[256], q[512];
    static const long long steps[] = {-65, -33, -32, -1, 0, 1, 31, 32, 33, 1000, 1099511627781LL};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        char st[32], want[80];
        snprintf(st, sizeof(st), "%lld", steps[i]);
        const char *p[] = {st};
        long long blk = steps[i] >> FRAMES_BLOCK_SHIFT;
        snprintf(want, sizeof(want), "%lld %lld", blk,
                 blk * (1LL << FRAMES_BLOCK_SHIFT)); /* no left shift of a negative */
        assert_string_equal(
            sqlt_value(sqlt_c, "SELECT lockstep_step_block($1) || ' ' || lockstep_block_first($1)", 1, p, v, sizeof(v)),
            want);
    }
    sqlt_new_run("spans", key, sizeof(key));
    const char *p[] = {key};
    sqlt_do(sqlt_c,
            "INSERT INTO record_requests (run_key, rank, step, committed_at) SELECT $1, 0, s, now() "
            "FROM unnest('{30,32}'::bigint[]) s",
            1, p);
    sqlt_do(sqlt_c,
            "SELECT * FROM lockstep_store_batches(ARRAY[$1]::bigint[], '{0}', '{1}', '{3}', '{true}', '{28}', "
            "'{38}', '{9}', '{0}', '{28}', '{1,1,1}', '{28,33,34}', '{0,5,6}', '{4,1,4}', '{1,0,1}', "
            "ARRAY['\\x00', '\\x00', '\\x00']::bytea[], '{31,NULL,38}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', "
            "'{}', '{}', '{}', '{}', '{}', '{}')",
            1, p);
    assert_string_equal(sqlt_value(sqlt_c,
                                   "SELECT string_agg(step || ':' || answered, ' ' ORDER BY step) FROM record_requests "
                                   "WHERE run_key = $1",
                                   1, p, v, sizeof(v)),
                        "30:true 32:false");
    /* segments 28-31 and 34-38 span; 33 is one step: which segments does a read of step x take? */
    for (int x = 26; x <= 40; x++) {
        char xs[16], want[32] = "";
        snprintf(xs, sizeof(xs), "%d", x);
        if (x >= 28 && x <= 31)
            snprintf(want, sizeof(want), "28");
        else if (x == 33)
            snprintf(want, sizeof(want), "33");
        else if (x >= 34 && x <= 38)
            snprintf(want, sizeof(want), "34");
        const char *px[] = {key, xs};
        snprintf(q, sizeof(q),
                 "SELECT coalesce(string_agg(step::text, ',' ORDER BY step), '') FROM record_frames "
                 "WHERE run_key = $1 AND rank = 0 AND (step = $2 OR %s)",
                 FRAMES_SPANNING("$2"));
        assert_string_equal(sqlt_value(sqlt_c, q, 2, px, v, sizeof(v)), want);
    }
}

/* test_one_rank_index - record_frames has one rank-major index, its last column the kind (migration 034): a series read
 * (a rank, a step range, kind 1) checks the kind on the index's entries, not on the rows it fetched, so a rank that
 * also streams records reads only its points' rows. */
static void test_one_rank_index(void **state)
{
    (void)state;
    char v[1024];
    assert_string_equal(sqlt_value(sqlt_c,
                                   "SELECT string_agg(indexname, ' ' ORDER BY indexname) FROM pg_indexes "
                                   "WHERE schemaname = 'public' AND tablename = 'record_frames'",
                                   0, NULL, v, sizeof(v)),
                        "record_frames_ext record_frames_rank record_frames_state");
    char key[32];
    sqlt_new_run("rank-index", key, sizeof(key));
    const char *p[] = {key};
    /* 20 ranks of 100 steps, each step a segment of records and one of series points */
    sqlt_do(sqlt_c,
            "INSERT INTO record_frames (run_key, rank, step, seq_lo, n, kind, frames) SELECT $1, r, s, 2 * s + k, 1, "
            "k, '\\x00' FROM generate_series(0, 19) r, generate_series(0, 99) s, generate_series(0, 1) k",
            1, p);
    sqlt_do(sqlt_c, "ANALYZE record_frames", 0, NULL);
    sqlt_do(sqlt_c, "SET enable_seqscan = off", 0, NULL);
    sqlt_do(sqlt_c, "SET enable_bitmapscan = off", 0, NULL);
    PGresult *r = sqlt_exec(sqlt_c,
                            "EXPLAIN SELECT frames FROM record_frames WHERE run_key = $1 AND rank = 3 AND kind = 1 "
                            "AND step >= 10 AND step <= 20",
                            1, p);
    int conds = 0, filtered = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *line = PQgetvalue(r, i, 0);
        if (strstr(line, "Index Cond:") && strstr(line, "(kind = 1)"))
            conds++;
        if (strstr(line, "Filter:"))
            filtered++;
    }
    PQclear(r);
    sqlt_do(sqlt_c, "RESET enable_seqscan", 0, NULL);
    sqlt_do(sqlt_c, "RESET enable_bitmapscan", 0, NULL);
    assert_true(conds > 0);
    assert_int_equal(filtered, 0);
    assert_string_equal(sqlt_value(sqlt_c,
                                   "SELECT count(*) || ' ' || string_agg(DISTINCT step::text, ',') FROM record_frames "
                                   "WHERE run_key = $1 AND rank = 3 AND kind = 1 AND step >= 10 AND step <= 12",
                                   1, p, v, sizeof(v)),
                        "3 10,11,12");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_add_up),
        cmocka_unit_test(test_one_statement),
        cmocka_unit_test(test_series_spans),
        cmocka_unit_test(test_one_rank_index),
    };
    return cmocka_run_group_tests(tests, sqlt_setup, sqlt_teardown);
}
