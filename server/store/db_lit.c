/* db_lit.c - PostgreSQL array literals of integers, value by value. A group of batches is some 30 such arrays of
 * a few hundred values each, so a value is written by hand rather than by sprintf (which cost lockstepd ~5% of its
 * CPU at 100,000 ranks: docs/scale.md). */
#include "server/store/db_lit.h"

#include <string.h>

#include "server/core/xalloc.h"

/* The most one value takes with its separator: ',' '-' and 19 digits. */
#define LIT_VALUE_MAX 24

void db_lit_room(db_lit *l, size_t n)
{
    if (l->len + n <= l->cap)
        return;
    while (l->len + n > l->cap)
        l->cap = l->cap ? 2 * l->cap : 256;
    l->p = xrealloc(l->p, l->cap);
}

void db_lit_add(db_lit *l, int64_t v)
{
    db_lit_room(l, LIT_VALUE_MAX);
    char *p = l->p + l->len, digits[20];
    *p++ = l->len ? ',' : '{';
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v; /* INT64_MIN too */
    if (v < 0)
        *p++ = '-';
    int n = 0;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    while (n)
        *p++ = digits[--n];
    l->len = (size_t)(p - l->p);
}

void db_lit_null(db_lit *l)
{
    db_lit_room(l, LIT_VALUE_MAX);
    l->p[l->len] = l->len ? ',' : '{';
    memcpy(l->p + l->len + 1, "NULL", 4);
    l->len += 5;
}

const char *db_lit_end(db_lit *l)
{
    if (l->len + 3 > l->cap) {
        l->cap += 3;
        l->p = xrealloc(l->p, l->cap);
    }
    if (!l->len)
        l->p[l->len++] = '{';
    l->p[l->len++] = '}';
    l->p[l->len] = 0;
    return l->p;
}
