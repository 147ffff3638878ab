/* migrate.h - bring the database schema up to date: the migrations of sql/ compiled into lockstepd, each once. */
#ifndef SERVER_STORE_MIGRATE_H
#define SERVER_STORE_MIGRATE_H

/* db_migrate - on a connection of its own to `conninfo`, apply the migrations compiled into lockstepd (from sql/)
 * that the database lacks, in order, each in its own transaction, recorded
 * in schema_migrations, under an advisory lock so that concurrent starts
 * never apply one twice. Returns 0, or -1 after logging. */
int db_migrate(const char *conninfo);

/* Migrations compiled in from sql/NNN_name.sql (generated file). */
typedef struct db_migration {
    int version;
    const char *name;
    const char *sql;
} db_migration;
extern const db_migration db_migrations[];
extern const int db_n_migrations;

#endif /* SERVER_STORE_MIGRATE_H */
