/* sql.c - parameterized SQL text on this thread's connection (unprepared), and the evaluator's locked transactions. */
#include "server/store/sql.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/store/db.h"

#define SUSPECTS_LOCK "7243105"

int sql_conflicted(void)
{
    return db_conflicted();
}

int sql_retry(int attempt)
{
    if (attempt >= 4 || !sql_conflicted())
        return 0;
    usleep(20000u << attempt);
    return 1;
}

PGresult *sql_query(const char *sql, int n, const char *const *params, char *err, size_t cap)
{
    PGconn *c = db_conn();
    if (!c) {
        if (err)
            snprintf(err, cap, "the database is unreachable");
        return NULL;
    }
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    db_note_outcome(r);
    if (db_ok(r))
        return r;
    if (err)
        snprintf(err, cap, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    if (err) {
        size_t l = strlen(err);
        while (l && (err[l - 1] == '\n' || err[l - 1] == ' '))
            err[--l] = 0;
    }
    PQclear(r);
    if (PQstatus(c) != CONNECTION_OK)
        db_conn_broken();
    return NULL;
}

int sql_do(const char *sql, int n, const char *const *params, char *err, size_t cap)
{
    PGresult *r = sql_query(sql, n, params, err, cap);
    PQclear(r);
    return r ? 0 : -1;
}

/* The session lock is taken before BEGIN so that the transaction's snapshot
 * (REPEATABLE READ: one snapshot for all its reads) is taken after the
 * previous holder committed. */
int sql_begin(char *err, size_t cap)
{
    if (sql_do("SELECT pg_advisory_lock(" SUSPECTS_LOCK ")", 0, NULL, err, cap) < 0)
        return -1;
    if (sql_do("BEGIN ISOLATION LEVEL REPEATABLE READ", 0, NULL, err, cap) < 0) {
        sql_rollback();
        return -1;
    }
    return 0;
}

int sql_lock_evaluator(char *err, size_t cap)
{
    return sql_do("SELECT pg_advisory_xact_lock(" SUSPECTS_LOCK ")", 0, NULL, err, cap);
}

static void unlock(PGconn *c)
{
    PQclear(PQexec(c, "SELECT pg_advisory_unlock(" SUSPECTS_LOCK ")"));
}

int sql_commit(char *err, size_t cap)
{
    int rc = sql_do("COMMIT", 0, NULL, err, cap);
    PGconn *c = db_conn();
    if (c)
        unlock(c);
    return rc;
}

void sql_rollback(void)
{
    PGconn *c = db_conn();
    if (c) {
        PQclear(PQexec(c, "ROLLBACK"));
        unlock(c);
    }
}
