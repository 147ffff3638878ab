/* nodes.c - the hardware suspects endpoints: nodes with their GPUs and scores, a node's history, admin node actions. */
#include "server/api/nodes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/alerts/alerts.h"
#include "server/fleet/fleet_thread.h"
#include "server/fleet/node_read.h"
#include "server/rules/score.h"
#include "server/fleet/slurm_action.h"
#include "server/http/reply.h"
#include "server/http/route.h"

/* first_gpu - the first row of `gpus` (sorted by node in C collation) on node `node`, or PQntuples. */
static int first_gpu(PGresult *gpus, const char *node)
{
    int lo = 0, hi = gpus ? PQntuples(gpus) : 0;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(PQgetvalue(gpus, mid, 1), node) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* node_obj - node row `i` of node_read_page (server/fleet/node_read.h), with its GPUs from `gpus` (sorted by node, C
 * collation) and the fleet baseline `fleet` (the same for every node: score_fleet_baseline). Its own "reference_rate"
 * is what its score compares against: the rest of the fleet's rate, stored by the fleet pass (hw_nodes.baseline). */
static json_t *node_obj(PGresult *r, int i, PGresult *gpus, double fleet)
{
    double k = atof(PQgetvalue(r, i, 3)), n = atof(PQgetvalue(r, i, 4));
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:I, s:f, s:f, s:o, s:s, s:s, s:s}", "name", PQgetvalue(r, i, 0),
                          "state", PQgetvalue(r, i, 1), "score", pg_real(r, i, 2), "involvements", pg_real(r, i, 3),
                          "runs", (json_int_t)n, "rate", n > 0 ? k / n : 0.0, "baseline", fleet, "reference_rate",
                          pg_real(r, i, 5), "state_since", PQgetvalue(r, i, 6), "first_seen", PQgetvalue(r, i, 7),
                          "last_seen", PQgetvalue(r, i, 8));
    json_t *list = json_array();
    const char *name = PQgetvalue(r, i, 0);
    for (int g = first_gpu(gpus, name); gpus && g < PQntuples(gpus) && !strcmp(PQgetvalue(gpus, g, 1), name); g++)
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:o, s:o, s:I}", "uuid", PQgetvalue(gpus, g, 0), "name",
                                              PQgetvalue(gpus, g, 2), "state", PQgetvalue(gpus, g, 3), "score",
                                              pg_real(gpus, g, 4), "involvements", pg_real(gpus, g, 5), "runs",
                                              (json_int_t)atof(PQgetvalue(gpus, g, 6))));
    json_object_set_new(o, "gpus", list);
    return o;
}

/* fleet_totals - how many nodes the fleet has and its fleet baseline (score_fleet_baseline over every node's
 * involvements and runs since its last repair). Returns 0, or -1 with the database's message. */
static int fleet_totals(long long *count, double *baseline, char *err, size_t cap)
{
    PGresult *t = node_read_totals(err, cap);
    if (!t)
        return -1;
    *count = strtoll(PQgetvalue(t, 0, 0), NULL, 10);
    *baseline = score_fleet_baseline(atof(PQgetvalue(t, 0, 1)), atof(PQgetvalue(t, 0, 2)));
    PQclear(t);
    return 0;
}

/* load_nodes - nodes as JSON, highest score first: the one named, or `limit` of them from position `offset`
 * (with their GPUs and the fleet baseline); NULL on error. *more is set when nodes follow the page; *count and
 * *baseline, when not NULL, are how many nodes the fleet has and its fleet baseline. */
static json_t *load_nodes(const char *name, long long limit, long long offset, int *more, long long *count,
                          double *baseline, char *err, size_t cap)
{
    long long all;
    double fleet;
    if (fleet_totals(&all, &fleet, err, cap) < 0)
        return NULL;
    if (count)
        *count = all;
    if (baseline)
        *baseline = fleet;
    PGresult *r = node_read_page(name ? name : "", limit + 1, offset, err, cap);
    if (!r)
        return NULL;
    int n = PQntuples(r) < limit ? PQntuples(r) : (int)limit;
    if (more)
        *more = PQntuples(r) > limit;
    json_t *names = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(names, json_string(PQgetvalue(r, i, 0)));
    char *names_text = json_dumps(names, JSON_COMPACT);
    json_decref(names);
    PGresult *g = node_read_gpus(names_text, err, cap);
    free(names_text);
    if (!g) {
        PQclear(r);
        return NULL;
    }
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, node_obj(r, i, g, fleet));
    PQclear(r);
    PQclear(g);
    return a;
}

static enum MHD_Result nodes_list(http_req *req, char **args)
{
    (void)args;
    char err[512];
    long long limit, offset;
    if (api_page(req, 1000, 5000, "offset", 0, &limit, &offset) < 0)
        return MHD_YES;
    int more = 0;
    long long count = 0;
    double fleet = 0;
    json_t *a = load_nodes(NULL, limit, offset, &more, &count, &fleet, err, sizeof(err));
    if (!a)
        return http_reply_db_down(req, err);
    json_t *o = api_list(a, count, limit, more ? offset + limit : -1);
    json_object_set_new(o, "baseline", json_real(fleet)); /* the fleet baseline, as every node says it too */
    json_object_set_new(o, "thresholds",
                        json_pack("{s:f, s:f, s:f, s:f}", "suspect", g_srv.cfg.suspect_threshold, "min_evidence",
                                  g_srv.cfg.suspect_min_evidence, "ratio", g_srv.cfg.suspect_ratio, "prior",
                                  g_srv.cfg.suspect_prior));
    return http_reply_json(req, 200, o);
}

static enum MHD_Result unknown_node(http_req *req, const char *name)
{
    char d[300];
    snprintf(d, sizeof(d), "no node named \"%.200s\" has been seen", name);
    return http_reply_error(req, 404, "unknown node", d,
                            "nodes appear once a twin group they ran in is evaluated; "
                            "see GET /api/v1/nodes");
}

static enum MHD_Result node_get(http_req *req, char **args)
{
    const char *name = args[0];
    char err[512];
    json_t *a = load_nodes(name, 1, 0, NULL, NULL, NULL, err, sizeof(err));
    if (!a)
        return http_reply_db_down(req, err);
    if (!json_array_size(a)) {
        json_decref(a);
        return unknown_node(req, name);
    }
    json_t *o = json_pack("{s:O}", "node", json_array_get(a, 0));
    json_decref(a);
    return http_reply_json(req, 200, o);
}

/* event_obj - history event row `i` of node_read_history or node_read_event (server/fleet/node_read.h). */
static json_t *event_obj(PGresult *r, int i)
{
    json_t *o = json_pack("{s:I, s:s, s:s, s:o, s:o, s:o}", "id", (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10),
                          "kind", PQgetvalue(r, i, 1), "at", PQgetvalue(r, i, 2), "group", pg_str(r, i, 3), "run_id",
                          pg_str(r, i, 4), "gpu", pg_str(r, i, 5));
    json_object_set_new(o, "step",
                        PQgetisnull(r, i, 6) ? json_null() : json_integer(strtoll(PQgetvalue(r, i, 6), NULL, 10)));
    json_object_set_new(o, "rank", PQgetisnull(r, i, 7) ? json_null() : json_integer(atoi(PQgetvalue(r, i, 7))));
    json_object_set_new(o, "weight", PQgetisnull(r, i, 8) ? json_null() : pg_real(r, i, 8));
    json_object_set_new(o, "score", PQgetisnull(r, i, 9) ? json_null() : pg_real(r, i, 9));
    json_object_set_new(o, "state", pg_str(r, i, 10));
    json_object_set_new(o, "actor", pg_str(r, i, 11));
    json_object_set_new(o, "detail", json_string(PQgetvalue(r, i, 12)));
    /* score and state events: the involvements and runs the score was computed from (null before they were kept) */
    json_object_set_new(o, "involvements", pg_real(r, i, 13));
    json_object_set_new(o, "runs", pg_real(r, i, 14));
    return o;
}

/* The node page's charts read at most this many events (its newest). */
#define TIMELINE_MAX 2000

/* node_timeline - GET /api/v1/nodes/{name}/timeline: the node's score, involvements and runs over time, oldest
 * first: each score or state event (the fleet pass writes one when the score or the involvements move), each repair
 * (evidence afresh: all three 0), and the node as it stands now; with the thresholds the score is judged by. */
static enum MHD_Result node_timeline(http_req *req, char **args)
{
    const char *name = args[0];
    char err[512];
    PGresult *n = node_read_now(name, err, sizeof(err));
    if (!n)
        return http_reply_db_down(req, err);
    if (PQntuples(n) == 0) {
        PQclear(n);
        return unknown_node(req, name);
    }
    PGresult *r = node_read_timeline(name, TIMELINE_MAX, err, sizeof(err));
    if (!r) {
        PQclear(n);
        return http_reply_db_down(req, err);
    }
    json_t *pts = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(pts, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "at", PQgetvalue(r, i, 2), "kind",
                                             PQgetvalue(r, i, 1), "score", pg_real(r, i, 3), "involvements",
                                             pg_real(r, i, 4), "runs", pg_real(r, i, 5), "state", pg_str(r, i, 6)));
    json_array_append_new(pts, json_pack("{s:s, s:s, s:o, s:o, s:o, s:s}", "at", PQgetvalue(n, 0, 0), "kind", "now",
                                         "score", pg_real(n, 0, 1), "involvements", pg_real(n, 0, 2), "runs",
                                         pg_real(n, 0, 3), "state", PQgetvalue(n, 0, 4)));
    int cut = PQntuples(r) == TIMELINE_MAX;
    PQclear(r);
    PQclear(n);
    return http_reply_json(req, 200,
                           json_pack("{s:s, s:o, s:b, s:{s:f, s:f}}", "node", name, "points", pts, "truncated", cut,
                                     "thresholds", "suspect", g_srv.cfg.suspect_threshold, "min_evidence",
                                     g_srv.cfg.suspect_min_evidence));
}

static enum MHD_Result node_history(http_req *req, char **args)
{
    const char *name = args[0];
    long long limit, cursor;
    if (api_page(req, 200, 1000, "before", INT64_MAX, &limit, &cursor) < 0)
        return MHD_YES;
    char err[512];
    PGresult *e = node_read_known(name, err, sizeof(err));
    if (!e)
        return http_reply_db_down(req, err);
    int known = PQntuples(e) > 0;
    PQclear(e);
    if (!known)
        return unknown_node(req, name);
    PGresult *r = node_read_history(name, cursor, limit, err, sizeof(err));
    if (!r)
        return http_reply_db_down(req, err);
    json_t *ev = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(ev, event_obj(r, i));
    long long next = PQntuples(r) == limit ? strtoll(PQgetvalue(r, PQntuples(r) - 1, 0), NULL, 10) : -1;
    PQclear(r);
    json_t *o = api_list(ev, -1, limit, next);
    json_object_set_new(o, "node", json_string(name));
    return http_reply_json(req, 200, o);
}

static enum MHD_Result node_action(http_req *req, char **args)
{
    const char *name = args[0];
    json_t *b = req->len ? json_loadb(req->body, req->len, 0, NULL) : NULL;
    const char *action = b ? json_string_value(json_object_get(b, "action")) : NULL;
    const char *reason = b ? json_string_value(json_object_get(b, "reason")) : NULL;
    const char *actor = b ? json_string_value(json_object_get(b, "actor")) : NULL;
    if (!action || (strcmp(action, "drain") && strcmp(action, "repair") && strcmp(action, "note"))) {
        json_decref(b);
        return http_reply_error(req, 400, "bad action",
                                "the body is {\"action\": \"drain\" | \"repair\" | \"note\", "
                                "\"reason\": TEXT, \"actor\": NAME}",
                                "see docs/suspects.md");
    }
    char err[512], detail[700];
    snprintf(detail, sizeof(detail), "%s%s%s", action, reason && *reason ? ": " : "", reason ? reason : "");
    const char *state = !strcmp(action, "drain") ? "drained" : !strcmp(action, "repair") ? "repaired" : NULL;
    enum MHD_Result res;
    int known = 0, resolved = 0;
    char id[32];
    if (node_act(name, state, actor ? actor : "admin", detail, &known, &resolved, id, sizeof(id), err, sizeof(err)) < 0)
        goto out_db;
    if (!known) {
        json_decref(b);
        return unknown_node(req, name);
    }
    if (state)
        slurm_apply(name, !strcmp(state, "drained"), reason && *reason ? reason : "drained by an admin");
    if (resolved)
        alert_notify();
    fleet_kick();
    PGresult *r = node_read_event(id, err, sizeof(err));
    json_t *nodes = r ? load_nodes(name, 1, 0, NULL, NULL, NULL, err, sizeof(err)) : NULL;
    if (!nodes) {
        PQclear(r);
        goto out_db;
    }
    json_t *o = json_pack("{s:O, s:o}", "node", json_array_get(nodes, 0), "event", event_obj(r, 0));
    json_decref(nodes);
    PQclear(r);
    json_decref(b);
    return http_reply_json(req, 200, o);
out_db:
    json_decref(b);
    res = http_reply_db_down(req, err);
    return res;
}

static const route ROUTES[] = {
    {"GET", "/api/v1/nodes", MR_READ, AUTH_READ, nodes_list, .reads = 1},
    {"GET", "/api/v1/nodes/{}", MR_READ, AUTH_READ, node_get, .reads = 1},
    {"GET", "/api/v1/nodes/{}/history", MR_READ, AUTH_READ, node_history, .reads = 1},
    {"GET", "/api/v1/nodes/{}/timeline", MR_READ, AUTH_READ, node_timeline, .reads = 1},
    {"POST", "/api/v1/nodes/{}/actions", MR_ADMIN, AUTH_ADMIN, node_action},
};

void api_nodes_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
