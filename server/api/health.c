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
    json_object_set_new(o, "version", json_string(version_release()));
    json_object_set_new(o, "commit", json_string(version_commit()));
    return http_reply_json(req, ok ? 200 : 503, o);
}

static enum MHD_Result metrics(http_req *req, char **args)
{
    (void)args;
    char *own = metrics_render(), *fleet = fleet_metrics_text();
    size_t a = strlen(own), b = strlen(fleet);
    char *text = xrealloc(own, a + b + 1);
    memcpy(text + a, fleet, b + 1);
    free(fleet);
    return http_reply(req, 200, "text/plain; version=0.0.4", text, a + b);
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
