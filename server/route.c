/* route.c - map method and path to lockstepd's handlers (the exact paths of docs/server.md). */
#include <stdio.h>
#include <string.h>

#include "server/series.h"
#include "server/admin.h"
#include "server/http.h"
#include "server/hwapi.h"
#include "server/ingest.h"
#include "server/metrics.h"
#include "server/read.h"
#include "server/webfiles.h"

#define MAX_SEGS 8

/* split - the path's segments after "/api/v1" (in place in `buf`); -1 when too many. */
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

static enum MHD_Result method_not_allowed(http_req *req, const char *allowed)
{
    char detail[160];
    snprintf(detail, sizeof(detail), "%s is not allowed here; use %s", req->method, allowed);
    return http_reply_error(req, 405, "method not allowed", detail, "see docs/server.md for the endpoints");
}

static enum MHD_Result not_found(http_req *req)
{
    char detail[300];
    snprintf(detail, sizeof(detail), "no endpoint at %.250s", req->url);
    return http_reply_error(req, 404, "not found", detail, "the API lives under /api/v1; see docs/server.md");
}

/* route_hw - the nodes and alerts endpoints (server/hwapi.c). */
static enum MHD_Result route_hw(http_req *req, char **s, int n, int get, int post)
{
    int nodes = !strcmp(s[0], "nodes");
    req->route = post ? MR_ADMIN : MR_READ;
    if (n == 1)
        return get ? (nodes ? hw_nodes_list(req) : hw_alerts_list(req)) : method_not_allowed(req, "GET");
    if (nodes && n == 2)
        return get ? hw_node_get(req, s[1]) : method_not_allowed(req, "GET");
    if (nodes && n == 3 && !strcmp(s[2], "history"))
        return get ? hw_node_history(req, s[1]) : method_not_allowed(req, "GET");
    if (nodes && n == 3 && !strcmp(s[2], "actions"))
        return post ? hw_node_action(req, s[1]) : method_not_allowed(req, "POST");
    if (!nodes && n == 3 && !strcmp(s[2], "ack"))
        return post ? hw_alert_ack(req, s[1]) : method_not_allowed(req, "POST");
    return not_found(req);
}

static enum MHD_Result api(http_req *req, char **s, int n)
{
    int get = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
    int post = strcmp(req->method, "POST") == 0;

    if (n == 1 && !strcmp(s[0], "health")) {
        req->route = MR_HEALTH;
        return get ? read_health(req) : method_not_allowed(req, "GET");
    }
    if (n >= 1 && !strcmp(s[0], "runs")) {
        if (n == 1) {
            req->route = post ? MR_RUNS_CREATE : MR_READ;
            if (post)
                return ingest_run_create(req);
            return get ? read_runs(req) : method_not_allowed(req, "GET or POST");
        }
        if (n == 2) {
            req->route = MR_READ;
            return get ? read_run(req, s[1]) : method_not_allowed(req, "GET");
        }
        if (n == 3 && !strcmp(s[2], "records")) {
            req->route = post ? MR_RECORDS : MR_READ;
            if (post)
                return ingest_records(req, s[1]);
            return get ? read_run_records(req, s[1]) : method_not_allowed(req, "GET or POST");
        }
        if (n == 3 && !strcmp(s[2], "series")) {
            req->route = MR_READ;
            return get ? read_run_series(req, s[1]) : method_not_allowed(req, "GET");
        }
        if (n == 3 && !strcmp(s[2], "manifest")) {
            req->route = MR_MANIFEST;
            return post ? ingest_manifest(req, s[1]) : method_not_allowed(req, "POST");
        }
        if (n == 3 && !strcmp(s[2], "end")) {
            req->route = MR_END;
            return post ? ingest_end(req, s[1]) : method_not_allowed(req, "POST");
        }
    }
    if (n >= 2 && !strcmp(s[0], "twins")) {
        req->route = MR_READ;
        if (!get)
            return method_not_allowed(req, "GET");
        if (n == 2)
            return read_twins(req, s[1]);
        if (n == 3 && !strcmp(s[2], "steps"))
            return read_twin_steps(req, s[1]);
        if (n == 3 && !strcmp(s[2], "manifest-diff"))
            return read_manifest_diff(req, s[1]);
    }
    if (n == 2 && !strcmp(s[0], "admin") && !strcmp(s[1], "tokens")) {
        req->route = MR_ADMIN;
        return post ? admin_mint_token(req) : method_not_allowed(req, "POST");
    }
    if (n == 2 && !strcmp(s[0], "admin") && !strcmp(s[1], "retention")) {
        req->route = MR_ADMIN;
        return post ? read_admin_retention(req) : method_not_allowed(req, "POST");
    }
    if (n >= 1 && (!strcmp(s[0], "nodes") || !strcmp(s[0], "alerts"))) /* docs/suspects.md */
        return route_hw(req, s, n, get, post);
    return not_found(req);
}

enum MHD_Result route_dispatch(http_req *req)
{
    char buf[2048];
    char *segs[MAX_SEGS];
    if (strlen(req->url) >= sizeof(buf))
        return http_reply_error(req, 414, "URL too long", "paths are limited to 2047 bytes", "");
    snprintf(buf, sizeof(buf), "%s", req->url);
    if (!strcmp(req->url, "/metrics")) {
        req->route = MR_METRICS;
        return read_metrics(req);
    }
    if (!strncmp(req->url, "/api/v1/", 8) || !strcmp(req->url, "/api/v1")) {
        int n = split(buf + 7, segs);
        if (n < 0)
            return not_found(req);
        return api(req, segs, n);
    }
    if (!strncmp(req->url, "/api/", 5))
        return not_found(req);
    req->route = MR_STATIC;
    return web_serve(req);
}
