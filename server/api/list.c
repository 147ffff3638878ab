/* list.c - the one envelope of every list endpoint, and its paging arguments. */
#include "server/api/list.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/reply.h"

int api_int_arg(http_req *req, const char *key, long long lo, long long hi, long long dflt, long long *out)
{
    const char *s = http_query(req, key);
    if (!s || !*s) {
        *out = dflt;
        return 0;
    }
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || v < lo || v > hi) {
        char detail[200];
        snprintf(detail, sizeof(detail), "?%s=%.40s must be an integer in %lld..%lld", key, s, lo, hi);
        http_reply_error(req, 400, "bad query argument", detail, "see docs/server.md");
        return -1;
    }
    *out = v;
    return 0;
}

int api_page(http_req *req, long long dflt, long long max, const char *legacy, long long first, long long *limit,
             long long *cursor)
{
    if (api_int_arg(req, "limit", 1, max, dflt, limit) < 0)
        return -1;
    const char *key = http_query(req, "cursor") || !legacy ? "cursor" : legacy;
    return api_int_arg(req, key, 0, INT64_MAX, first, cursor);
}

/* digits - `n` digits at *p, as a number in lo..hi; advances *p. -1 when not. */
static int digits(const char **p, int n, int lo, int hi)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return v < lo || v > hi ? -1 : v;
}

/* time_ok - `s` is one of api_time_arg's forms; *date_only and *zoned say which. */
static int time_ok(const char *s, int *date_only, int *zoned)
{
    const char *p = s;
    if (digits(&p, 4, 1, 9999) < 0 || *p++ != '-' || digits(&p, 2, 1, 12) < 0 || *p++ != '-' ||
        digits(&p, 2, 1, 31) < 0)
        return 0;
    *date_only = !*p;
    *zoned = 0;
    if (!*p)
        return 1;
    if ((*p != 'T' && *p != ' ') || (p++, digits(&p, 2, 0, 23) < 0) || *p++ != ':' || digits(&p, 2, 0, 59) < 0)
        return 0;
    if (*p == ':') {
        p++;
        if (digits(&p, 2, 0, 60) < 0)
            return 0;
        if (*p == '.') {
            int n = 0;
            for (p++; isdigit((unsigned char)*p); p++)
                n++;
            if (n < 1 || n > 9)
                return 0;
        }
    }
    if (*p == 'Z' && !p[1]) {
        *zoned = 1;
        return 1;
    }
    if (*p == '+' || *p == '-') {
        p++;
        if (digits(&p, 2, 0, 14) < 0)
            return 0;
        if (*p == ':')
            p++;
        if (*p && digits(&p, 2, 0, 59) < 0)
            return 0;
        *zoned = 1;
    }
    return !*p;
}

int api_time_arg(http_req *req, const char *key, char *out, size_t cap)
{
    const char *s = http_query(req, key);
    out[0] = 0;
    if (!s || !*s)
        return 0;
    int date_only = 0, zoned = 0;
    if (strlen(s) > 40 || !time_ok(s, &date_only, &zoned)) {
        char detail[200];
        snprintf(detail, sizeof(detail), "?%s=%.40s is not a time", key, s);
        http_reply_error(req, 400, "bad query argument", detail,
                         "give a UTC day (2026-11-29) or an ISO 8601 time (2026-11-29T12:00:00Z)");
        return -1;
    }
    snprintf(out, cap, "%s%s", s, date_only ? "T00:00:00Z" : zoned ? "" : "Z");
    return 0;
}

json_t *api_list(json_t *items, long long total, long long limit, long long next_cursor)
{
    json_t *o = json_object();
    json_object_set_new(o, "items", items);
    json_object_set_new(o, "total", total >= 0 ? json_integer(total) : json_null());
    json_object_set_new(o, "limit", json_integer(limit));
    if (next_cursor >= 0) {
        char c[32];
        snprintf(c, sizeof(c), "%lld", next_cursor);
        json_object_set_new(o, "next_cursor", json_string(c));
    } else {
        json_object_set_new(o, "next_cursor", json_null());
    }
    return o;
}
