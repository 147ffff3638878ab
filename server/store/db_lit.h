/* db_lit.h - PostgreSQL array literals of integers ("{1,NULL,-3}") built value by value: the arrays lockstepd
 * sends as a statement's parameters (server/store/write.c, server/twins/cmp_mem.c). */
#ifndef SERVER_STORE_DB_LIT_H
#define SERVER_STORE_DB_LIT_H

#include <stddef.h>
#include <stdint.h>

/* A PostgreSQL array literal ("{1,2,3}") under construction: zeroed to start, db_lit_add per value, db_lit_end to
 * finish; the caller frees p. */
typedef struct db_lit {
    char *p;
    size_t len, cap;
} db_lit;

/* db_lit_room - room in `l` for `n` bytes more (a caller that writes an element of its own: write.c's quoted int[]
 * and bytea elements). */
void db_lit_room(db_lit *l, size_t n);

/* db_lit_add - one integer more. */
void db_lit_add(db_lit *l, int64_t v);

/* db_lit_null - a NULL more. */
void db_lit_null(db_lit *l);

/* db_lit_end - close the literal ("{}" when nothing was added) and return it (l->p). */
const char *db_lit_end(db_lit *l);

#endif /* SERVER_STORE_DB_LIT_H */
