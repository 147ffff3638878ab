/* hostlist.c - Slurm node lists: the node at a position (common/hostlist.h). */
#include "common/hostlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* range - one "a" or "a-b" of a bracket, its width (digits of a, for zero padding). */
typedef struct range {
    unsigned long lo, hi;
    int width;
} range;

/* parse_range - the range at p (up to ',' or ']'); the end in *end. Returns 0 or -1. */
static int parse_range(const char *p, const char **end, range *r)
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
    if (*e != ',' && *e != ']')
        return -1;
    *end = e;
    return 0;
}

/* walk - visit the nodes of `list` in order; stops at node `want` (copied into out) when out is given.
 * Returns how many nodes it saw (want + 1 when it found it), or -1 when malformed or not fitting. */
static long walk(const char *list, size_t want, char *out, size_t cap)
{
    long seen = 0;
    const char *p = list;
    while (*p) {
        /* one item: prefix [ranges] suffix, up to a ',' outside brackets */
        const char *open = NULL, *close = NULL, *q = p;
        while (*q && *q != ',') {
            if (*q == '[') {
                if (open)
                    return -1; /* two bracket groups in one name */
                open = q;
                close = strchr(q, ']');
                if (!close)
                    return -1;
                q = close + 1;
                continue;
            }
            if (*q == ']')
                return -1;
            q++;
        }
        if (q == p)
            return -1; /* an empty name */
        if (!open) {
            if (out && (size_t)seen == want) {
                if ((size_t)(q - p) >= cap)
                    return -1;
                memcpy(out, p, (size_t)(q - p));
                out[q - p] = 0;
                return seen + 1;
            }
            seen++;
        } else {
            size_t pre = (size_t)(open - p), suf = (size_t)(q - close - 1);
            const char *r = open + 1;
            while (r < close) {
                range rg;
                const char *end;
                if (parse_range(r, &end, &rg) < 0)
                    return -1;
                unsigned long count = rg.hi - rg.lo + 1;
                if (out && (size_t)seen <= want && want < (size_t)seen + count) {
                    char num[32];
                    int n = snprintf(num, sizeof(num), "%0*lu", rg.width, rg.lo + (want - (size_t)seen));
                    if (n < 0 || (size_t)n >= sizeof(num) || pre + (size_t)n + suf >= cap)
                        return -1;
                    memcpy(out, p, pre);
                    memcpy(out + pre, num, (size_t)n);
                    memcpy(out + pre + (size_t)n, close + 1, suf);
                    out[pre + (size_t)n + suf] = 0;
                    return (long)want + 1;
                }
                seen += (long)count;
                r = *end == ',' ? end + 1 : end;
            }
        }
        p = *q == ',' ? q + 1 : q;
    }
    return seen;
}

int hostlist_nth(const char *list, size_t index, char *out, size_t cap)
{
    if (!list || !cap)
        return -1;
    long got = walk(list, index, out, cap);
    return got == (long)index + 1 && out[0] ? 0 : -1;
}

long hostlist_count(const char *list)
{
    return list ? walk(list, 0, NULL, 0) : -1;
}
