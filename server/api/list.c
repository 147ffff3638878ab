/* list.c - the one envelope of every list endpoint, and its paging arguments. */
#include "server/api/list.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
