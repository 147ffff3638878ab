/* health.c - the service's own state: GET /api/v1/health (the database reachable?) and GET /metrics (Prometheus text:
 * the process's own series and the fleet's, server/fleet/fleet_metrics.h). */
#include "server/api/health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/version.h"
#include "server/fleet/fleet_metrics.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/db.h"
#include "server/store/pgembed.h"

/* embedded - the watch of the embedded PostgreSQL, or JSON null when lockstepd uses another server. */
static json_t *embedded(void)
{
    pg_embed_status s;
    pg_embed_status_get(&s);
    if (!s.watched)
        return json_null();
    char when[40] = "";
    if (s.last_restart > 0) {
        time_t t = (time_t)s.last_restart;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    return json_pack("{s:s, s:I, s:I, s:o}", "state", s.state, "restarts", (json_int_t)s.restarts, "failed_starts",
                     (json_int_t)s.failures, "last_restart", when[0] ? json_string(when) : json_null());
}

/* replica_lag - the read replica's lag in seconds (db_read_lag) into `*lag`, -1 when unknown. Returns -1 when no
 * replica is configured, 0 when it cannot be reached, 1 when it answered. */
static int replica_lag(double *lag)
{
    *lag = -1;
    if (!db_reads_configured())
        return -1;
    int up = db_reads_begin();
    if (up)
        *lag = db_read_lag();
    db_reads_end();
    return up;
}

/* replica - the read replica as GET /health says it: null when none is configured. */
static json_t *replica(void)
{
    double lag;
    int st = replica_lag(&lag);
    if (st < 0)
        return json_null();
    return json_pack("{s:b, s:o}", "reachable", st > 0, "lag_s", lag >= 0 ? json_real(lag) : json_null());
}

static enum MHD_Result health(http_req *req, char **args)
{
    (void)args;
    char err[256];
    int ok = db_ping(err, sizeof(err)) == 0;
    json_t *o;
    if (ok)
        o = json_pack("{s:s, s:s, s:o}", "status", "ok", "database", "ok", "embedded_postgres", embedded());
    else
        o = json_pack("{s:s, s:s, s:o, s:s, s:s, s:s}", "status", "degraded", "database", "unreachable",
                      "embedded_postgres", embedded(), "error", "database unreachable", "detail",
                      "PostgreSQL does not answer (its message is in the lockstepd log)", "hint",
                      "lockstepd reconnects by itself once PostgreSQL is back");
    json_object_set_new(o, "read_replica", replica());
    json_object_set_new(o, "version", json_string(version_release()));
    json_object_set_new(o, "commit", json_string(version_commit()));
    return http_reply_json(req, ok ? 200 : 503, o);
}

static enum MHD_Result metrics(http_req *req, char **args)
{
    (void)args;
    char *own = metrics_render(), *fleet = fleet_metrics_text();
    char rep[400] = "", lag_text[32] = "NaN";
    double lag;
    int st = replica_lag(&lag);
    if (lag >= 0)
        snprintf(lag_text, sizeof(lag_text), "%.3f", lag);
    if (st >= 0) /* a replica configured: whether it answers, and its lag (NaN when unknown) */
        snprintf(rep, sizeof(rep),
                 "# HELP lockstep_read_replica_up Whether the read replica (--read-db) answers.\n"
                 "# TYPE lockstep_read_replica_up gauge\nlockstep_read_replica_up %d\n"
                 "# HELP lockstep_read_replica_lag_seconds How far the read replica is behind the primary.\n"
                 "# TYPE lockstep_read_replica_lag_seconds gauge\nlockstep_read_replica_lag_seconds %s\n",
                 st, lag_text);
    size_t a = strlen(own), b = strlen(fleet), c = strlen(rep);
    char *text = xrealloc(own, a + b + c + 1);
    memcpy(text + a, fleet, b);
    memcpy(text + a + b, rep, c + 1);
    free(fleet);
    return http_reply(req, 200, "text/plain; version=0.0.4", text, a + b + c);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/health", MR_HEALTH, AUTH_OPEN, health},
    {"GET", "/metrics", MR_METRICS, AUTH_READ, metrics},
};

void api_health_register(void)
{
    fleet_metrics_register();
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
