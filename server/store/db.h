/* db.h - PostgreSQL access for lockstepd: one libpq connection per thread, prepared statements, reconnects, migrations.
 */
#ifndef SERVER_STORE_DB_H
#define SERVER_STORE_DB_H

#include <stdint.h>
#include <libpq-fe.h>

#include "server/core/error.h"

/* DB_TS - a timestamptz column as ISO 8601 UTC text with milliseconds, in SQL: how every reader spells times. */
#define DB_TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* DB_MS - the milliseconds from timestamptz column `from` to `to`, in SQL: how every reader spells a latency
 * (detection_ms). */
#define DB_MS(from, to) "extract(epoch FROM " to " - " from ") * 1000"

/* db_init - remember the conninfo that every thread connects with. Call
 * once, before any thread uses the database. */
void db_init(const char *conninfo);

/* db_register - add a prepared statement (a name registered twice aborts).
 * A connection prepares it the first time its thread runs it. `name` and
 * `sql` must stay valid for the program's life. Call before any thread uses
 * the database. */
void db_register(const char *name, const char *sql);

/* db_conn - this thread's connection, connected (or reconnected after a
 * failure). Returns NULL when the server cannot be reached (logged,
 * rate-limited). The connection belongs to the thread and is closed when the
 * thread exits. */
PGconn *db_conn(void);

/* db_prepared - this thread's connection with statement `stmt` prepared on
 * it (for PQexecPrepared with binary parameters). NULL with the reason in
 * `err` when it cannot be. */
PGconn *db_prepared(const char *stmt, char *err, size_t cap);

/* db_prepare_all - prepare every registered statement on this thread's
 * connection: lockstepd checks them all against the schema at start, so that
 * a statement that does not fit it stops the start, not a request later.
 * 0, or -1 with the statement and the server's message in `err`. */
int db_prepare_all(char *err, size_t cap);

/* db_init_reads - the conninfo of a streaming replica (a hot standby) that may answer the read API (--read-db);
 * NULL or "": none, every statement goes to the primary. Call once, before any thread uses the database. */
void db_init_reads(const char *conninfo);

/* db_replan_first - how long after a connection is made it first drops its cached plans (30 s by default; then
 * after twice as long each time, an hour at most), for connections made from now on. See server/store/db.c. */
void db_replan_first(double seconds);

/* db_reads_begin - this thread's statements, until db_reads_end, are reads that may lag the primary a little (the
 * dashboard's and the CLI's): they go to the read replica when one is configured and reachable, else to the
 * primary (a replica that cannot be reached is tried again after a few seconds). A statement that writes fails
 * on a replica; it is then run on the primary, with the rest of the request, and a warning is logged. Returns 1
 * when the replica takes them. */
int db_reads_begin(void);

/* db_reads_configured - 1 when a read replica is configured (db_init_reads). */
int db_reads_configured(void);

/* db_reads_end - this thread's statements go to the primary again. */
void db_reads_end(void);

/* db_reads_on_replica - 1 when this thread's statements go to the read replica now. */
int db_reads_on_replica(void);

/* db_read_lag - when this thread's reads go to the replica: how many seconds of the primary's commits it may lack
 * (0 when it replayed everything it received and still streams, else the age of the last transaction it replayed),
 * refreshed at most once a second per thread; -1 when unknown or not on the replica. */
double db_read_lag(void);

/* db_comebacks - how many times lockstepd has connected to PostgreSQL again after it was unreachable (restarted,
 * crashed, failed over to its standby). A commit that did not wait for the disk or the standby (the comparison's,
 * synchronous_commit off) may be gone after such a comeback, so whoever keeps such work looks at its backlog again
 * when this number changes. */
unsigned long db_comebacks(void);

/* db_conn_broken - call after an error: when the connection is bad it is
 * closed, so that the next db_conn reconnects. */
void db_conn_broken(void);

/* db_exec - run prepared statement `stmt` with `n` text parameters (NULL for
 * SQL NULL). When the connection turns out to be broken, reconnects once
 * and retries. Returns the result when it succeeded (caller PQclear), else
 * NULL after logging, with the server's message in `err` when given. */
PGresult *db_exec(const char *stmt, int n, const char *const *params, char *err, size_t cap);

/* db_exec_bin - db_exec with the result in PostgreSQL's binary format
 * (integers big-endian, bytea raw): for reads of stored frames. */
PGresult *db_exec_bin(const char *stmt, int n, const char *const *params, char *err, size_t cap);

/* db_ping - whether PostgreSQL answers a trivial query now (the health check). Returns 0, or -1 with the
 * database's message in `err`. */
int db_ping(char *err, size_t cap);

/* db_listen - LISTEN on `channel` (lower-case letters and '_': the program's own names) on this thread's connection;
 * its notifications then come with PQnotifies on db_conn(), so a thread that listens keeps its connection to
 * itself. A reconnection (db_conn after db_conn_broken) does not listen again: call it again on the new one. 0, or
 * -1 with the reason in `err`. */
int db_listen(const char *channel, char *err, size_t cap);

/* db_complain - log a database failure as one error line at most every
 * DB_LOG_PERIOD_S seconds, saying how many were left out since: a database
 * that is down writes one line a period, not one per request or batch. */
#define DB_LOG_PERIOD_S 10
void db_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* db_exec_once - db_exec without the retry on a new connection: for
 * statements inside a transaction (db_begin), where a retry would run
 * outside it. Returns the result (caller PQclear) or NULL with `err`. */
PGresult *db_exec_once(const char *stmt, int n, const char *const *params, char *err, size_t cap);

/* db_do - db_exec_once when no rows are wanted: 0, or -1 with `err`. */
int db_do(const char *stmt, int n, const char *const *params, char *err, size_t cap);

/* db_conflicted - 1 when this thread's last failed statement (db_exec, db_exec_once, db_begin, db_commit,
 * db_prepare_all; sql.h's text statements too) failed on a concurrent update (serialization failure or deadlock): the
 * transaction, rolled back, may simply be run again (sql_retry). A success clears it. */
int db_conflicted(void);

/* db_note_outcome - record result `r`'s SQLSTATE as this thread's last outcome for db_conflicted ("" for a
 * success): for statements run on the connection outside this module (sql.h's text). */
void db_note_outcome(const PGresult *r);

/* db_begin - BEGIN on this thread's connection. Returns 0 or -1 with `err`. */
int db_begin(char *err, size_t cap);

/* db_commit - COMMIT. Returns 0, or -1 with `err` (nothing was committed). */
int db_commit(char *err, size_t cap);

/* db_rollback - ROLLBACK if a transaction is open (errors ignored). */
void db_rollback(void);

/* db_snapshot_begin - for a reader whose statements must agree with each other (a status and the rows it is
 * computed from): BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY on this thread's connection when no transaction
 * is open there (returns 1: end it with db_rollback), 0 when one is open already (the reads join it), -1 with
 * `err`. A read-only REPEATABLE READ transaction never fails on a concurrent update. */
int db_snapshot_begin(char *err, size_t cap);

/* db_int_array_parse - PostgreSQL's text form of an integer array ("{2,3}",
 * "{}") into up to `cap` values of `out`. Returns how many it held (values
 * past `cap` are dropped). */
int db_int_array_parse(const char *text, int64_t *out, int cap);

/* db_int_array_text - `n` integers as PostgreSQL's text form of an array
 * ("{2,3}", "{}") into `out` (cap bytes, at least 3); the values that do not
 * fit are left out. Returns out. */
char *db_int_array_text(const int *v, int n, char *out, size_t cap);

/* db_hex_parse - the bytes of a bytea read as encode(col, 'hex') (or "\\x" and
 * hex digits) into `out` (at most `cap`). Returns the length, or -1 when the
 * text is not whole hex byte pairs or does not fit. */
int db_hex_parse(const char *text, unsigned char *out, size_t cap);

/* db_fail - fill `e` as "database error" with "WHAT: MSG" as its detail.
 * Returns -1. */
int db_fail(srv_error *e, const char *what, const char *msg);

/* db_ok - 1 when `r` is a successful result (tuples or command). */
int db_ok(const PGresult *r);

#endif /* SERVER_STORE_DB_H */
