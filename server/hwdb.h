/* hwdb.h - parameterized SQL on this thread's lockstepd connection for the suspects and alerts parts, and their transactions. */
#ifndef SERVER_HWDB_H
#define SERVER_HWDB_H

#include <stddef.h>

#include <libpq-fe.h>

/* hw_q - run `sql` with `n` text parameters (NULL for SQL NULL) on this
 * thread's connection (db_conn), unprepared. Returns the result when it
 * succeeded (caller PQclear), else NULL with the server's message in `err`
 * (the connection is marked broken when it is). No retry: callers inside a
 * transaction roll back and try again later. */
PGresult *hw_q(const char *sql, int n, const char *const *params, char *err, size_t cap);

/* hw_do - the same when no rows are wanted. Returns 0 or -1. */
int hw_do(const char *sql, int n, const char *const *params, char *err, size_t cap);

/* hw_begin - take the suspects' advisory lock (one evaluator at a time
 * across every lockstepd on the database), then BEGIN ISOLATION LEVEL
 * REPEATABLE READ (every read sees one snapshot: a divergence and the
 * comparison progress that follows it are seen together). 0 or -1. */
int hw_begin(char *err, size_t cap);

/* hw_commit - COMMIT; hw_rollback - ROLLBACK (errors ignored). Both release
 * the advisory lock. */
int hw_commit(char *err, size_t cap);
void hw_rollback(void);

#endif /* SERVER_HWDB_H */
