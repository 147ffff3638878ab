/* hostlist.c - Slurm node lists (common/hostlist.h): the node at a position (the plugin) and the list expanded to names (lockstepd, the CLI). */
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

/* add - append `name` unless present. Returns the new count, or -1 when full. */
static int add(char (*names)[HOSTLIST_NAME_MAX], int n, int max, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return n;
    if (n >= max)
        return -1;
    snprintf(names[n], HOSTLIST_NAME_MAX, "%s", name);
    return n + 1;
}

/* expand_part - one comma-free part `p` (len bytes) after `prefix`: its first bracket group's values, each
 * followed by the expansion of the rest. Returns the new count or -1. */
static int expand_part(const char *prefix, const char *p, size_t len, char (*names)[HOSTLIST_NAME_MAX], int n, int max)
{
    const char *open = memchr(p, '[', len);
    char head[HOSTLIST_NAME_MAX];
    if (!open) {
        if (strlen(prefix) + len >= HOSTLIST_NAME_MAX || memchr(p, ']', len))
            return -1;
        snprintf(head, sizeof(head), "%s%.*s", prefix, (int)len, p);
        return *head ? add(names, n, max, head) : n;
    }
    const char *close = memchr(open, ']', len - (size_t)(open - p));
    if (!close || close == open + 1 || strlen(prefix) + (size_t)(open - p) >= HOSTLIST_NAME_MAX)
        return -1;
    snprintf(head, sizeof(head), "%s%.*s", prefix, (int)(open - p), p);
    const char *rest = close + 1;
    size_t rest_len = len - (size_t)(rest - p);
    /* The ranges inside the brackets: a,b-c,... */
    for (const char *r = open + 1; r < close;) {
        const char *end = memchr(r, ',', (size_t)(close - r));
        if (!end)
            end = close;
        const char *dash = memchr(r, '-', (size_t)(end - r));
        char lo_s[32], hi_s[32];
        size_t lo_len = (size_t)((dash ? dash : end) - r);
        if (lo_len == 0 || lo_len >= sizeof(lo_s))
            return -1;
        memcpy(lo_s, r, lo_len);
        lo_s[lo_len] = 0;
        if (dash) {
            size_t hl = (size_t)(end - dash - 1);
            if (hl == 0 || hl >= sizeof(hi_s))
                return -1;
            memcpy(hi_s, dash + 1, hl);
            hi_s[hl] = 0;
        } else {
            snprintf(hi_s, sizeof(hi_s), "%s", lo_s);
        }
        if (strspn(lo_s, "0123456789") != strlen(lo_s) || strspn(hi_s, "0123456789") != strlen(hi_s))
            return -1;
        long lo = strtol(lo_s, NULL, 10), hi = strtol(hi_s, NULL, 10);
        if (hi < lo || hi - lo > 100000)
            return -1;
        int width = (int)strlen(lo_s);
        for (long v = lo; v <= hi; v++) {
            char pre[HOSTLIST_NAME_MAX];
            if (snprintf(pre, sizeof(pre), "%s%0*ld", head, width, v) >= (int)sizeof(pre))
                return -1;
            n = expand_part(pre, rest, rest_len, names, n, max);
            if (n < 0)
                return -1;
        }
        r = end < close ? end + 1 : close;
    }
    return n;
}

int hostlist_expand(const char *list, char (*names)[HOSTLIST_NAME_MAX], int max)
{
    int n = 0, depth = 0;
    const char *start = list;
    if (!list)
        return 0;
    for (const char *c = list;; c++) {
        if (*c == '[')
            depth++;
        else if (*c == ']' && --depth < 0)
            return -1;
        if ((*c == ',' && depth == 0) || !*c) {
            const char *b = start, *e = c;
            while (b < e && (*b == ' ' || *b == '\t'))
                b++;
            while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            if (e > b && (n = expand_part("", b, (size_t)(e - b), names, n, max)) < 0)
                return -1;
            if (!*c)
                break;
            start = c + 1;
        }
    }
    return depth ? -1 : n;
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
