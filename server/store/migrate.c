/* migrate.c - bring the database schema up to date: the migrations of sql/ compiled into lockstepd, each once. */
#include "server/store/migrate.h"

#include <stdio.h>

#include "server/core/log.h"
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

int db_migrate(const char *conninfo)
{
    int rc = -1;
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
    if (exec_simple(c,
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, name text NOT NULL, "
                    "applied_at timestamptz NOT NULL DEFAULT now())",
                    "creating schema_migrations") < 0)
        goto out_unlock;
    for (int i = 0; i < db_n_migrations; i++) {
        const db_migration *m = &db_migrations[i];
        char ver[32];
        snprintf(ver, sizeof(ver), "%d", m->version);
        const char *p[] = {ver, m->name};
        r = PQexecParams(c, "SELECT 1 FROM schema_migrations WHERE version = $1", 1, NULL, p, NULL, NULL, 0);
        if (!db_ok(r)) {
            log_error("reading schema_migrations failed: %s", PQresultErrorMessage(r));
            PQclear(r);
            goto out_unlock;
        }
        int applied = PQntuples(r) > 0;
        PQclear(r);
        if (applied)
            continue;
        if (exec_simple(c, "BEGIN", "BEGIN") < 0)
            goto out_unlock;
        if (exec_simple(c, m->sql, m->name) < 0) {
            r = PQexec(c, "ROLLBACK");
            PQclear(r);
            goto out_unlock;
        }
        r = PQexecParams(c, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2, NULL, p, NULL, NULL,
                         0);
        int ok = db_ok(r);
        if (!ok)
            log_error("recording migration %s failed: %s", m->name, PQresultErrorMessage(r));
        PQclear(r);
        if (!ok || exec_simple(c, "COMMIT", "COMMIT") < 0) {
            r = PQexec(c, "ROLLBACK");
            PQclear(r);
            goto out_unlock;
        }
        log_info("applied migration %s", m->name);
    }
    rc = 0;
out_unlock:
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_unlock(%lld)", MIGRATION_LOCK);
    exec_simple(c, sql, "releasing the migration lock");
out_finish:
    PQfinish(c);
    return rc;
}
