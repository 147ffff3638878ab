/* db.c - PostgreSQL access for lockstepd: one libpq connection per thread, prepared statements, reconnects, migrations. */
#include "server/db.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/log.h"

#define MAX_STATEMENTS 64
#define MIGRATION_LOCK 0x4c4f434b53544550LL /* "LOCKSTEP" */

static char *conninfo;
static struct {
    const char *name, *sql;
} statements[MAX_STATEMENTS];
static int n_statements;
static pthread_key_t conn_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static atomic_ulong db_errors;
static atomic_long last_complaint;

static void conn_free(void *p)
{
    PQfinish(p);
}

static void key_create(void)
{
    pthread_key_create(&conn_key, conn_free);
}

void db_init(const char *ci)
{
    free(conninfo);
    conninfo = strdup(ci);
    pthread_once(&key_once, key_create);
}

void db_register(const char *name, const char *sql)
{
    if (n_statements >= MAX_STATEMENTS) {
        log_error("too many prepared statements (%d); raise MAX_STATEMENTS", MAX_STATEMENTS);
        abort();
    }
    statements[n_statements].name = name;
    statements[n_statements].sql = sql;
    n_statements++;
}

void db_count_error(void)
{
    atomic_fetch_add(&db_errors, 1);
}

unsigned long db_errors_total(void)
{
    return atomic_load(&db_errors);
}

/* complain - log a connection failure at most once a second. */
static void complain(const char *what, const char *msg)
{
    long now = (long)time(NULL);
    long last = atomic_load(&last_complaint);
    if (now != last && atomic_compare_exchange_strong(&last_complaint, &last, now))
        log_error("%s: %s", what, msg);
}

static PGconn *connect_new(void)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        atomic_fetch_add(&db_errors, 1);
        complain("cannot connect to PostgreSQL", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    for (int i = 0; i < n_statements; i++) {
        PGresult *r = PQprepare(c, statements[i].name, statements[i].sql, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            atomic_fetch_add(&db_errors, 1);
            log_error("cannot prepare statement %s: %s", statements[i].name, PQresultErrorMessage(r));
            PQclear(r);
            PQfinish(c);
            return NULL;
        }
        PQclear(r);
    }
    return c;
}

PGconn *db_conn(void)
{
    pthread_once(&key_once, key_create);
    PGconn *c = pthread_getspecific(conn_key);
    if (c && PQstatus(c) == CONNECTION_OK)
        return c;
    if (c) {
        PQfinish(c);
        pthread_setspecific(conn_key, NULL);
    }
    c = connect_new();
    pthread_setspecific(conn_key, c);
    return c;
}

void db_conn_broken(void)
{
    PGconn *c = pthread_getspecific(conn_key);
    if (!c)
        return;
    /* A failed transaction leaves the session usable once rolled back. */
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_UNKNOWN) {
        if (PQtransactionStatus(c) != PQTRANS_IDLE) {
            PGresult *r = PQexec(c, "ROLLBACK");
            PQclear(r);
        }
        if (PQstatus(c) == CONNECTION_OK)
            return;
    }
    PQfinish(c);
    pthread_setspecific(conn_key, NULL);
}

int db_ok(const PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    return s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK;
}

static PGresult *exec_retry(const char *stmt, const char *sql, int n, const char *const *params, char *err,
                            size_t cap)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        PGconn *c = db_conn();
        if (!c) {
            if (err)
                snprintf(err, cap, "the database is unreachable");
            return NULL;
        }
        PGresult *r = stmt ? PQexecPrepared(c, stmt, n, params, NULL, NULL, 0) : PQexec(c, sql);
        if (db_ok(r))
            return r;
        atomic_fetch_add(&db_errors, 1);
        if (err)
            snprintf(err, cap, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
        int broken = PQstatus(c) != CONNECTION_OK;
        if (!broken || attempt == 1)
            log_warn("query %s failed: %s", stmt ? stmt : "(sql)", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
        PQclear(r);
        db_conn_broken();
        if (!broken)
            return NULL;
    }
    return NULL;
}

PGresult *db_exec(const char *stmt, int n, const char *const *params, char *err, size_t cap)
{
    return exec_retry(stmt, NULL, n, params, err, cap);
}

PGresult *db_exec_sql(const char *sql, char *err, size_t cap)
{
    return exec_retry(NULL, sql, 0, NULL, err, cap);
}

static int exec_simple(PGconn *c, const char *sql, const char *what)
{
    PGresult *r = PQexec(c, sql);
    int ok = db_ok(r);
    if (!ok)
        log_error("%s failed: %s", what, PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

int db_migrate(void)
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
