/* db.h - PostgreSQL access for lockstepd: one libpq connection per thread, prepared statements, reconnects, migrations. */
#ifndef SERVER_DB_H
#define SERVER_DB_H

#include <libpq-fe.h>

/* db_init - remember the conninfo that every thread connects with. Call
 * once, before db_register and before any thread uses the database. */
void db_init(const char *conninfo);

/* db_register - add a prepared statement that every connection prepares
 * when it connects. `name` and `sql` must stay valid for the program's life.
 * Call before the first db_conn. */
void db_register(const char *name, const char *sql);

/* db_conn - this thread's connection, connected (or reconnected after a
 * failure) with every registered statement prepared. Returns NULL when the
 * server cannot be reached (logged, rate-limited). The connection belongs to
 * the thread and is closed when the thread exits. */
PGconn *db_conn(void);

/* db_conn_broken - call after an error: when the connection is bad it is
 * closed, so that the next db_conn reconnects. */
void db_conn_broken(void);

/* db_exec - run prepared statement `stmt` with `n` text parameters (NULL for
 * SQL NULL). When the connection turns out to be broken, reconnects once
 * and retries. Returns the result when it succeeded (caller PQclear), else
 * NULL after logging, with the server's message in `err` when given. */
PGresult *db_exec(const char *stmt, int n, const char *const *params, char *err, size_t cap);

/* db_exec_sql - the same for plain SQL text without parameters. */
PGresult *db_exec_sql(const char *sql, char *err, size_t cap);

/* db_ok - 1 when `r` is a successful result (tuples or command). */
int db_ok(const PGresult *r);

/* db_migrate - apply the migrations compiled into lockstepd (from sql/)
 * that the database lacks, in order, each in its own transaction, recorded
 * in schema_migrations, under an advisory lock so that concurrent starts
 * never apply one twice. Returns 0, or -1 after logging. */
int db_migrate(void);

/* db_count_error - count one database error seen outside db_exec. */
void db_count_error(void);

/* db_errors_total - how many database errors lockstepd has seen. */
unsigned long db_errors_total(void);

/* Migrations compiled in from sql/NNN_name.sql (generated file). */
typedef struct db_migration {
    int version;
    const char *name;
    const char *sql;
} db_migration;
extern const db_migration db_migrations[];
extern const int db_n_migrations;

#endif /* SERVER_DB_H */
