/* sqlt.h - what the tests/sql tier shares: a private PostgreSQL holding lockstepd's schema, statements that fail the
 * test when they fail, and the case tables of tests/data/. */
#ifndef TESTS_SQL_SQLT_H
#define TESTS_SQL_SQLT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "tests/integration/harness.h"

/* sqlt_start - start a PostgreSQL cluster in `pg` (h_pg_start), bring its database "postgres" to lockstepd's schema
 * with lockstepd's own db_migrate (sql/migrations/, then sql/functions/), and connect. Returns the connection, or
 * NULL with a message on stderr. */
PGconn *sqlt_start(h_pg *pg);

/* sqlt_c - the connection sqlt_setup made for the group's tests. */
extern PGconn *sqlt_c;

/* sqlt_setup - a cmocka group setup: sqlt_start into sqlt_c (a private cluster the group's tests share); fails the
 * group when it cannot. sqlt_teardown - its teardown: the connection closed and the cluster stopped. */
int sqlt_setup(void **state);
int sqlt_teardown(void **state);

/* sqlt_exec - run `sql` with the text parameters p[0..n); fails the test unless it succeeds. Returns the result
 * (the caller PQclears it). */
PGresult *sqlt_exec(PGconn *c, const char *sql, int n, const char *const *p);

/* sqlt_do - sqlt_exec for a statement whose result is not needed. */
void sqlt_do(PGconn *c, const char *sql, int n, const char *const *p);

/* sqlt_value - the one value sqlt_exec(c, sql, n, p) returns into `out` ("" for NULL); fails the test unless it
 * returns one row. Returns `out`. */
char *sqlt_value(PGconn *c, const char *sql, int n, const char *const *p, char *out, size_t cap);

/* sqlt_new_run - a run of twin group `g` with two ranks starting at step 0 (through sqlt_c); its key into `key`. */
void sqlt_new_run(const char *g, char *key, size_t cap);

/* sqlt_cases - the JSON case table `path` (relative to the source tree: LOCKSTEP_SRC, else the working
 * directory); fails the test when it does not parse. The caller decrefs it. */
json_t *sqlt_cases(const char *path);

/* sqlt_bool - the text of a boolean for a statement's parameter. */
const char *sqlt_bool(int b);

#endif /* TESTS_SQL_SQLT_H */
