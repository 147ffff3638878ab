/* health.c - the service's own state: GET /api/v1/health (the database reachable?) and GET /metrics (Prometheus text, with the fleet's alert and suspect counts from the database). */
#include "server/api/health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/version.h"
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
    PGresult *r = db_exec("health", 0, NULL, err, sizeof(err));
    int ok = r != NULL;
    PQclear(r);
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

/* The fleet's state, read from the database at each scrape (so every lockstepd on one database reports the
 * same): one row per series, every label value always present (a series that is 0 is still there). Alerts are
 * never deleted, so their counts only grow: counters. */
static const struct {
    const char *name, *type, *help;
} FLEET_METRICS[] = {
    {"lockstepd_alerts_raised_total", "counter", "Alerts raised, by kind (divergence: a twin group's first divergence; "
                                                 "suspect: a node turning suspect)."},
    {"lockstepd_alerts_open", "gauge", "Alerts not yet resolved (acknowledged, repaired or superseded), by kind."},
    {"lockstepd_alerts_resolved_total", "counter", "Alerts resolved, by reason."},
    {"lockstepd_nodes", "gauge", "Nodes seen in manifests, by state."},
    {"lockstepd_suspects", "gauge", "Hardware suspects now: nodes and GPUs in state suspect."},
};

#define FLEET_SQL                                                                                                          "SELECT 0, 'kind', k, (SELECT count(*) FROM alerts WHERE kind = k) FROM unnest('{divergence,suspect}'::text[]) k "     "UNION ALL SELECT 1, 'kind', k, (SELECT count(*) FROM alerts WHERE kind = k AND resolved_at IS NULL) "                "FROM unnest('{divergence,suspect}'::text[]) k "                                                                       "UNION ALL SELECT 2, 'reason', k, (SELECT count(*) FROM alerts WHERE resolved_reason = k) "                            "FROM unnest('{acknowledged,repaired,superseded}'::text[]) k "                                                         "UNION ALL SELECT 3, 'state', k, (SELECT count(*) FROM hw_nodes WHERE state = k) "                                     "FROM unnest('{ok,suspect,drained,repaired}'::text[]) k "                                                              "UNION ALL SELECT 4, 'kind', 'node', (SELECT count(*) FROM hw_nodes WHERE state = 'suspect') "                         "UNION ALL SELECT 4, 'kind', 'gpu', (SELECT count(*) FROM hw_gpus WHERE state = 'suspect') ORDER BY 1"

/* fleet_text - the fleet series as Prometheus text (a new string), or a comment saying why they are missing. */
static char *fleet_text(void)
{
    char err[256];
    PGresult *r = db_exec("metrics_fleet", 0, NULL, err, sizeof(err));
    if (!r) {
        size_t n = strlen(err) + 100;
        char *t = xmalloc(n);
        snprintf(t, n, "# the fleet series are missing: the database did not answer (%s)\n", err);
        for (char *c = t + 2; *c && c[1]; c++) /* one comment line */
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        return t;
    }
    size_t cap = 4096, len = 0;
    char *t = xmalloc(cap);
    t[0] = 0;
    int last = -1;
    for (int i = 0; i < PQntuples(r); i++) {
        int m = atoi(PQgetvalue(r, i, 0));
        if (m < 0 || m >= (int)(sizeof(FLEET_METRICS) / sizeof(FLEET_METRICS[0])))
            continue;
        if (len + 1024 > cap)
            t = xrealloc(t, cap *= 2);
        if (m != last)
            len += (size_t)snprintf(t + len, cap - len, "# HELP %s %s\n# TYPE %s %s\n", FLEET_METRICS[m].name,
                                    FLEET_METRICS[m].help, FLEET_METRICS[m].name, FLEET_METRICS[m].type);
        last = m;
        len += (size_t)snprintf(t + len, cap - len, "%s{%s=\"%s\"} %s\n", FLEET_METRICS[m].name, PQgetvalue(r, i, 1),
                                PQgetvalue(r, i, 2), PQgetvalue(r, i, 3));
    }
    PQclear(r);
    return t;
}

static enum MHD_Result metrics(http_req *req, char **args)
{
    (void)args;
    char *own = metrics_render(), *fleet = fleet_text();
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
    db_register("health", "SELECT 1");
    db_register("metrics_fleet", FLEET_SQL);
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
