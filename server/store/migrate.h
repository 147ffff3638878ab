/* migrate.h - bring the database schema up to date: the migrations of sql/migrations/ compiled into lockstepd, each
 * once, then every function of sql/functions/. */
#ifndef SERVER_STORE_MIGRATE_H
#define SERVER_STORE_MIGRATE_H

/* db_migrate - on a connection of its own to `conninfo`, in one transaction: apply the migrations compiled into
 * lockstepd (sql/migrations/) that the database lacks, in order, each recorded in schema_migrations; then every
 * functions file (sql/functions/, in name order), whose CREATE OR REPLACE makes each function what this lockstepd
 * says, whatever an older one left. Under an advisory lock, so that concurrent starts never apply a migration
 * twice. A failure leaves the database as it was. Returns 0, or -1 after logging. */
int db_migrate(const char *conninfo);

/* Migrations compiled in from sql/migrations/NNN_name.sql (generated file). */
typedef struct db_migration {
    int version;
    const char *name;
    const char *sql;
} db_migration;
extern const db_migration db_migrations[];
extern const int db_n_migrations;

/* The functions files compiled in from sql/functions/NAME.sql (generated file). */
typedef struct db_function_file {
    const char *name;
    const char *sql;
} db_function_file;
extern const db_function_file db_functions[];
extern const int db_n_functions;

#endif /* SERVER_STORE_MIGRATE_H */
