/* sql.h - the fleet evaluator's lock and its REPEATABLE READ transactions on this thread's connection, and their retry
 * on a conflict. The statements inside them are db_register'd (server/store/db.h). */
#ifndef SERVER_STORE_SQL_H
#define SERVER_STORE_SQL_H

#include <stddef.h>
#include <libpq-fe.h>

/* sql_begin - take the fleet evaluator' advisory lock (one evaluator at a time
 * across every lockstepd on the database), then BEGIN ISOLATION LEVEL
 * REPEATABLE READ (every read sees one snapshot: a divergence and the
 * comparison progress that follows it are seen together). 0 or -1. */
int sql_begin(char *err, size_t cap);

/* sql_lock_evaluator - inside a transaction begun elsewhere (db_begin): take the
 * fleet evaluator's lock until it ends, so that no evaluation is under way
 * while it changes what evaluations write, and the next one sees it
 * committed. 0 or -1. */
int sql_lock_evaluator(char *err, size_t cap);

/* sql_conflicted - 1 when this thread's last failed statement, run here or by
 * db.h's prepared statements (db_conflicted), failed on a concurrent update
 * (serialization failure or deadlock): the transaction, rolled back, may
 * simply be run again. A writer outside the evaluator's lock (alert
 * deliveries) can make a REPEATABLE READ transaction fail so. */
int sql_conflicted(void);

/* sql_retry - after attempt `attempt` (from 0) of a transaction failed: 1 when it failed on a concurrent update
 * (sql_conflicted) and may run again, having waited (20 ms, doubling; 5 attempts in all), else 0. */
int sql_retry(int attempt);

/* sql_commit - COMMIT; sql_rollback - ROLLBACK (errors ignored). Both release
 * the advisory lock. */
int sql_commit(char *err, size_t cap);
void sql_rollback(void);

#endif /* SERVER_STORE_SQL_H */
