/* alerts.c - the alert endpoints: alerts with their deliveries, and acknowledging one (which resolves it). */
#include "server/api/alerts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/core/metrics.h"
#include "server/alerts/alerts.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/sql.h"

#define ALERT_COLS                                                                                                     \
    "a.id, a.kind, a.twin_group, a.node, a.severity, a.summary, a.body, a.url, a.details::text, " TS(                  \
        "a.created_at") ", " TS("a.acked_at") ", a.acked_by, (SELECT json_agg(json_build_object('sink', d.sink, "      \
                                              "'phase', d.phase, "                                                     \
                                              "'state', d.state, 'attempts', d.attempts, 'last_error', d.last_error, " \
                                              "'delivered_at', " TS(                                                   \
                                                  "d.delivered_at") ") ORDER BY d.sink, d.phase) FROM "                \
                                                                    "alert_deliveries d WHERE d.alert_id = "           \
                                                                    "a.id)::text, " TS("a.resolved_at") ", "           \
                                                                                                        "a.resolved_"  \
                                                                                                        "reason, "     \
                                                                                                        "a.resolved_"  \
                                                                                                        "by, "         \
                                                                                                        "a."           \
                                                                                                        "superseded_"  \
                                                                                                        "by, "         \
                                                                                                        "a.labels::"   \
                                                                                                        "text, "       \
                                                                                                        "a."           \
                                                                                                        "annotations:" \
                                                                                                        ":text"
#define ALERT_NCOLS 19

/* alert_obj - row `i` of an ALERT_COLS result: state is open, acknowledged, or resolved (repaired, superseded). */
static json_t *alert_obj(PGresult *r, int i)
{
    json_t *details = json_loads(PQgetvalue(r, i, 8), 0, NULL);
    json_t *deliv = PQgetisnull(r, i, 12) ? json_array() : json_loads(PQgetvalue(r, i, 12), 0, NULL);
    json_t *labels = json_loads(PQgetvalue(r, i, 17), 0, NULL), *ann = json_loads(PQgetvalue(r, i, 18), 0, NULL);
    const char *cls = json_string_value(json_object_get(details, "classification"));
    const char *state = !PQgetisnull(r, i, 10) ? "acknowledged" : !PQgetisnull(r, i, 13) ? "resolved" : "open";
    json_t *o = json_pack("{s:I, s:s, s:s, s:o, s:o, s:s, s:s, s:s, s:s, s:s?, s:o, s:s, s:o, s:o, s:o}", "id",
                          (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10), "kind", PQgetvalue(r, i, 1), "created_at",
                          PQgetvalue(r, i, 9), "group", pg_str(r, i, 2), "node", pg_str(r, i, 3), "severity",
                          PQgetvalue(r, i, 4), "summary", PQgetvalue(r, i, 5), "text", PQgetvalue(r, i, 6), "url",
                          PQgetvalue(r, i, 7), "classification", cls, "details", details ? details : json_object(),
                          "state", state, "acked_at", pg_str(r, i, 10), "acked_by", pg_str(r, i, 11), "deliveries",
                          deliv ? deliv : json_array());
    json_object_set_new(o, "resolved_at", pg_str(r, i, 13));
    json_object_set_new(o, "resolved_reason", pg_str(r, i, 14));
    json_object_set_new(o, "resolved_by", pg_str(r, i, 15));
    json_object_set_new(o, "superseded_by", pg_int(r, i, 16));
    json_object_set_new(o, "labels", labels ? labels : json_object());
    json_object_set_new(o, "annotations", ann ? ann : json_object());
    return o;
}

static enum MHD_Result alerts_list(http_req *req, char **args)
{
    (void)args;
    const char *ks = http_query(req, "kind"), *st = http_query(req, "state");
    if (st && *st && strcmp(st, "open") && strcmp(st, "acknowledged") && strcmp(st, "resolved"))
        return http_reply_error(req, 400, "bad query argument", "?state= is open, acknowledged or resolved",
                                "see docs/suspects.md");
    long long limit, offset;
    if (api_page(req, 100, 1000, "offset", 0, &limit, &offset) < 0)
        return MHD_YES;
    char lim[24], off[32], err[512];
    snprintf(lim, sizeof(lim), "%lld", limit);
    snprintf(off, sizeof(off), "%lld", offset);
    const char *p[] = {ks ? ks : "", lim, off, st ? st : ""};
    PGresult *r = sql_query("SELECT " ALERT_COLS ", count(*) OVER () FROM alerts a WHERE ($1 = '' OR a.kind = $1) "
                            "AND ($4 = '' OR $4 = CASE WHEN a.acked_at IS NOT NULL THEN 'acknowledged' "
                            "WHEN a.resolved_at IS NOT NULL THEN 'resolved' ELSE 'open' END) "
                            "ORDER BY a.id DESC LIMIT $2::int OFFSET $3::int",
                            4, p, err, sizeof(err));
    if (!r)
        return http_reply_db_down(req, err);
    json_t *a = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(a, alert_obj(r, i));
    int n = PQntuples(r);
    long long total = n ? strtoll(PQgetvalue(r, 0, ALERT_NCOLS), NULL, 10) : offset > 0 ? -1 : 0;
    PQclear(r);
    return http_reply_json(req, 200, api_list(a, total, limit, total >= 0 && offset + n < total ? offset + n : -1));
}

/* ack_txn - acknowledge alert p[0] (by p[1]) and resolve it, in one transaction. *found: whether it exists. Returns
 * 0, or -1 rolled back with the reason in `err` (sql_conflicted: may be run again). */
static int ack_txn(const char *const *p, long long id, int *found, char *err, size_t cap)
{
    *found = 0;
    if (sql_begin(err, cap) < 0)
        return -1;
    PGresult *r = sql_query("UPDATE alerts SET acked_at = coalesce(acked_at, now()), acked_by = coalesce(acked_by, $2) "
                            "WHERE id = $1::bigint RETURNING id, acked_by",
                            2, p, err, cap);
    if (!r) {
        sql_rollback();
        return -1;
    }
    *found = PQntuples(r) > 0;
    char by[256] = "";
    if (*found)
        snprintf(by, sizeof(by), "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    if (!*found) {
        sql_rollback();
        return 0;
    }
    if (alert_resolve(id, "acknowledged", by, 0, err, cap) < 0 || sql_commit(err, cap) < 0) {
        sql_rollback();
        return -1;
    }
    return 0;
}

static enum MHD_Result alert_ack(http_req *req, char **args)
{
    const char *id = args[0];
    char *end;
    long long n = strtoll(id, &end, 10);
    if (*end || n <= 0)
        return http_reply_error(req, 404, "unknown alert", "alert ids are positive integers", "see GET /api/v1/alerts");
    json_t *b = req->len ? json_loadb(req->body, req->len, 0, NULL) : NULL;
    const char *actor = b ? json_string_value(json_object_get(b, "actor")) : NULL;
    char err[512];
    const char *p[] = {id, actor ? actor : "admin"};
    /* Acknowledging ends the alert: resolved, with a resolution message to each HTTP sink, in one transaction
     * (under the evaluator's lock, so a supersession cannot interleave). A delivery of the alert updating it at the
     * same moment makes the transaction fail on the concurrent update: it is simply run again. */
    int found = 0, rc, attempt = 0;
    while ((rc = ack_txn(p, n, &found, err, sizeof(err))) < 0 && sql_retry(attempt++))
        ;
    json_decref(b); /* p[1] pointed into it */
    if (rc < 0)
        return http_reply_db_down(req, err);
    if (!found)
        return http_reply_error(req, 404, "unknown alert", "no alert has that id", "see GET /api/v1/alerts");
    alert_notify();
    PGresult *r = sql_query("SELECT " ALERT_COLS " FROM alerts a WHERE a.id = $1::bigint", 1, p, err, sizeof(err));
    if (!r || PQntuples(r) != 1) {
        PQclear(r);
        return http_reply_db_down(req, err);
    }
    json_t *o = alert_obj(r, 0);
    PQclear(r);
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/alerts", MR_READ, AUTH_READ, alerts_list},
    {"POST", "/api/v1/alerts/{}/ack", MR_ADMIN, AUTH_ADMIN, alert_ack},
};

void api_alerts_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
