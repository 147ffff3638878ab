/* tracespec.c - parse and apply LOCKSTEP_TRACE level-and-window specifications. */
#include "common/tracespec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"

/* parse_int - a decimal integer spanning exactly [s, end). */
static int parse_int(const char *s, const char *end, int64_t *out)
{
    char buf[32];
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    long long v = strtoll(buf, &e, 10);
    if (errno || *e || e == buf)
        return -1;
    *out = v;
    return 0;
}

/* parse_range - "A-B", "A", "A-", "-B" within [s, end). */
static int parse_range(const char *s, const char *end, ts_range *r)
{
    if (s == end)
        return -1;
    if (*s == '-') {
        r->lo = INT64_MIN;
        return parse_int(s + 1, end, &r->hi);
    }
    const char *dash = memchr(s, '-', (size_t)(end - s));
    if (!dash) {
        if (parse_int(s, end, &r->lo) < 0)
            return -1;
        r->hi = r->lo;
        return 0;
    }
    if (parse_int(s, dash, &r->lo) < 0)
        return -1;
    if (dash + 1 == end) {
        r->hi = INT64_MAX;
        return 0;
    }
    if (parse_int(dash + 1, end, &r->hi) < 0)
        return -1;
    return r->lo <= r->hi ? 0 : -1;
}

static int parse_clause(const char *s, const char *end, ts_clause *c, char *why, size_t cap)
{
    const char *colon = memchr(s, ':', (size_t)(end - s));
    const char *lend = colon ? colon : end;
    char lvl[32];

    memset(c, 0, sizeof(*c));
    c->step_lo = INT64_MIN;
    c->step_hi = INT64_MAX;
    if ((size_t)(lend - s) >= sizeof(lvl) || lend == s) {
        snprintf(why, cap, "a clause needs a level (metrics, collectives, modules, ops or off)");
        return -1;
    }
    memcpy(lvl, s, (size_t)(lend - s));
    lvl[lend - s] = 0;
    if (strcmp(lvl, "off") == 0 || strcmp(lvl, "none") == 0) {
        c->level = -1;
    } else if ((c->level = level_parse(lvl)) < 0) {
        snprintf(why, cap, "unknown level '%s' (use metrics, collectives, modules, ops or off)", lvl);
        return -1;
    }
    while (colon) {
        const char *p = colon + 1;
        colon = memchr(p, ':', (size_t)(end - p));
        const char *oend = colon ? colon : end;
        if ((size_t)(oend - p) >= 6 && strncmp(p, "steps=", 6) == 0) {
            ts_range r;
            if (parse_range(p + 6, oend, &r) < 0) {
                snprintf(why, cap, "bad step window '%.*s' (use A-B, A, A- or -B)", (int)(oend - p - 6), p + 6);
                return -1;
            }
            c->step_lo = r.lo;
            c->step_hi = r.hi;
        } else if ((size_t)(oend - p) >= 6 && strncmp(p, "ranks=", 6) == 0) {
            const char *q = p + 6;
            while (q < oend) {
                const char *comma = memchr(q, ',', (size_t)(oend - q));
                const char *rend = comma ? comma : oend;
                if (c->n_ranks == TS_MAX_RANGES) {
                    snprintf(why, cap, "more than %d rank ranges in one clause", TS_MAX_RANGES);
                    return -1;
                }
                if (parse_range(q, rend, &c->ranks[c->n_ranks]) < 0) {
                    snprintf(why, cap, "bad rank list '%.*s' (use e.g. 0,4-7)", (int)(oend - p - 6), p + 6);
                    return -1;
                }
                c->n_ranks++;
                q = comma ? comma + 1 : oend;
            }
        } else {
            snprintf(why, cap, "unknown option '%.*s' (use steps=A-B or ranks=LIST)", (int)(oend - p), p);
            return -1;
        }
    }
    return 0;
}

int ts_parse(const char *s, trace_spec *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    if (!s || !*s)
        s = TS_DEFAULT;
    const char *p = s;
    const char *end = s + strlen(s);
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *cend = semi ? semi : end;
        if (cend > p) {
            if (out->n == TS_MAX_CLAUSES) {
                snprintf(why, cap, "more than %d clauses", TS_MAX_CLAUSES);
                return -1;
            }
            if (parse_clause(p, cend, &out->c[out->n], why, cap) < 0)
                return -1;
            out->n++;
        }
        p = semi ? semi + 1 : end;
    }
    return 0;
}

/* admits - 1 when a clause admits the record: the step window ignored when `any_step`; with `windowed`, only
 * clauses with a bounded step window count. */
static int admits(const trace_spec *ts, int level, int64_t step, int64_t rank, int any_step, int windowed)
{
    for (int i = 0; i < ts->n; i++) {
        const ts_clause *c = &ts->c[i];
        if (level > c->level || (!any_step && (step < c->step_lo || step > c->step_hi)))
            continue;
        if (windowed && c->step_lo == INT64_MIN && c->step_hi == INT64_MAX)
            continue;
        if (c->n_ranks == 0)
            return 1;
        for (int k = 0; k < c->n_ranks; k++)
            if (rank >= c->ranks[k].lo && rank <= c->ranks[k].hi)
                return 1;
    }
    return 0;
}

int ts_admits(const trace_spec *ts, int level, int64_t step, int64_t rank)
{
    return admits(ts, level, step, rank, 0, 0);
}

int ts_admits_any_step(const trace_spec *ts, int level, int64_t rank)
{
    return admits(ts, level, 0, rank, 1, 0);
}

int ts_in_window(const trace_spec *ts, int level, int64_t step, int64_t rank)
{
    return admits(ts, level, step, rank, 0, 1);
}
