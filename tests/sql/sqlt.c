/* sqlt.c - what the tests/sql tier shares (tests/sql/sqlt.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "server/core/log.h"
#include "server/store/migrate.h"
#include "tests/sql/sqlt.h"

PGconn *sqlt_start(h_pg *pg)
{
    if (h_pg_start(pg) < 0)
        return NULL;
    log_set_level(LOG_WARN);
    if (db_migrate(pg->conninfo) < 0) {
        fprintf(stderr, "sqlt: lockstepd's schema does not apply to a new database (see the log above)\n");
        return NULL;
    }
    PGconn *c = PQconnectdb(pg->conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "sqlt: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    return c;
}

PGconn *sqlt_c;
static h_pg sqlt_pg;

int sqlt_setup(void **state)
{
    (void)state;
    sqlt_c = sqlt_start(&sqlt_pg);
    return sqlt_c ? 0 : -1;
}

int sqlt_teardown(void **state)
{
    (void)state;
    PQfinish(sqlt_c);
    h_pg_stop(&sqlt_pg);
    return 0;
}

PGresult *sqlt_exec(PGconn *c, const char *sql, int n, const char *const *p)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, p, NULL, NULL, 0);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    return r;
}

void sqlt_do(PGconn *c, const char *sql, int n, const char *const *p)
{
    PQclear(sqlt_exec(c, sql, n, p));
}

char *sqlt_value(PGconn *c, const char *sql, int n, const char *const *p, char *out, size_t cap)
{
    PGresult *r = sqlt_exec(c, sql, n, p);
    if (PQntuples(r) != 1)
        fail_msg("%s: %d rows, want one", sql, PQntuples(r));
    snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return out;
}

json_t *sqlt_cases(const char *path)
{
    const char *src = getenv("LOCKSTEP_SRC");
    char full[1024];
    snprintf(full, sizeof(full), "%s/%s", src && *src ? src : ".", path);
    json_error_t e;
    json_t *t = json_load_file(full, 0, &e);
    if (!t)
        fail_msg("%s:%d: %s", full, e.line, e.text);
    return t;
}

const char *sqlt_bool(int b)
{
    return b ? "true" : "false";
}

void sqlt_new_run(const char *g, char *key, size_t cap)
{
    const char *p[] = {g};
    sqlt_value(sqlt_c,
               "INSERT INTO runs (run_id, job_id, twin_group, ranks, start_step) "
               "VALUES (gen_random_uuid(), 'j', $1, 2, 0) RETURNING run_key",
               1, p, key, cap);
}
