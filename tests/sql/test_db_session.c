/* test_db_session.c - the settings every connection of lockstepd's pool makes its own (server/store/db.c,
 * SESSION_SETTINGS): JIT off, whatever the server's default (on a real PostgreSQL, whose default is on); and plans
 * a connection keeps are made again as the tables grow (db_replan_first). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/store/db.h"
#include "tests/sql/sqlt.h"

static h_pg pg;
static PGconn *plain; /* a session of the test's own: the server's default */

static int setup(void **state)
{
    (void)state;
    plain = sqlt_start(&pg);
    if (!plain)
        return -1;
    db_init(pg.conninfo);
    db_register("session_jit", "SELECT current_setting('jit')");
    db_register("replan_probe", "SELECT count(*) FROM unnest($1::text[], $2::int[], $3::bigint[]) AS q(g, r, lo) "
                                "WHERE EXISTS (SELECT 1 FROM replan_t c WHERE c.g = q.g AND c.r IN (q.r, -1) "
                                "AND c.up >= q.lo)");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    PQfinish(plain);
    h_pg_stop(&pg);
    return 0;
}

/* end_sessions - the server ends lockstepd's sessions: the next statement connects again. */
static void end_sessions(void)
{
    PQclear(PQexec(plain, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"));
}

/* The server's default is JIT on (so the check below can fail); lockstepd's connection has it off, and so does the
 * connection it makes again after the server ended the first. */
static void test_jit_off(void **state)
{
    (void)state;
    char v[64], err[512];
    assert_string_equal(sqlt_value(plain, "SELECT current_setting('jit')", 0, NULL, v, sizeof(v)), "on");
    for (int round = 0; round < 2; round++) {
        PGresult *r = db_exec("session_jit", 0, NULL, err, sizeof(err));
        if (!r)
            fail_msg("the statement failed: %s", err);
        assert_string_equal(PQgetvalue(r, 0, 0), "off");
        PQclear(r);
        end_sessions();
    }
}

/* probe_plan - the plan lockstepd's connection keeps for statement replan_probe (EXPLAIN EXECUTE on it) into
 * `out`, its lines joined. */
static char *probe_plan(char *out, size_t cap)
{
    PGresult *r = PQexec(db_conn(), "EXPLAIN (COSTS OFF) EXECUTE replan_probe('{g1}', '{1}', '{5}')");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    out[0] = 0;
    for (int i = 0; i < PQntuples(r); i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s\n", PQgetvalue(r, i, 0));
    PQclear(r);
    return out;
}

/* A plan kept from a session's first call, made when the table was analyzed empty (a sequential scan of it), is
 * still that plan after 50,000 rows came (nothing analyzed them), until the connection drops its plans: then
 * PostgreSQL plans from the table's size and reads it by its key. The statement stays prepared. */
static void test_plans_made_again(void **state)
{
    (void)state;
    char plan[2048], err[512];
    db_replan_first(4);
    end_sessions(); /* lockstepd's next connection drops its plans 4 s after it is made */
    PQclear(sqlt_exec(plain,
                      "CREATE TABLE replan_t (g text, r int, up bigint, PRIMARY KEY (g, r)) "
                      "WITH (autovacuum_enabled = off)",
                      0, NULL));
    PQclear(sqlt_exec(plain, "ANALYZE replan_t", 0, NULL));
    PGresult *r = db_exec("session_jit", 0, NULL, err, sizeof(err)); /* connects again */
    if (!r)
        fail_msg("the statement failed: %s", err);
    PQclear(r);
    r = PQexec(db_conn(), "SET plan_cache_mode = force_generic_plan"); /* as lockstepd's functions keep plans */
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    r = db_exec("replan_probe", 3, (const char *const[]){"{g1}", "{1}", "{5}"}, err, sizeof(err));
    if (!r)
        fail_msg("the statement failed: %s", err);
    PQclear(r);
    PQclear(sqlt_exec(plain, "INSERT INTO replan_t SELECT 'g' || (i % 10), i, i FROM generate_series(1, 50000) i", 0,
                      NULL));
    if (!strstr(probe_plan(plan, sizeof(plan)), "Seq Scan on replan_t"))
        fail_msg("the kept plan:\n%s", plan);
    int again = 0;
    for (int i = 0; i < 40 && !again; i++) { /* 4 s after the connection was made, and its next statement */
        usleep(250000);
        again = strstr(probe_plan(plan, sizeof(plan)), "Seq Scan on replan_t") == NULL;
    }
    if (!again)
        fail_msg("the plan was not made again:\n%s", plan);
    assert_non_null(strstr(plan, "replan_t_pkey"));
    r = db_exec("replan_probe", 3, (const char *const[]){"{g1}", "{1}", "{1}"}, err, sizeof(err));
    if (!r)
        fail_msg("the statement failed after its plan was dropped: %s", err);
    assert_string_equal(PQgetvalue(r, 0, 0), "1");
    PQclear(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jit_off),
        cmocka_unit_test(test_plans_made_again),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
