/* route.c - the route table: match method and path against the registered patterns, check the auth class, call the handler. */
#include "server/http/route.h"

#include <stdio.h>
#include <string.h>

#include "server/core/metrics.h"
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

/* split - the segments of `path` (in place in `buf`, empty segments skipped); -1 when there are too many. */
static int split(char *buf, char **segs)
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
    int pn = split(pbuf, ps);
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

static enum MHD_Result not_found(http_req *req)
{
    char detail[300];
    snprintf(detail, sizeof(detail), "no endpoint at %.250s", req->url);
    return http_reply_error(req, 404, "not found", detail, "the API lives under /api/v1; see docs/server.md");
}

static enum MHD_Result call(http_req *req, const route *r, char **args)
{
    req->route = r->metric;
    if ((r->auth == AUTH_READ && http_auth_read(req) < 0) || (r->auth == AUTH_ADMIN && http_auth_admin(req) < 0))
        return MHD_YES;
    return r->fn(req, args);
}

enum MHD_Result route_dispatch(http_req *req)
{
    char buf[2048];
    char *segs[MAX_SEGS];
    if (strlen(req->url) >= sizeof(buf))
        return http_reply_error(req, 414, "URL too long", "paths are limited to 2047 bytes", "");
    snprintf(buf, sizeof(buf), "%s", req->url);
    int n = split(buf, segs);
    char allow[64] = "";
    if (n >= 0) {
        for (size_t t = 0; t < n_tables; t++)
            for (size_t i = 0; i < tables[t].n; i++) {
                const route *r = &tables[t].table[i];
                char *args[ROUTE_MAX_ARGS] = {0};
                if (!matches(r->pattern, segs, n, args))
                    continue;
                if (method_is(req, r->method))
                    return call(req, r, args);
                if (!strstr(allow, r->method)) {
                    size_t l = strlen(allow);
                    snprintf(allow + l, sizeof(allow) - l, "%s%s%s", l ? ", " : "", r->method,
                             !strcmp(r->method, "GET") ? ", HEAD" : "");
                }
            }
    }
    if (allow[0]) {
        char detail[160];
        snprintf(detail, sizeof(detail), "%.20s is not allowed here; use %s", req->method, allow);
        req->allow = allow;
        req->route = MR_OTHER;
        enum MHD_Result r = http_reply_error(req, 405, "method not allowed", detail, "see docs/server.md for the endpoints");
        req->allow = NULL;
        return r;
    }
    if (!strncmp(req->url, "/api/", 5) || !strcmp(req->url, "/api") || !fallback)
        return not_found(req);
    req->route = fallback_metric;
    return fallback(req, NULL);
}
