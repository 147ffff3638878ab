/* test_cmp_marks.c - the marks of the comparison's memory (lockstep_cmp_marks, sql/functions/compare.sql): which ranks
 * the database takes, which it returns as marked without writing (marked as far already, by a look), and which it
 * leaves to the look. On a real PostgreSQL with lockstepd's schema. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sql/sqlt.h"

/* marks - memory's marks of group `g`: steps from[i]..upto[i] of rank i (0 and 1) found equal over both runs a and b,
 * which it counted 100 records each on; the database's answer as "rank:state ..." in rank order. */
static char *marks(const char *g, const char *a, const char *b, const char *from, const char *upto, char *out,
                   size_t cap)
{
    char keys[160];
    snprintf(keys, sizeof(keys), "{%s,%s,%s,%s}", a, b, a, b);
    const char *p[] = {g, from, upto, keys};
    return sqlt_value(sqlt_c,
                      "SELECT coalesce(string_agg(r_rank || ':' || r_state, ' ' ORDER BY r_rank), '') "
                      "FROM lockstep_cmp_marks($1, '{0,1}', $2::bigint[], $3::bigint[], '{0,0,1,1}', $4::bigint[], "
                      "'{100,100,100,100}')",
                      4, p, out, cap);
}

/* mark_of - rank r's mark of group g as "checked_upto/target". */
static char *mark_of(const char *g, const char *r, char *out, size_t cap)
{
    const char *p[] = {g, r};
    return sqlt_value(sqlt_c,
                      "SELECT checked_upto || '/' || target FROM group_checks WHERE twin_group = $1 AND rank = $2::int",
                      2, p, out, cap);
}

/* pair - two runs a and b of group g; with `ranks` (an int[] literal), both at step 20 on those ranks, 100 records
 * each. */
static void pair(const char *g, char *a, char *b, size_t cap, const char *ranks)
{
    sqlt_new_run(g, a, cap);
    sqlt_new_run(g, b, cap);
    const char *pk[] = {a, b, ranks};
    if (ranks)
        sqlt_do(sqlt_c,
                "INSERT INTO rank_progress (run_key, rank, min_step, max_step, max_seq, n_records) "
                "SELECT k, r, 0, 20, 99, 100 FROM unnest(ARRAY[$1, $2]::bigint[]) k, unnest($3::int[]) r",
                3, pk);
}

/* A rank with no mark yet is marked from the runs' start; a rank a look already marked further is returned as marked
 * and its mark left as it is (it went to the look again before, which found nothing new); one whose mark has other
 * members, or waits, goes to the look. */
static void test_ahead(void **state)
{
    (void)state;
    char a[32], b[32], v[128];
    pair("cm-a", a, b, sizeof(a), "{0,1}");
    const char *pk[] = {a, b};
    sqlt_do(sqlt_c,
            "INSERT INTO group_checks (twin_group, rank, checked_upto, target, members, checked_at, waiting) "
            "VALUES ('cm-a', 0, 20, 20, ARRAY[$1, $2]::bigint[], now(), false)",
            2, pk);
    assert_string_equal(marks("cm-a", a, b, "{11,0}", "{15,15}", v, sizeof(v)), "0:0 1:0");
    assert_string_equal(mark_of("cm-a", "0", v, sizeof(v)), "20/20"); /* not moved back */
    assert_string_equal(mark_of("cm-a", "1", v, sizeof(v)), "15/15");

    sqlt_do(sqlt_c, "UPDATE group_checks SET waiting = true WHERE twin_group = 'cm-a' AND rank = 0", 0, NULL);
    assert_string_equal(marks("cm-a", a, b, "{16,16}", "{18,18}", v, sizeof(v)), "1:0");
    sqlt_do(sqlt_c,
            "UPDATE group_checks SET waiting = false, members = ARRAY[$1]::bigint[] WHERE twin_group = 'cm-a' "
            "AND rank = 0",
            1, pk);
    assert_string_equal(marks("cm-a", a, b, "{16,19}", "{18,19}", v, sizeof(v)), "1:0");
    assert_string_equal(mark_of("cm-a", "0", v, sizeof(v)), "20/20");
    assert_string_equal(mark_of("cm-a", "1", v, sizeof(v)), "19/19");
}

/* A rank marked as far already, by a look before a run of its group ended (or the rank in one), goes to the look: the
 * twin status counts it unchecked until a comparison marks it after the end, and the look that end asked for may have
 * found the lock held by this statement and left it. */
static void test_ahead_after_end(void **state)
{
    (void)state;
    char a[32], b[32], v[128];
    pair("cm-e", a, b, sizeof(a), "{0,1}");
    const char *pk[] = {a, b};
    sqlt_do(sqlt_c,
            "INSERT INTO group_checks (twin_group, rank, checked_upto, target, members, checked_at, waiting) "
            "SELECT 'cm-e', r, 20, 20, ARRAY[$1, $2]::bigint[], now() - interval '1 minute', false "
            "FROM generate_series(0, 1) r",
            2, pk);
    assert_string_equal(marks("cm-e", a, b, "{11,11}", "{15,15}", v, sizeof(v)), "0:0 1:0");

    /* rank 0 of run b ended after the marks: rank 0 to the look, rank 1 still marked */
    sqlt_do(sqlt_c, "INSERT INTO rank_ends (run_key, rank, exit_code, ended_at) VALUES ($1::bigint, 0, 0, now())", 1,
            pk + 1);
    assert_string_equal(marks("cm-e", a, b, "{11,11}", "{15,15}", v, sizeof(v)), "1:0");
    /* then run a ended: both to the look */
    sqlt_do(sqlt_c, "UPDATE runs SET ended_at = now() WHERE run_key = $1::bigint", 1, pk);
    assert_string_equal(marks("cm-e", a, b, "{11,11}", "{15,15}", v, sizeof(v)), "");
    /* a look marked them after the ends: marked as far again, nothing written */
    sqlt_do(sqlt_c, "UPDATE group_checks SET checked_at = clock_timestamp() WHERE twin_group = 'cm-e'", 0, NULL);
    assert_string_equal(marks("cm-e", a, b, "{11,11}", "{15,15}", v, sizeof(v)), "0:0 1:0");
    assert_string_equal(mark_of("cm-e", "0", v, sizeof(v)), "20/20");
}

/* steps - a batch of rank 0 of run `key` with a step digest of one record for each step of `steps` (one block), in a
 * statement of the batch write (lockstep_store_batches). */
static void steps(const char *key, const char *bseq, const char *steps_lit)
{
    const char *p[] = {key, bseq, steps_lit};
    sqlt_do(sqlt_c,
            "SELECT * FROM lockstep_store_batches(ARRAY[$1]::bigint[], '{0}', ARRAY[$2]::bigint[], '{0}', "
            "'{false}', ARRAY[(SELECT min(s) FROM unnest($3::bigint[]) s)], "
            "ARRAY[(SELECT max(s) FROM unnest($3::bigint[]) s)], '{0}', ARRAY[cardinality($3::bigint[])]::bigint[], "
            "ARRAY[(SELECT min(s) FROM unnest($3::bigint[]) s)], '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{1}', "
            "'{1}', ARRAY[cardinality($3::bigint[])], '{false}', $3::bigint[], "
            "array_fill(1, ARRAY[cardinality($3::bigint[])]), array_fill(7::bigint, ARRAY[cardinality($3::bigint[])]), "
            "array_fill(NULL::bigint, ARRAY[cardinality($3::bigint[])]), "
            "array_fill(NULL::bytea, ARRAY[cardinality($3::bigint[])]), '{}', '{}', '{}', '{}')",
            3, p);
}

/* checks - the marks of group cm-l as "logical rank0" (checked_upto of rank -1, then of rank 0). */
static char *checks(char *out, size_t cap)
{
    return sqlt_value(sqlt_c,
                      "SELECT string_agg(checked_upto::text, ' ' ORDER BY rank) FROM group_checks "
                      "WHERE twin_group = 'cm-l'",
                      0, NULL, out, cap);
}

/* The batch write's late-data rewind (sql/functions/write.sql): a batch that brings a step its run had reached on the
 * rank moves the rank's mark and the group's logical mark (rank -1) back before it; one whose steps all come after
 * what its run had there asks nothing of the rank's mark (a comparison marks no further than each run's progress:
 * here a mark set past it by hand shows the write did not ask), while the logical mark still follows; a run's first
 * batch on the rank counts as late. */
static void test_late_rewind(void **state)
{
    (void)state;
    char a[32], b[32], v[128];
    pair("cm-l", a, b, sizeof(a), NULL);
    steps(a, "1", "{0,1,2,3,4,5,6,7,8,9}");
    sqlt_do(sqlt_c,
            "INSERT INTO group_checks (twin_group, rank, checked_upto, target, members, checked_at, waiting) "
            "VALUES ('cm-l', -1, 9, 9, '{}', now(), false), ('cm-l', 0, 9, 9, '{}', now(), false)",
            0, NULL);
    steps(a, "2", "{10,11,12,13,14,15,16,17,18,19}");
    assert_string_equal(checks(v, sizeof(v)), "9 9");
    const char *pk[] = {a};
    assert_string_equal(sqlt_value(sqlt_c, "SELECT prior_max_step FROM rank_progress WHERE run_key = $1 AND rank = 0",
                                   1, pk, v, sizeof(v)),
                        "9");
    steps(a, "3", "{5}"); /* late */
    assert_string_equal(checks(v, sizeof(v)), "4 4");

    sqlt_do(sqlt_c, "UPDATE group_checks SET checked_upto = 100 WHERE twin_group = 'cm-l'", 0, NULL);
    steps(a, "4", "{20,21,22}"); /* past run a's 19 on rank 0 */
    assert_string_equal(checks(v, sizeof(v)), "19 100");
    steps(b, "1", "{25,26}"); /* run b's first batch on rank 0 */
    assert_string_equal(checks(v, sizeof(v)), "19 24");
}

/* Ranks that do not start at 0 and leave gaps (5 and 7 here, as a chunk of a large group does), one of them busy: a
 * session holds rank 7's lock, shared, as a committing batch does. Rank 5 is marked, rank 7 put off to the next flush
 * (r_state 1) and its mark not written; once the lock is free, it is marked as well. */
static void test_busy_among_sparse_ranks(void **state)
{
    (void)state;
    char a[32], b[32], v[128], info[512];
    pair("cm-s", a, b, sizeof(a), "{5,7}");
    snprintf(info, sizeof(info), "host=%s port=%s dbname=%s user=%s", PQhost(sqlt_c), PQport(sqlt_c), PQdb(sqlt_c),
             PQuser(sqlt_c));
    PGconn *other = PQconnectdb(info);
    assert_int_equal(PQstatus(other), CONNECTION_OK);
    sqlt_value(other, "SELECT pg_advisory_lock_shared(lockstep_check_key('cm-s', 7))", 0, NULL, v, sizeof(v));

    char keys[160];
    snprintf(keys, sizeof(keys), "{%s,%s,%s,%s}", a, b, a, b);
    const char *p[] = {keys};
    const char *sql = "SELECT coalesce(string_agg(r_rank || ':' || r_state, ' ' ORDER BY r_rank), '') "
                      "FROM lockstep_cmp_marks('cm-s', '{5,7}', '{0,0}', '{15,15}', '{5,5,7,7}', $1::bigint[], "
                      "'{100,100,100,100}')";
    assert_string_equal(sqlt_value(sqlt_c, sql, 1, p, v, sizeof(v)), "5:0 7:1");
    assert_string_equal(mark_of("cm-s", "5", v, sizeof(v)), "15/15");
    assert_string_equal(sqlt_value(sqlt_c, "SELECT count(*) FROM group_checks WHERE twin_group = 'cm-s' AND rank = 7",
                                   0, NULL, v, sizeof(v)),
                        "0");

    /* released by the session holding it, before the next call: a closed session's backend lets its locks go as it
     * exits, which may come after the next statement (the test failed so on a loaded machine) */
    assert_string_equal(
        sqlt_value(other, "SELECT pg_advisory_unlock_shared(lockstep_check_key('cm-s', 7))", 0, NULL, v, sizeof(v)),
        "t");
    PQfinish(other);
    assert_string_equal(sqlt_value(sqlt_c, sql, 1, p, v, sizeof(v)), "5:0 7:0");
    assert_string_equal(mark_of("cm-s", "7", v, sizeof(v)), "15/15");
}

/* The rule the twin status, the sweep and memory's marks share (lockstep_checked_before_end): a check made before the
 * rank's end or a run's end is not finished; one made after both, or where neither is known, is. */
static void test_checked_before_end(void **state)
{
    (void)state;
    static const struct {
        const char *checked, *rank_end, *run_end, *want;
    } t[] = {
        {"2026-01-01 10:00", NULL, NULL, "f"},
        {"2026-01-01 10:00", "2026-01-01 10:01", NULL, "t"},
        {"2026-01-01 10:00", NULL, "2026-01-01 10:01", "t"},
        {"2026-01-01 10:00", "2026-01-01 09:59", "2026-01-01 10:01", "t"},
        {"2026-01-01 10:00", "2026-01-01 09:59", "2026-01-01 09:58", "f"},
        {"2026-01-01 10:00", "2026-01-01 10:00", NULL, "f"}, /* the same instant: the check saw the end */
        {"-infinity", NULL, "2026-01-01 10:00", "t"},        /* group_checks' default: no check made yet */
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char v[8];
        const char *p[] = {t[i].checked, t[i].rank_end, t[i].run_end};
        sqlt_value(sqlt_c, "SELECT lockstep_checked_before_end($1::timestamptz, $2::timestamptz, $3::timestamptz)", 3,
                   p, v, sizeof(v));
        if (strcmp(v, t[i].want))
            fail_msg("row %zu: %s, %s, %s gives %s, not %s", i, t[i].checked, t[i].rank_end ? t[i].rank_end : "NULL",
                     t[i].run_end ? t[i].run_end : "NULL", v, t[i].want);
    }
}

/* test_room_for_updates - a rank's progress and its mark are updated in place (migration 035: each page of
 * rank_progress and group_checks keeps room for new versions): ten ranks' rows, among a thousand written together,
 * updated once in one transaction are ten heap-only updates (no new index entry), as a batch's progress or a flush's
 * marks are. */
static void test_room_for_updates(void **state)
{
    (void)state;
    char key[32], v[64];
    sqlt_new_run("room", key, sizeof(key));
    const char *p[] = {key};
    sqlt_do(sqlt_c,
            "INSERT INTO rank_progress (run_key, rank, min_step, max_step, max_seq, n_records) "
            "SELECT $1, r, 0, 0, 0, 0 FROM generate_series(2, 1001) r",
            1, p);
    sqlt_do(
        sqlt_c,
        "INSERT INTO group_checks (twin_group, rank, checked_upto) SELECT 'room', r, 0 FROM generate_series(0, 999) r",
        0, NULL);
    /* the counts are the session's not yet reported to the statistics: the updates' are the difference */
    static const char hot[] = "SELECT pg_stat_get_xact_tuples_hot_updated('rank_progress'::regclass) || ' ' || "
                              "pg_stat_get_xact_tuples_hot_updated('group_checks'::regclass)";
    char before[64];
    sqlt_do(sqlt_c, "BEGIN", 0, NULL);
    sqlt_value(sqlt_c, hot, 0, NULL, before, sizeof(before));
    sqlt_do(sqlt_c,
            "UPDATE rank_progress SET max_step = max_step + 1, updated_at = clock_timestamp() "
            "WHERE run_key = $1 AND rank BETWEEN 2 AND 11",
            1, p);
    sqlt_do(sqlt_c, "UPDATE group_checks SET checked_upto = 1 WHERE twin_group = 'room' AND rank < 10", 0, NULL);
    sqlt_value(sqlt_c, hot, 0, NULL, v, sizeof(v));
    sqlt_do(sqlt_c, "COMMIT", 0, NULL);
    long b1 = 0, b2 = 0, a1 = 0, a2 = 0;
    assert_int_equal(sscanf(before, "%ld %ld", &b1, &b2), 2);
    assert_int_equal(sscanf(v, "%ld %ld", &a1, &a2), 2);
    assert_int_equal(a1 - b1, 10);
    assert_int_equal(a2 - b2, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ahead),
        cmocka_unit_test(test_ahead_after_end),
        cmocka_unit_test(test_late_rewind),
        cmocka_unit_test(test_busy_among_sparse_ranks),
        cmocka_unit_test(test_checked_before_end),
        cmocka_unit_test(test_room_for_updates),
    };
    return cmocka_run_group_tests(tests, sqlt_setup, sqlt_teardown);
}
