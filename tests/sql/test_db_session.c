/* test_db_session.c - the settings every connection of lockstepd's pool makes its own (server/store/db.c,
 * SESSION_SETTINGS): JIT off, whatever the server's default. On a real PostgreSQL, whose default is on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

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
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    PQfinish(plain);
    h_pg_stop(&pg);
    return 0;
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
        /* the server ends lockstepd's session: the next statement connects again */
        PQclear(PQexec(plain, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jit_off),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
