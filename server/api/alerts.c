/* alerts.c - the alert endpoints: alerts with their deliveries, and acknowledging one (which resolves it). */
#include "server/api/alerts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/core/metrics.h"
#include "server/alerts/alert_read.h"
#include "server/alerts/alerts.h"
#include "server/http/reply.h"
#include "server/http/route.h"

/* alert_obj - row `i` of an alert result (server/alerts/alert_read.h): state is open, acknowledged, or resolved
 * (repaired, superseded). */
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
    char err[512];
    PGresult *r = alert_list_read(ks ? ks : "", st ? st : "", limit, offset, err, sizeof(err));
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
    /* Acknowledging ends the alert: resolved, with a resolution message to each HTTP sink, in one transaction
     * (under the evaluator's lock, so a supersession cannot interleave). A delivery of the alert updating it at the
     * same moment makes the transaction fail on the concurrent update: it is simply run again. */
    int found = 0;
    int rc = alert_acknowledge(id, n, actor ? actor : "admin", &found, err, sizeof(err));
    json_decref(b); /* actor pointed into it */
    if (rc < 0)
        return http_reply_db_down(req, err);
    if (!found)
        return http_reply_error(req, 404, "unknown alert", "no alert has that id", "see GET /api/v1/alerts");
    alert_notify();
    PGresult *r = alert_read(id, err, sizeof(err));
    if (!r || PQntuples(r) != 1) {
        PQclear(r);
        return http_reply_db_down(req, err);
    }
    json_t *o = alert_obj(r, 0);
    PQclear(r);
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/alerts", MR_READ, AUTH_READ, alerts_list, .reads = 1},
    {"POST", "/api/v1/alerts/{}/ack", MR_ADMIN, AUTH_ADMIN, alert_ack},
};

void api_alerts_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
