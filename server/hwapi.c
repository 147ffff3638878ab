/* hwapi.c - the suspects and alerts endpoints: nodes, node detail and history, admin node actions, alerts and acknowledging them. */
#include "server/hwapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/hwcfg.h"
#include "server/hwdb.h"
#include "server/slurm_action.h"
#include "server/suspects.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define NODE_COLS                                                                                                      \
    "name, state, score, involvements, exposures, baseline, " TS("state_since") ", " TS("first_seen") ", " TS(         \
        "last_seen")

static enum MHD_Result db_down(http_req *req, const char *err)
{
    return http_reply_error(req, 503, "database error", err, "retry later; check PostgreSQL and the lockstepd log");
}

static int need_admin(http_req *req)
{
    if (http_is_admin(req))
        return 0;
    int none = !http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
    http_reply_error(req, none ? 401 : 403, none ? "authentication required" : "admin token required",
                     "this is an admin endpoint", "send Authorization: Bearer <admin token>");
    return -1;
}

static json_t *num(PGresult *r, int i, int c)
{
    return json_real(atof(PQgetvalue(r, i, c)));
}

static json_t *str_or_null(PGresult *r, int i, int c)
{
    return PQgetisnull(r, i, c) ? json_null() : json_string(PQgetvalue(r, i, c));
}

/* node_obj - node row `i` of a NODE_COLS result, with its GPUs from `gpus`. */
static json_t *node_obj(PGresult *r, int i, PGresult *gpus)
{
    double k = atof(PQgetvalue(r, i, 3)), n = atof(PQgetvalue(r, i, 4));
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:I, s:f, s:o, s:s, s:s, s:s}", "name", PQgetvalue(r, i, 0), "state",
                          PQgetvalue(r, i, 1), "score", num(r, i, 2), "involvements", num(r, i, 3), "runs",
                          (json_int_t)n, "rate", n > 0 ? k / n : 0.0, "baseline", num(r, i, 5), "state_since",
                          PQgetvalue(r, i, 6), "first_seen", PQgetvalue(r, i, 7), "last_seen", PQgetvalue(r, i, 8));
    json_t *list = json_array();
    for (int g = 0; gpus && g < PQntuples(gpus); g++)
        if (!strcmp(PQgetvalue(gpus, g, 1), PQgetvalue(r, i, 0)))
            json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:o, s:o, s:I}", "uuid", PQgetvalue(gpus, g, 0),
                                                  "name", PQgetvalue(gpus, g, 2), "state", PQgetvalue(gpus, g, 3),
                                                  "score", num(gpus, g, 4), "involvements", num(gpus, g, 5), "runs",
                                                  (json_int_t)atof(PQgetvalue(gpus, g, 6))));
    json_object_set_new(o, "gpus", list);
    return o;
}

/* load_nodes - nodes (all, or the one named) as JSON; NULL on error. */
static json_t *load_nodes(const char *name, char *err, size_t cap)
{
    const char *p[] = {name ? name : ""};
    PGresult *r =
        hw_q("SELECT " NODE_COLS " FROM hw_nodes WHERE $1 = '' OR name = $1 ORDER BY score DESC, name", 1, p, err, cap);
    PGresult *g = r ? hw_q("SELECT uuid, node, name, state, score, involvements, exposures FROM hw_gpus "
                           "WHERE $1 = '' OR node = $1 ORDER BY score DESC, uuid",
                           1, p, err, cap)
                    : NULL;
    if (!g) {
        PQclear(r);
        return NULL;
    }
    json_t *a = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(a, node_obj(r, i, g));
    PQclear(r);
    PQclear(g);
    return a;
}

enum MHD_Result hw_nodes_list(http_req *req)
{
    if (http_auth_read(req) < 0)
        return MHD_YES;
    char err[512];
    json_t *a = load_nodes(NULL, err, sizeof(err));
    if (!a)
        return db_down(req, err);
    double k = 0, n = 0;
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x)
    {
        k += json_real_value(json_object_get(x, "involvements"));
        n += (double)json_integer_value(json_object_get(x, "runs"));
    }
    return http_reply_json(req, 200,
                           json_pack("{s:o, s:f, s:{s:f, s:f, s:f, s:f}}", "nodes", a, "baseline", n > 0 ? k / n : 0.0,
                                     "thresholds", "suspect", g_hw.score.threshold, "min_evidence",
                                     g_hw.score.min_evidence, "ratio", g_hw.score.ratio, "prior", g_hw.score.prior));
}

static enum MHD_Result unknown_node(http_req *req, const char *name)
{
    char d[300];
    snprintf(d, sizeof(d), "no node named \"%.200s\" has been seen", name);
    return http_reply_error(req, 404, "unknown node", d,
                            "nodes appear once a twin group they ran in is evaluated; "
                            "see GET /api/v1/nodes");
}

enum MHD_Result hw_node_get(http_req *req, const char *name)
{
    if (http_auth_read(req) < 0)
        return MHD_YES;
    char err[512];
    json_t *a = load_nodes(name, err, sizeof(err));
    if (!a)
        return db_down(req, err);
    if (!json_array_size(a)) {
        json_decref(a);
        return unknown_node(req, name);
    }
    json_t *o = json_pack("{s:O}", "node", json_array_get(a, 0));
    json_decref(a);
    return http_reply_json(req, 200, o);
}

#define EVENT_COLS                                                                                                     \
    "h.id, h.kind, " TS("h.at") ", h.twin_group, r.run_id::text, h.gpu, h.step, h.rank, h.weight, h.score, "           \
                                "h.state, h.actor, h.detail"

static json_t *event_obj(PGresult *r, int i)
{
    json_t *o = json_pack("{s:I, s:s, s:s, s:o, s:o, s:o}", "id", (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10),
                          "kind", PQgetvalue(r, i, 1), "at", PQgetvalue(r, i, 2), "group", str_or_null(r, i, 3),
                          "run_id", str_or_null(r, i, 4), "gpu", str_or_null(r, i, 5));
    json_object_set_new(o, "step",
                        PQgetisnull(r, i, 6) ? json_null() : json_integer(strtoll(PQgetvalue(r, i, 6), NULL, 10)));
    json_object_set_new(o, "rank", PQgetisnull(r, i, 7) ? json_null() : json_integer(atoi(PQgetvalue(r, i, 7))));
    json_object_set_new(o, "weight", PQgetisnull(r, i, 8) ? json_null() : num(r, i, 8));
    json_object_set_new(o, "score", PQgetisnull(r, i, 9) ? json_null() : num(r, i, 9));
    json_object_set_new(o, "state", str_or_null(r, i, 10));
    json_object_set_new(o, "actor", str_or_null(r, i, 11));
    json_object_set_new(o, "detail", json_string(PQgetvalue(r, i, 12)));
    return o;
}

enum MHD_Result hw_node_history(http_req *req, const char *name)
{
    if (http_auth_read(req) < 0)
        return MHD_YES;
    const char *ls = http_query(req, "limit"), *bs = http_query(req, "before");
    long limit = ls && *ls ? strtol(ls, NULL, 10) : 200;
    if (limit < 1 || limit > 1000)
        return http_reply_error(req, 400, "bad limit", "?limit= must be 1..1000", "page with ?before=ID");
    char lim[16], before[32];
    snprintf(lim, sizeof(lim), "%ld", limit);
    snprintf(before, sizeof(before), "%lld", bs && *bs ? strtoll(bs, NULL, 10) : 9223372036854775807LL);
    char err[512];
    const char *p1[] = {name};
    PGresult *e = hw_q("SELECT 1 FROM hw_nodes WHERE name = $1", 1, p1, err, sizeof(err));
    if (!e)
        return db_down(req, err);
    int known = PQntuples(e) > 0;
    PQclear(e);
    if (!known)
        return unknown_node(req, name);
    const char *p[] = {name, before, lim};
    PGresult *r = hw_q("SELECT " EVENT_COLS " FROM hw_history h LEFT JOIN runs r ON r.run_key = h.run_key "
                       "WHERE h.node = $1 AND h.id < $2::bigint ORDER BY h.id DESC LIMIT $3::int",
                       3, p, err, sizeof(err));
    if (!r)
        return db_down(req, err);
    json_t *ev = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(ev, event_obj(r, i));
    json_t *next =
        PQntuples(r) == limit ? json_integer(strtoll(PQgetvalue(r, PQntuples(r) - 1, 0), NULL, 10)) : json_null();
    PQclear(r);
    return http_reply_json(req, 200, json_pack("{s:s, s:o, s:o}", "node", name, "events", ev, "next_before", next));
}

enum MHD_Result hw_node_action(http_req *req, const char *name)
{
    if (need_admin(req) < 0)
        return MHD_YES;
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
    const char *p[] = {name, state, actor ? actor : "admin", detail};
    enum MHD_Result res;
    if (hw_begin(err, sizeof(err)) < 0)
        goto out_db;
    PGresult *r = hw_q("SELECT state FROM hw_nodes WHERE name = $1 FOR UPDATE", 1, p, err, sizeof(err));
    if (!r)
        goto out_rollback;
    int known = PQntuples(r) > 0;
    PQclear(r);
    if (!known) {
        hw_rollback();
        json_decref(b);
        return unknown_node(req, name);
    }
    if (state && hw_do("UPDATE hw_nodes SET state = $2, state_since = now(), evidence_since = CASE WHEN $2 = "
                       "'repaired' THEN now() ELSE evidence_since END, score = CASE WHEN $2 = 'repaired' THEN 0 ELSE "
                       "score END, involvements = CASE WHEN $2 = 'repaired' THEN 0 ELSE involvements END "
                       "WHERE name = $1",
                       2, p, err, sizeof(err)) < 0)
        goto out_rollback;
    if (state && !strcmp(state, "repaired") &&
        hw_do("UPDATE hw_gpus SET state = 'ok', score = 0 WHERE node = $1", 1, p, err, sizeof(err)) < 0)
        goto out_rollback;
    r = hw_q("INSERT INTO hw_history (node, kind, state, actor, detail) VALUES ($1, 'action', $2, $3, $4) "
             "RETURNING id",
             4, p, err, sizeof(err));
    if (!r)
        goto out_rollback;
    char id[32];
    snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (hw_commit(err, sizeof(err)) < 0)
        goto out_db;
    if (state)
        slurm_apply(name, !strcmp(state, "drained"), reason && *reason ? reason : "drained by an admin");
    susp_kick();
    const char *pi[] = {id};
    r = hw_q("SELECT " EVENT_COLS " FROM hw_history h LEFT JOIN runs r ON r.run_key = h.run_key WHERE h.id = $1", 1, pi,
             err, sizeof(err));
    json_t *nodes = r ? load_nodes(name, err, sizeof(err)) : NULL;
    if (!nodes) {
        PQclear(r);
        goto out_db;
    }
    json_t *o = json_pack("{s:O, s:o}", "node", json_array_get(nodes, 0), "event", event_obj(r, 0));
    json_decref(nodes);
    PQclear(r);
    json_decref(b);
    return http_reply_json(req, 200, o);
out_rollback:
    hw_rollback();
out_db:
    json_decref(b);
    res = db_down(req, err);
    return res;
}

#define ALERT_COLS                                                                                                     \
    "a.id, a.kind, a.twin_group, a.node, a.severity, a.summary, a.body, a.url, a.details::text, " TS(                  \
        "a.created_at") ", " TS("a.acked_at") ", a.acked_by, (SELECT json_agg(json_build_object('sink', d.sink, "      \
                                              "'state', d.state, "                                                     \
                                              "'attempts', d.attempts, 'last_error', d.last_error, "                   \
                                              "'delivered_at', " TS(                                                   \
                                                  "d.delivered_at") ") ORDER BY "                                      \
                                                                    "d.sink) FROM alert_deliveries d WHERE "           \
                                                                    "d.alert_id = a.id)::text"

static json_t *alert_obj(PGresult *r, int i)
{
    json_t *details = json_loads(PQgetvalue(r, i, 8), 0, NULL);
    json_t *deliv = PQgetisnull(r, i, 12) ? json_array() : json_loads(PQgetvalue(r, i, 12), 0, NULL);
    const char *cls = json_string_value(json_object_get(details, "classification"));
    json_t *o = json_pack("{s:I, s:s, s:s, s:o, s:o, s:s, s:s, s:s, s:s, s:s?, s:o, s:s, s:o, s:o, s:o}", "id",
                          (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10), "kind", PQgetvalue(r, i, 1), "created_at",
                          PQgetvalue(r, i, 9), "group", str_or_null(r, i, 2), "node", str_or_null(r, i, 3), "severity",
                          PQgetvalue(r, i, 4), "summary", PQgetvalue(r, i, 5), "text", PQgetvalue(r, i, 6), "url",
                          PQgetvalue(r, i, 7), "classification", cls, "details", details ? details : json_object(),
                          "state", PQgetisnull(r, i, 10) ? "open" : "acknowledged", "acked_at", str_or_null(r, i, 10),
                          "acked_by", str_or_null(r, i, 11), "deliveries", deliv ? deliv : json_array());
    return o;
}

enum MHD_Result hw_alerts_list(http_req *req)
{
    if (http_auth_read(req) < 0)
        return MHD_YES;
    const char *ls = http_query(req, "limit"), *os = http_query(req, "offset"), *ks = http_query(req, "kind");
    long limit = ls && *ls ? strtol(ls, NULL, 10) : 100, offset = os && *os ? strtol(os, NULL, 10) : 0;
    if (limit < 1 || limit > 1000 || offset < 0)
        return http_reply_error(req, 400, "bad paging", "?limit= must be 1..1000 and ?offset= >= 0", "");
    char lim[16], off[32], err[512];
    snprintf(lim, sizeof(lim), "%ld", limit);
    snprintf(off, sizeof(off), "%ld", offset);
    const char *p[] = {ks ? ks : "", lim, off};
    PGresult *r = hw_q("SELECT " ALERT_COLS ", count(*) OVER () FROM alerts a WHERE $1 = '' OR a.kind = $1 "
                       "ORDER BY a.id DESC LIMIT $2::int OFFSET $3::int",
                       3, p, err, sizeof(err));
    if (!r)
        return db_down(req, err);
    json_t *a = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(a, alert_obj(r, i));
    long total = PQntuples(r) ? strtol(PQgetvalue(r, 0, 13), NULL, 10) : 0;
    PQclear(r);
    return http_reply_json(req, 200,
                           json_pack("{s:o, s:i, s:i, s:i}", "alerts", a, "limit", (int)limit, "offset", (int)offset,
                                     "total", (int)total));
}

enum MHD_Result hw_alert_ack(http_req *req, const char *id)
{
    if (need_admin(req) < 0)
        return MHD_YES;
    char *end;
    long long n = strtoll(id, &end, 10);
    if (*end || n <= 0)
        return http_reply_error(req, 404, "unknown alert", "alert ids are positive integers", "see GET /api/v1/alerts");
    json_t *b = req->len ? json_loadb(req->body, req->len, 0, NULL) : NULL;
    const char *actor = b ? json_string_value(json_object_get(b, "actor")) : NULL;
    char err[512];
    const char *p[] = {id, actor ? actor : "admin"};
    PGresult *r = hw_q("UPDATE alerts SET acked_at = coalesce(acked_at, now()), acked_by = coalesce(acked_by, $2) "
                       "WHERE id = $1::bigint RETURNING id",
                       2, p, err, sizeof(err));
    json_decref(b);
    if (!r)
        return db_down(req, err);
    int found = PQntuples(r) > 0;
    PQclear(r);
    if (!found)
        return http_reply_error(req, 404, "unknown alert", "no alert has that id", "see GET /api/v1/alerts");
    r = hw_q("SELECT " ALERT_COLS " FROM alerts a WHERE a.id = $1::bigint", 1, p, err, sizeof(err));
    if (!r || PQntuples(r) != 1) {
        PQclear(r);
        return db_down(req, err);
    }
    json_t *o = alert_obj(r, 0);
    PQclear(r);
    return http_reply_json(req, 200, o);
}
