/* sql.c - the fleet evaluator's lock and its REPEATABLE READ transactions on this thread's connection, and their retry
 * on a conflict. */
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

/* control - run transaction control or lock statement `sql` (no parameters, no rows wanted) on this thread's
 * connection, recording its outcome for sql_conflicted. 0, or -1 with the server's message in `err` (the connection
 * is marked broken when it is). */
static int control(const char *sql, char *err, size_t cap)
{
    PGconn *c = db_conn();
    if (!c) {
        if (err)
            snprintf(err, cap, "the database is unreachable");
        return -1;
    }
    PGresult *r = PQexec(c, sql);
    db_note_outcome(r);
    if (db_ok(r)) {
        PQclear(r);
        return 0;
    }
    if (err) {
        snprintf(err, cap, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
        size_t l = strlen(err);
        while (l && (err[l - 1] == '\n' || err[l - 1] == ' '))
            err[--l] = 0;
    }
    PQclear(r);
    if (PQstatus(c) != CONNECTION_OK)
        db_conn_broken();
    return -1;
}

/* The session lock is taken before BEGIN so that the transaction's snapshot
 * (REPEATABLE READ: one snapshot for all its reads) is taken after the
 * previous holder committed. */
int sql_begin(char *err, size_t cap)
{
    if (control("SELECT pg_advisory_lock(" SUSPECTS_LOCK ")", err, cap) < 0)
        return -1;
    if (control("BEGIN ISOLATION LEVEL REPEATABLE READ", err, cap) < 0) {
        sql_rollback();
        return -1;
    }
    return 0;
}

int sql_lock_evaluator(char *err, size_t cap)
{
    return control("SELECT pg_advisory_xact_lock(" SUSPECTS_LOCK ")", err, cap);
}

static void unlock(PGconn *c)
{
    PQclear(PQexec(c, "SELECT pg_advisory_unlock(" SUSPECTS_LOCK ")"));
}

int sql_commit(char *err, size_t cap)
{
    int rc = control("COMMIT", err, cap);
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
