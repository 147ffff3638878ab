/* hostlist.c - Slurm node lists (common/hostlist.h): one walk over a list's names, visited in order; the node at a
 * position (the plugin), the count, and the list expanded to names (lockstepd, the CLI). */
#include "common/hostlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* range - one "a" or "a-b" of a bracket, its width (digits of a, for zero padding). */
typedef struct range {
    unsigned long lo, hi;
    int width;
} range;

/* parse_range - the range at p, ending at a ',' before `close` or at `close`; that end in *end. Returns 0 or -1. */
static int parse_range(const char *p, const char *close, const char **end, range *r)
{
    char *e;
    if (*p < '0' || *p > '9')
        return -1;
    r->lo = strtoul(p, &e, 10);
    r->width = (int)(e - p);
    if (r->width > 18)
        return -1; /* no node number has 19 digits: refused before it overflows or pads past a name */
    r->hi = r->lo;
    if (*e == '-') {
        const char *q = e + 1;
        if (*q < '0' || *q > '9')
            return -1;
        r->hi = strtoul(q, &e, 10);
        if (e - q > 18 || r->hi < r->lo || r->hi - r->lo > 1000000)
            return -1;
    }
    if (e != close && !(*e == ',' && e < close))
        return -1;
    *end = e;
    return 0;
}

/* visit_fn - called with each node name in the list's order: 0 goes on, 1 stops (found), -1 fails. */
typedef int (*visit_fn)(const char *name, void *ctx);

/* each_name - visit the names of the comma-free item p[0..len) after `prefix`, its first bracket group
 * outermost ("r[1-2]n[1-2]": r1n1 r1n2 r2n1 r2n2). Returns 0 when all were visited, 1 when the visitor stopped,
 * -1 when malformed, a name does not fit or the visitor failed. */
static int each_name(const char *prefix, const char *p, size_t len, visit_fn visit, void *ctx)
{
    char name[HOSTLIST_NAME_MAX];
    const char *open = memchr(p, '[', len);
    if (!open) {
        if (memchr(p, ']', len) || strlen(prefix) + len >= sizeof(name))
            return -1;
        snprintf(name, sizeof(name), "%s%.*s", prefix, (int)len, p);
        return visit(name, ctx);
    }
    const char *close = memchr(open, ']', len - (size_t)(open - p));
    if (!close || close == open + 1 || memchr(p, ']', (size_t)(open - p)))
        return -1;
    const char *rest = close + 1;
    size_t rest_len = len - (size_t)(rest - p);
    for (const char *r = open + 1; r < close;) {
        range rg;
        const char *end;
        if (parse_range(r, close, &end, &rg) < 0)
            return -1;
        for (unsigned long v = rg.lo;; v++) {
            if (snprintf(name, sizeof(name), "%s%.*s%0*lu", prefix, (int)(open - p), p, rg.width, v) >=
                (int)sizeof(name))
                return -1;
            int rc = each_name(name, rest, rest_len, visit, ctx);
            if (rc)
                return rc;
            if (v == rg.hi)
                break;
        }
        r = end < close ? end + 1 : close;
    }
    return 0;
}

/* each_item - visit the names of `list`, item by item (items split at commas outside brackets, blanks around
 * them dropped). `strict` (the plugin's attestation) refuses an empty item and an item with two bracket groups.
 * Returns as each_name. */
static int each_item(const char *list, int strict, visit_fn visit, void *ctx)
{
    int depth = 0, groups = 0;
    const char *start = list;
    for (const char *c = list;; c++) {
        if (*c == '[') {
            if (++depth > 1)
                return -1;
            groups++;
        } else if (*c == ']' && --depth < 0) {
            return -1;
        }
        if ((*c != ',' || depth) && *c)
            continue;
        if (depth)
            return -1; /* the list ends inside a bracket */
        const char *b = start, *e = c;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (strict && (e == b || groups > 1))
            return -1;
        int rc = e > b ? each_name("", b, (size_t)(e - b), visit, ctx) : 0;
        if (rc)
            return rc;
        if (!*c)
            return 0;
        start = c + 1;
        groups = 0;
    }
}

/* nth - the visitor of hostlist_nth and hostlist_count. */
typedef struct nth {
    size_t want, seen;
    char *out; /* NULL: count only */
    size_t cap;
} nth;

static int nth_visit(const char *name, void *ctx)
{
    nth *x = ctx;
    if (x->out && x->seen == x->want) {
        if (strlen(name) >= x->cap)
            return -1;
        memcpy(x->out, name, strlen(name) + 1);
        return 1;
    }
    x->seen++;
    return 0;
}

int hostlist_nth(const char *list, size_t index, char *out, size_t cap)
{
    if (!list || !*list || !cap)
        return -1;
    nth x = {index, 0, out, cap};
    return each_item(list, 1, nth_visit, &x) == 1 ? 0 : -1;
}

long hostlist_count(const char *list)
{
    if (!list)
        return -1;
    nth x = {0, 0, NULL, 0};
    return *list && each_item(list, 1, nth_visit, &x) < 0 ? -1 : (long)x.seen;
}

/* expand - the visitor of hostlist_expand: each name once, up to max. */
typedef struct expand {
    char (*names)[HOSTLIST_NAME_MAX];
    int n, max;
} expand;

static int expand_visit(const char *name, void *ctx)
{
    expand *x = ctx;
    for (int i = 0; i < x->n; i++)
        if (!strcmp(x->names[i], name))
            return 0;
    if (x->n >= x->max)
        return -1;
    snprintf(x->names[x->n++], HOSTLIST_NAME_MAX, "%s", name);
    return 0;
}

int hostlist_expand(const char *list, char (*names)[HOSTLIST_NAME_MAX], int max)
{
    expand x = {names, 0, max};
    if (!list)
        return 0;
    return each_item(list, 0, expand_visit, &x) < 0 ? -1 : x.n;
}

int hostlist_join(char (*names)[HOSTLIST_NAME_MAX], int n, char *out, size_t cap)
{
    size_t len = 0;
    if (cap)
        out[0] = 0;
    for (int i = 0; i < n; i++) {
        int w = snprintf(out + len, cap - len, "%s%s", i ? "," : "", names[i]);
        if (w < 0 || (size_t)w >= cap - len) {
            if (cap)
                out[0] = 0;
            return -1;
        }
        len += (size_t)w;
    }
    return 0;
}
