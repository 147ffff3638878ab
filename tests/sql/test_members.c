/* test_members.c - the members rule in SQL (the CTEs of lockstep_cmp_ranks, sql/functions/compare.sql) against the case
 * table of its C rule (server/rules/members.h, tests/data/members/cases.json) and the C rule itself, on a real
 * PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/rules/members.h"
#include "tests/sql/sqlt.h"

#define MAX_RUNS 8

/* add_run - run `i` of case group `g` as the table gives it, on rank 0: its progress there (and on rank 1 when it
 * recorded only elsewhere), step digests over its steps (a digest of its own: every step differs, so the first
 * look returns the first step it compares), its end (the run's status for even i, a rank end for odd i). Returns
 * its run key. */
static int64_t add_run(const char *g, int i, json_t *r)
{
    char start[32], max[32], key[32];
    snprintf(start, sizeof(start), "%" PRId64, (int64_t)json_integer_value(json_object_get(r, "start")));
    snprintf(max, sizeof(max), "%" PRId64, (int64_t)json_integer_value(json_object_get(r, "max")));
    int ended = json_is_true(json_object_get(r, "ended")), records = json_is_true(json_object_get(r, "records"));
    const char *p[] = {g, start, ended && i % 2 == 0 ? "ended" : "running"};
    sqlt_value(sqlt_c,
               "INSERT INTO runs (run_id, job_id, twin_group, ranks, start_step, status) "
               "VALUES (gen_random_uuid(), 'j', $1, 2, $2, $3) RETURNING run_key",
               3, p, key, sizeof(key));
    if (records) {
        const char *q[] = {key, start, max};
        sqlt_do(sqlt_c,
                "INSERT INTO rank_progress (run_key, rank, min_step, max_step, max_seq, n_records) "
                "VALUES ($1, 0, least($2::bigint, $3::bigint), $3, 0, 1)",
                3, q);
        sqlt_do(sqlt_c,
                "INSERT INTO step_digest_packs (run_key, rank, blk, bseq, steps, n, digest, inputs) "
                "SELECT $1, 0, lockstep_step_block(s), 0, ARRAY[s], '{1}', ARRAY[$1::bigint], '{NULL}' "
                "FROM generate_series(greatest(least($2::bigint, $3::bigint), $3::bigint - 300), $3::bigint) s",
                3, q);
    } else if (json_is_true(json_object_get(r, "any"))) {
        const char *q[] = {key};
        sqlt_do(sqlt_c,
                "INSERT INTO rank_progress (run_key, rank, min_step, max_step, max_seq, n_records) "
                "VALUES ($1, 1, 0, 0, 0, 1)",
                1, q);
    }
    if (ended && i % 2 == 1) {
        const char *q[] = {key};
        sqlt_do(sqlt_c, "INSERT INTO rank_ends (run_key, rank, exit_code) VALUES ($1, 0, 0)", 1, q);
    }
    return strtoll(key, NULL, 10);
}

/* in_set - the runs (indexes into keys) of PostgreSQL array `arr` as a bit set. */
static unsigned in_set(const char *arr, const int64_t *keys, int n)
{
    unsigned set = 0;
    for (const char *p = arr; *p;) {
        char *end;
        int64_t k = strtoll(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        for (int i = 0; i < n; i++)
            if (keys[i] == k)
                set |= 1u << i;
        p = end;
    }
    return set;
}

/* Every case of the table: the members the SQL compares are the runs the table (and the C rule) keeps, from the
 * same shared start; the rank waits while a running run is left out. */
static void test_table(void **state)
{
    (void)state;
    json_t *doc = sqlt_cases("tests/data/members/cases.json"), *cs = json_object_get(doc, "cases"), *cse;
    assert_true(json_array_size(cs) > 0);
    size_t k;
    json_array_foreach(cs, k, cse)
    {
        const char *what = json_string_value(json_object_get(cse, "what"));
        json_t *runs = json_object_get(cse, "runs"), *r;
        char g[32];
        snprintf(g, sizeof(g), "members-%zu", k);
        int64_t keys[MAX_RUNS];
        cmp_member m[MAX_RUNS];
        unsigned want = 0;
        int n = 0, want_waiting = 0;
        size_t i;
        assert_true(json_array_size(runs) <= MAX_RUNS);
        json_array_foreach(runs, i, r)
        {
            int out = *json_string_value(json_object_get(r, "out")) != 0,
                ended = json_is_true(json_object_get(r, "ended"));
            keys[n] = add_run(g, n, r);
            m[n] = (cmp_member){json_integer_value(json_object_get(r, "start")),
                                json_is_true(json_object_get(r, "records")),
                                json_is_true(json_object_get(r, "any")),
                                json_integer_value(json_object_get(r, "max")),
                                ended,
                                0,
                                NULL};
            want |= !out ? 1u << n : 0;
            want_waiting |= out && !ended;
            n++;
        }
        int64_t c_lo;
        cmp_members_pick(m, n, &c_lo);
        unsigned c_in = 0;
        for (int j = 0; j < n; j++)
            c_in |= m[j].in ? 1u << j : 0;
        if (c_in != want)
            fail_msg("%s: the C rule keeps runs 0x%x, the table 0x%x", what, c_in, want);

        const char *p[] = {g};
        PGresult *res =
            sqlt_exec(sqlt_c, "SELECT keys, from_step, waiting FROM lockstep_cmp_ranks($1, '{0}', 64)", 1, p);
        unsigned got;
        int waiting;
        if (PQntuples(res) == 1) { /* comparable: the first step it looks at is the shared start */
            got = in_set(PQgetvalue(res, 0, 0), keys, n);
            waiting = PQgetvalue(res, 0, 2)[0] == 't';
            int64_t from = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
            if (from != c_lo || from != json_integer_value(json_object_get(cse, "lo")))
                fail_msg("%s: SQL compares from step %" PRId64 ", the C rule from %" PRId64, what, from, c_lo);
        } else { /* nothing comparable: the mark says whom it would compare */
            assert_int_equal(PQntuples(res), 0);
            PGresult *mk =
                sqlt_exec(sqlt_c, "SELECT members, waiting FROM group_checks WHERE twin_group = $1 AND rank = 0", 1, p);
            if (PQntuples(mk) != 1)
                fail_msg("%s: lockstep_cmp_ranks left no mark", what);
            got = in_set(PQgetvalue(mk, 0, 0), keys, n);
            waiting = PQgetvalue(mk, 0, 1)[0] == 't';
            PQclear(mk);
        }
        PQclear(res);
        if (got != want)
            fail_msg("%s: SQL compares runs 0x%x, the rule 0x%x", what, got, want);
        if (waiting != want_waiting)
            fail_msg("%s: SQL says waiting %d, want %d (a running run left out)", what, waiting, want_waiting);
    }
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table)};
    return cmocka_run_group_tests_name("members rule in SQL", tests, sqlt_setup, sqlt_teardown);
}
