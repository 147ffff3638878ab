/* health.c - the service's own state: GET /api/v1/health (the database reachable?) and GET /metrics (Prometheus text). */
#include "server/api/health.h"

#include <string.h>

#include "server/core/metrics.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/db.h"

static enum MHD_Result health(http_req *req, char **args)
{
    (void)args;
    char err[256];
    PGresult *r = db_exec("health", 0, NULL, err, sizeof(err));
    int ok = r != NULL;
    PQclear(r);
    if (ok)
        return http_reply_json(req, 200, json_pack("{s:s, s:s}", "status", "ok", "database", "ok"));
    return http_reply_json(req, 503,
                           json_pack("{s:s, s:s, s:s, s:s, s:s}", "status", "degraded", "database", "unreachable",
                                     "error", "database unreachable", "detail", err, "hint",
                                     "lockstepd reconnects by itself once PostgreSQL is back"));
}

static enum MHD_Result metrics(http_req *req, char **args)
{
    (void)args;
    char *text = metrics_render();
    return http_reply(req, 200, "text/plain; version=0.0.4", text, strlen(text));
}

static const route ROUTES[] = {
    {"GET", "/api/v1/health", MR_HEALTH, AUTH_OPEN, health},
    {"GET", "/metrics", MR_METRICS, AUTH_READ, metrics},
};

void api_health_register(void)
{
    db_register("health", "SELECT 1");
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
