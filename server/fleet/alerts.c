/* alerts.c - the alert outbox: alerts enqueued in the evaluator's transaction, a delivery thread with retries and exponential backoff (at-least-once). */
#include "server/fleet/alerts.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/fleet/sinks.h"
#include "server/store/sql.h"

#define LEASE "60 seconds"
#define CLAIM_MAX "20"

static void alert_loop(worker *w);
static worker thread = WORKER_INIT("alert delivery", alert_loop);

char *alert_url(const char *fragment)
{
    char base[600];
    if (g_srv.cfg.public_url[0]) {
        size_t l = strlen(g_srv.cfg.public_url);
        while (l && g_srv.cfg.public_url[l - 1] == '/')
            l--;
        snprintf(base, sizeof(base), "%.*s", (int)l, g_srv.cfg.public_url);
    } else {
        const char *h = g_srv.cfg.listen_host;
        int v6 = strchr(h, ':') != NULL;
        if (!strcmp(h, "0.0.0.0") || !strcmp(h, "*"))
            h = "localhost";
        snprintf(base, sizeof(base), "%s://%s%s%s:%d", g_srv.cfg.tls_cert[0] ? "https" : "http", v6 ? "[" : "", h,
                 v6 ? "]" : "", g_srv.port ? g_srv.port : g_srv.cfg.listen_port);
    }
    size_t n = strlen(base) + strlen(fragment) + 4;
    char *u = xmalloc(n);
    snprintf(u, n, "%s/#%s", base, fragment);
    return u;
}

/* pg_array - a text[] literal of `v` (quoted, with \ and " escaped). */
static char *pg_array(const char *const *v, int n)
{
    size_t cap = 3;
    for (int i = 0; i < n; i++)
        cap += 2 * strlen(v[i]) + 3;
    char *o = xmalloc(cap), *q = o;
    *q++ = '{';
    for (int i = 0; i < n; i++) {
        if (i)
            *q++ = ',';
        *q++ = '"';
        for (const char *c = v[i]; *c; c++) {
            if (*c == '"' || *c == '\\')
                *q++ = '\\';
            *q++ = *c;
        }
        *q++ = '"';
    }
    *q++ = '}';
    *q = 0;
    return o;
}

long long alert_enqueue(const alert_spec *a, char *err, size_t cap)
{
    char *details = a->details ? json_dumps(a->details, JSON_COMPACT) : NULL;
    char *rcpt = pg_array(a->recipients, a->nrecipients);
    const char *p[] = {
        a->dedup_key, a->kind, a->group, a->node, a->severity, a->summary, a->body, a->url, details ? details : "{}",
        rcpt};
    PGresult *r = sql_query("INSERT INTO alerts (dedup_key, kind, twin_group, node, severity, summary, body, url, details, "
                       "recipients) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10::text[]) "
                       "ON CONFLICT (dedup_key) DO NOTHING RETURNING id",
                       10, p, err, cap);
    free(details);
    free(rcpt);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return 0;
    }
    long long id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    PQclear(r);
    const char *sinks[4];
    int n = 0;
    if (g_srv.cfg.webhook_url[0])
        sinks[n++] = "webhook";
    if (g_srv.cfg.slack_url[0])
        sinks[n++] = "slack";
    if (g_srv.cfg.alertmanager_url[0])
        sinks[n++] = "alertmanager";
    if (g_srv.cfg.mail_program[0] && a->nrecipients > 0)
        sinks[n++] = "mail";
    for (int i = 0; i < n; i++) {
        const char *q[] = {ids, sinks[i]};
        if (sql_do("INSERT INTO alert_deliveries (alert_id, sink) VALUES ($1, $2)", 2, q, err, cap) < 0)
            return -1;
    }
    log_info("alert %lld (%s): %s", id, a->kind, a->summary);
    return id;
}

void alert_notify(void)
{
    worker_kick(&thread);
}

/* deliver_one - send alert `id` through `sink`; record the outcome. */
static void deliver_one(const char *id, const char *sink, int attempts)
{
    char err[600] = "";
    const char *p[] = {id};
    PGresult *r = sql_query("SELECT id, kind, twin_group, node, severity, summary, body, url, details::text, "
                       "array_to_string(recipients, ','), to_char(created_at AT TIME ZONE 'UTC', "
                       "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM alerts WHERE id = $1",
                       1, p, err, sizeof(err));
    if (!r || PQntuples(r) != 1) {
        PQclear(r);
        return;
    }
    json_t *details = json_loads(PQgetvalue(r, 0, 8), 0, NULL);
    alert_msg m = {.id = strtoll(id, NULL, 10),
                   .kind = PQgetvalue(r, 0, 1),
                   .group = PQgetisnull(r, 0, 2) ? NULL : PQgetvalue(r, 0, 2),
                   .node = PQgetisnull(r, 0, 3) ? NULL : PQgetvalue(r, 0, 3),
                   .severity = PQgetvalue(r, 0, 4),
                   .summary = PQgetvalue(r, 0, 5),
                   .body = PQgetvalue(r, 0, 6),
                   .url = PQgetvalue(r, 0, 7),
                   .details = details,
                   .recipients = PQgetvalue(r, 0, 9),
                   .created_at = PQgetvalue(r, 0, 10)};
    int ok = sink_deliver(sink, &m, err, sizeof(err)) == 0;
    json_decref(details);
    PQclear(r);
    char delay[64], give_up[64], e2[256];
    long long ms = g_srv.cfg.alert_retry_ms;
    for (int i = 1; i < attempts && ms < (long long)g_srv.cfg.alert_retry_max_s * 1000; i++)
        ms *= 2;
    if (ms > (long long)g_srv.cfg.alert_retry_max_s * 1000)
        ms = (long long)g_srv.cfg.alert_retry_max_s * 1000;
    snprintf(delay, sizeof(delay), "%lld milliseconds", ms);
    snprintf(give_up, sizeof(give_up), "%d seconds", g_srv.cfg.alert_give_up_s);
    const char *q[] = {id, sink, ok ? NULL : err, delay, give_up};
    /* A delivery still failing alert_give_up_s after the alert was raised stops: 'failed', kept with its
     * last error for the dashboard and the API, and counted in /metrics. */
    r = sql_query(ok ? "UPDATE alert_deliveries SET state = 'delivered', delivered_at = now(), last_error = $3 "
                  "WHERE alert_id = $1 AND sink = $2 AND $4::interval IS NOT NULL AND $5::interval IS NOT NULL "
                  "RETURNING state"
                : "UPDATE alert_deliveries d SET next_at = now() + $4::interval, last_error = $3, state = CASE WHEN "
                  "a.created_at < now() - $5::interval THEN 'failed' ELSE 'pending' END FROM alerts a "
                  "WHERE a.id = d.alert_id AND d.alert_id = $1 AND d.sink = $2 RETURNING d.state",
             5, q, e2, sizeof(e2));
    int gave_up = r && PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), "failed");
    if (!r)
        log_warn("alerts: cannot record the delivery of alert %s to %s: %s", id, sink, e2);
    PQclear(r);
    metrics_alert_delivery(ok ? MA_DELIVERED : gave_up ? MA_GIVEN_UP : MA_RETRIED);
    if (ok)
        log_info("alert %s delivered to %s (attempt %d)", id, sink, attempts);
    else if (gave_up)
        log_error("alert %s not delivered to %s after %d attempts in %d s; given up: %s", id, sink, attempts,
                  g_srv.cfg.alert_give_up_s, err);
    else
        log_warn("alert %s not delivered to %s (attempt %d, next in %lld ms): %s", id, sink, attempts, ms, err);
}

/* deliver_due - claim due deliveries (a lease keeps other lockstepd off
 * them) and send each. Returns the seconds until the next one is due. */
static double deliver_due(void)
{
    char err[512];
    PGresult *r = sql_query("UPDATE alert_deliveries d SET next_at = now() + interval '" LEASE "', "
                       "attempts = d.attempts + 1 FROM (SELECT alert_id, sink FROM alert_deliveries "
                       "WHERE state = 'pending' AND next_at <= now() ORDER BY next_at LIMIT " CLAIM_MAX
                       " FOR UPDATE SKIP LOCKED) c WHERE d.alert_id = c.alert_id AND d.sink = c.sink "
                       "RETURNING d.alert_id, d.sink, d.attempts",
                       0, NULL, err, sizeof(err));
    if (!r)
        return 1.0;
    int n = PQntuples(r);
    for (int i = 0; i < n; i++)
        deliver_one(PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), atoi(PQgetvalue(r, i, 2)));
    PQclear(r);
    if (n)
        return 0;
    r = sql_query("SELECT extract(epoch FROM min(next_at) - now()) FROM alert_deliveries WHERE state = 'pending'", 0, NULL,
             err, sizeof(err));
    double wait = 5.0;
    if (r && !PQgetisnull(r, 0, 0))
        wait = atof(PQgetvalue(r, 0, 0));
    PQclear(r);
    return wait < 0.01 ? 0.01 : wait > 5.0 ? 5.0 : wait;
}

static void alert_loop(worker *w)
{
    for (;;) {
        double wait = deliver_due();
        worker_lock(w);
        int stop = worker_wait_locked(w, wait);
        worker_unlock(w);
        if (stop)
            return;
    }
}

int alert_start(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return worker_start(&thread, 1);
}

void alert_stop(void)
{
    worker_stop(&thread);
}
