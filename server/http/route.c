/* route.c - the route table: match method and raw path against the registered patterns, check the auth class and the
 * route's own check before any body is read, call the handler. */
#include "server/http/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "server/core/limits.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/http/auth.h"
#include "server/http/reply.h"

#define MAX_TABLES 32
#define MAX_SEGS 8

static struct {
    const route *table;
    size_t n;
} tables[MAX_TABLES];
static size_t n_tables;
static route_fn fallback;
static int fallback_metric = MR_OTHER;

void route_add(const route *table, size_t n)
{
    if (n_tables < MAX_TABLES)
        tables[n_tables++] = (typeof(tables[0])){table, n};
}

void route_set_fallback(route_fn fn, int metric)
{
    fallback = fn;
    fallback_metric = metric;
}

/* split_raw - the segments of the raw path at `p` (up to '?' or its end), each percent-decoded in place
 * into `buf` (as long as the path), empty segments skipped. Returns how many, or -1 past MAX_SEGS. */
static int split_raw(const char *p, char *buf, char **segs)
{
    int n = 0;
    char *o = buf;
    while (*p && *p != '?') {
        if (*p == '/') {
            p++;
            continue;
        }
        if (n == MAX_SEGS)
            return -1;
        segs[n++] = o;
        while (*p && *p != '/' && *p != '?') {
            int hi, lo;
            if (*p == '%' && (hi = text_hex_digit(p[1])) >= 0 && (lo = text_hex_digit(p[2])) >= 0) {
                *o++ = (char)(hi * 16 + lo);
                p += 3;
            } else {
                *o++ = *p++;
            }
        }
        *o++ = 0;
    }
    return n;
}

/* split_pattern - the segments of a route pattern (in place in `buf`). */
static int split_pattern(char *buf, char **segs)
{
    int n = 0;
    char *save = NULL;
    for (char *s = strtok_r(buf, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (n == MAX_SEGS)
            return -1;
        segs[n++] = s;
    }
    return n;
}

/* matches - 1 when `pattern` matches the segments, with the {} segments in `args`. */
static int matches(const char *pattern, char **segs, int n, char **args)
{
    char pbuf[256], *ps[MAX_SEGS];
    snprintf(pbuf, sizeof(pbuf), "%s", pattern);
    int pn = split_pattern(pbuf, ps);
    if (pn != n)
        return 0;
    int a = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(ps[i], "{}")) {
            if (a < ROUTE_MAX_ARGS)
                args[a++] = segs[i];
        } else if (strcmp(ps[i], segs[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

static int method_is(const http_req *req, const char *m)
{
    if (!strcmp(m, "GET"))
        return !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
    return !strcmp(req->method, m);
}

static int not_found(http_req *req)
{
    char detail[300];
    snprintf(detail, sizeof(detail), "no endpoint at %.250s", req->url);
    http_reply_error(req, 404, "not found", detail, "the API lives under /api/v1; see docs/server.md");
    return -1;
}

static int not_allowed(http_req *req, const char *allow)
{
    char detail[160];
    snprintf(detail, sizeof(detail), "%.20s is not allowed here; use %s", req->method, allow);
    req->allow = allow;
    req->route_metric = MR_OTHER;
    http_reply_error(req, 405, "method not allowed", detail, "see docs/server.md for the endpoints");
    req->allow = NULL;
    return -1;
}

int route_begin(http_req *req)
{
    const char *raw = req->target ? req->target : req->url;
    size_t rl = strlen(raw);
    if (rl >= HTTP_TARGET_MAX) {
        http_reply_error(req, 414, "URL too long", "request targets are limited to " HTTP_TARGET_MAX_TEXT " bytes",
                         "send long lists in a request body");
        return -1;
    }
    char *segs[MAX_SEGS];
    req->segbuf = xmalloc(rl + 1);
    int n = split_raw(raw, req->segbuf, segs);
    char allow[64] = "";
    for (size_t t = 0; n >= 0 && t < n_tables; t++)
        for (size_t i = 0; i < tables[t].n; i++) {
            const route *r = &tables[t].table[i];
            char *args[ROUTE_MAX_ARGS] = {0};
            if (!matches(r->pattern, segs, n, args))
                continue;
            if (method_is(req, r->method)) {
                req->route = r;
                memcpy(req->args, args, sizeof(args));
                req->route_metric = r->metric;
                req->body_max = r->max_body == ROUTE_BODY_CONFIG ? g_srv.cfg.max_body
                                : r->max_body                    ? r->max_body
                                                                 : HTTP_BODY_DEFAULT;
                if ((r->auth == AUTH_READ && http_auth_read(req) < 0) ||
                    (r->auth == AUTH_ADMIN && http_auth_admin(req) < 0))
                    return -1;
                return r->check ? r->check(req, req->args) : 0;
            }
            if (!strstr(allow, r->method)) {
                size_t l = strlen(allow);
                snprintf(allow + l, sizeof(allow) - l, "%s%s%s", l ? ", " : "", r->method,
                         !strcmp(r->method, "GET") ? ", HEAD" : "");
            }
        }
    if (allow[0])
        return not_allowed(req, allow);
    if (!strncmp(req->url, "/api/", 5) || !strcmp(req->url, "/api") || !fallback)
        return not_found(req);
    req->route_metric = fallback_metric;
    if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD"))
        return not_allowed(req, "GET, HEAD");
    req->body_max = 0; /* static files take no body */
    return 0;
}

static const route_reads_hooks *reads_hooks;

void route_set_reads(const route_reads_hooks *h)
{
    reads_hooks = h;
}

enum MHD_Result route_dispatch(http_req *req)
{
    const route *r = req->route;
    if (!r)
        return fallback(req, NULL);
    if (!r->reads || !reads_hooks)
        return r->fn(req, req->args);
    if (reads_hooks->begin()) {
        req->reads_on = reads_hooks->on;
        req->read_lag = reads_hooks->lag();
    }
    enum MHD_Result res = r->fn(req, req->args);
    reads_hooks->end();
    return res;
}
