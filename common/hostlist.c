/* hostlist.c - Slurm node lists expanded to node names (common/hostlist.h). */
#include "common/hostlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
