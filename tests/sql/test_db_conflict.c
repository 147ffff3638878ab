/* test_db_conflict.c - a prepared statement that fails on a concurrent update (server/store/db.h's db_exec_once)
 * tells the evaluator's retry (server/store/sql.h: sql_conflicted, sql_retry) so, as a statement of SQL text does:
 * callers move to prepared statements without losing their retry. On a real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "server/store/db.h"
#include "server/store/sql.h"
#include "tests/sql/sqlt.h"

static h_pg pg;
static PGconn *other; /* a second session, which commits the concurrent update */

static int setup(void **state)
{
    (void)state;
    other = sqlt_start(&pg);
    if (!other)
        return -1;
    PQclear(PQexec(other, "CREATE TABLE conflict_t (id int PRIMARY KEY, v int)"));
    PQclear(PQexec(other, "INSERT INTO conflict_t VALUES (1, 0)"));
    db_init(pg.conninfo);
    db_register("conflict_read", "SELECT v FROM conflict_t WHERE id = 1");
    db_register("conflict_bump", "UPDATE conflict_t SET v = v + 1 WHERE id = 1");
    db_register("conflict_dup", "INSERT INTO conflict_t VALUES (1, 0)");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    PQfinish(other);
    h_pg_stop(&pg);
    return 0;
}

/* A REPEATABLE READ transaction (sql_begin, as the evaluator's) reads a row, another session updates it, and the
 * transaction's own update of it fails with a serialization failure: sql_conflicted says so and sql_retry runs it
 * again; a success, or a failure of another kind, says no conflict. */
static void test_prepared_conflict(void **state)
{
    (void)state;
    char err[512];
    assert_int_equal(sql_begin(err, sizeof(err)), 0);
    PGresult *r = db_exec_once("conflict_read", 0, NULL, err, sizeof(err));
    assert_non_null(r);
    PQclear(r);
    sqlt_do(other, "UPDATE conflict_t SET v = 10 WHERE id = 1", 0, NULL);
    r = db_exec_once("conflict_bump", 0, NULL, err, sizeof(err));
    assert_null(r);
    if (!strstr(err, "could not serialize"))
        fail_msg("the update failed otherwise: %s", err);
    assert_int_equal(err[strlen(err) - 1] != '\n', 1); /* the message as sql_query gives it */
    assert_int_equal(sql_conflicted(), 1);
    assert_int_equal(db_conflicted(), 1);
    sql_rollback();
    assert_int_equal(sql_retry(0), 1);

    r = db_exec("conflict_read", 0, NULL, err, sizeof(err));
    assert_non_null(r);
    PQclear(r);
    assert_int_equal(sql_conflicted(), 0); /* a success clears it */

    r = db_exec_once("conflict_bump", 0, NULL, err, sizeof(err)); /* a conflict again, outside a transaction: none */
    assert_non_null(r);
    PQclear(r);
    r = db_exec_once("conflict_dup", 0, NULL, err, sizeof(err));
    assert_null(r);
    assert_int_equal(sql_conflicted(), 0); /* a unique violation is no conflict */
    assert_int_equal(sql_retry(0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_prepared_conflict)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
