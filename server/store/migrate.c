/* migrate.c - bring the database schema up to date: the migrations of sql/migrations/ compiled into lockstepd, each
 * once, then every function of sql/functions/, in one transaction. */
#include "server/store/migrate.h"

#include <stdio.h>

#include <stdlib.h>

#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"

#define MIGRATION_LOCK 0x4c4f434b53544550LL /* "LOCKSTEP" */

static int exec_simple(PGconn *c, const char *sql, const char *what)
{
    PGresult *r = PQexec(c, sql);
    int ok = db_ok(r);
    if (!ok)
        log_error("%s failed: %s", what, PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

/* apply_migrations - inside the caller's transaction, the migrations the database lacks, each recorded in
 * schema_migrations; their indexes (into db_migrations) in applied[0..*n). Returns 0, or -1 after logging. */
static int apply_migrations(PGconn *c, int *applied, int *n)
{
    *n = 0;
    for (int i = 0; i < db_n_migrations; i++) {
        const db_migration *m = &db_migrations[i];
        char ver[32];
        snprintf(ver, sizeof(ver), "%d", m->version);
        const char *p[] = {ver, m->name};
        PGresult *r = PQexecParams(c, "SELECT 1 FROM schema_migrations WHERE version = $1", 1, NULL, p, NULL, NULL, 0);
        if (!db_ok(r)) {
            log_error("reading schema_migrations failed: %s", PQresultErrorMessage(r));
            PQclear(r);
            return -1;
        }
        int done = PQntuples(r) > 0;
        PQclear(r);
        if (done)
            continue;
        if (exec_simple(c, m->sql, m->name) < 0)
            return -1;
        r = PQexecParams(c, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2, NULL, p, NULL, NULL, 0);
        int ok = db_ok(r);
        if (!ok)
            log_error("recording migration %s failed: %s", m->name, PQresultErrorMessage(r));
        PQclear(r);
        if (!ok)
            return -1;
        applied[(*n)++] = i;
    }
    return 0;
}

/* apply_functions - inside the caller's transaction, every functions file, in name order. Returns 0, or -1 after
 * logging. */
static int apply_functions(PGconn *c)
{
    for (int i = 0; i < db_n_functions; i++) {
        PGresult *r = PQexec(c, db_functions[i].sql);
        int ok = db_ok(r);
        if (!ok)
            log_error("applying sql/functions/%s.sql failed: %s (hint: when it changes a function's return type or "
                      "parameter names, a migration drops the old one first: sql/README.md)",
                      db_functions[i].name, PQresultErrorMessage(r));
        PQclear(r);
        if (!ok)
            return -1;
    }
    return 0;
}

int db_migrate(const char *conninfo)
{
    int rc = -1, n_applied = 0;
    int *applied = xcalloc((size_t)db_n_migrations + 1, sizeof(*applied));
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        log_error("cannot connect to PostgreSQL to migrate: %s", PQerrorMessage(c));
        goto out_finish;
    }
    PGresult *r = PQexec(c, "SET client_min_messages = warning");
    PQclear(r);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_lock(%lld)", MIGRATION_LOCK);
    if (exec_simple(c, sql, "taking the migration lock") < 0)
        goto out_finish;
    if (exec_simple(c, "BEGIN", "BEGIN") < 0)
        goto out_unlock;
    if (exec_simple(c,
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, name text NOT NULL, "
                    "applied_at timestamptz NOT NULL DEFAULT now())",
                    "creating schema_migrations") < 0 ||
        apply_migrations(c, applied, &n_applied) < 0 || apply_functions(c) < 0 ||
        exec_simple(c, "COMMIT", "COMMIT") < 0) {
        r = PQexec(c, "ROLLBACK");
        PQclear(r);
        goto out_unlock;
    }
    for (int i = 0; i < n_applied; i++)
        log_info("applied migration %s", db_migrations[applied[i]].name);
    rc = 0;
out_unlock:
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_unlock(%lld)", MIGRATION_LOCK);
    exec_simple(c, sql, "releasing the migration lock");
out_finish:
    PQfinish(c);
    free(applied);
    return rc;
}
