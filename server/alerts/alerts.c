/* alerts.c - the alert outbox: alerts enqueued in the evaluator's transaction, resolved when acknowledged, repaired or
 * superseded; one delivery lane per sink (its own thread, queue and timeout) with retries and exponential backoff
 * (at-least-once); the Alertmanager lane re-sends open alerts. */
#include "server/alerts/alerts.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/alerts/mailmap.h"
#include "server/alerts/sinks.h"
#include "server/store/db.h"

#define LEASE_SPARE_S 60 /* a claimed delivery's lease: its sink's attempt timeout and this */
#define LANE_BURST 50    /* deliveries a lane makes before it looks at its re-sends and at stopping again */
#define STR(x) #x
#define XSTR(x) STR(x)

/* One sink's delivery lane: a thread of its own that claims only its sink's outbox rows (its queue), so that
 * a receiver that hangs holds back its own messages, each attempt cut at the sink's timeout, and no other
 * sink's. Every sink has a lane, configured or not: rows left for a sink no longer configured fail as they
 * always did, until alert_give_up_s. */
typedef struct sink_lane {
    worker w; /* first: the loop finds its lane from its worker */
    const char *sink;
} sink_lane;

static mail_map site_mail; /* mail_map, read at start */

static void lane_loop(worker *w);
static sink_lane lanes[] = {
    {WORKER_INIT("alerts: webhook", lane_loop), "webhook"},
    {WORKER_INIT("alerts: Slack", lane_loop), "slack"},
    {WORKER_INIT("alerts: Alertmanager", lane_loop), "alertmanager"},
    {WORKER_INIT("alerts: mail", lane_loop), "mail"},
};
#define N_LANES (sizeof(lanes) / sizeof(lanes[0]))

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

char *alert_group_url(const char *group)
{
    char frag[GROUP_NAME_MAX * 3 + 16]; /* every byte of the longest name percent-encoded */
    size_t fl = (size_t)snprintf(frag, sizeof(frag), "/twins/");
    for (const unsigned char *c = (const unsigned char *)group; *c && fl + 4 < sizeof(frag); c++)
        fl += (size_t)(isalnum(*c) || strchr("-._~", *c) ? snprintf(frag + fl, sizeof(frag) - fl, "%c", *c)
                                                         : snprintf(frag + fl, sizeof(frag) - fl, "%%%02X", *c));
    return alert_url(frag);
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

/* one_line - a copy of `s` (NULL: "") cut to fewer than `max` bytes (at a character's start, "..." added), its
 * line breaks and tabs made spaces (caller frees). */
static char *one_line(const char *s, size_t max)
{
    char *o = xstrdup(s ? s : "");
    if (strlen(o) >= max) {
        size_t cut = max - 4;
        while (cut > 0 && ((unsigned char)o[cut] & 0xC0) == 0x80) /* not inside a UTF-8 sequence */
            cut--;
        strcpy(o + cut, "...");
    }
    for (char *c = o; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t')
            *c = ' ';
    return o;
}

/* labels_of - every alert's Alertmanager labels (alertname, kind, severity, service, cluster), `user` (user_of; ""
 * or NULL: none) and the alert's own identifying ones, empty values left out, as a new object. */
static json_t *labels_of(const alert_spec *a, const char *user)
{
    json_t *l = json_pack("{s:s, s:s, s:s, s:s}", "alertname", sink_alert_name(a->kind), "kind", a->kind, "severity",
                          a->severity, "service", "lockstep");
    if (g_srv.cfg.cluster[0])
        json_object_set_new(l, "cluster", json_string(g_srv.cfg.cluster));
    if (user && *user)
        json_object_set_new(l, "user", json_string(user));
    const char *k;
    json_t *v;
    json_object_foreach(a->labels, k, v) if (json_is_string(v) && *json_string_value(v)) json_object_set(l, k, v);
    return l;
}

#define ANNOTATION_MAX 1000 /* bytes of a one-line annotation */

/* annotations_of - summary, description and the dashboard link, each one line, then the alert's own annotations
 * (empty strings left out). */
static json_t *annotations_of(const alert_spec *a)
{
    char *summary = one_line(a->summary, ANNOTATION_MAX), *description;
    if (a->description)
        description = one_line(a->description, ANNOTATION_MAX);
    else {
        size_t l = strcspn(a->body ? a->body : "", "\n");
        description = xmalloc(l + 1);
        snprintf(description, l + 1, "%s", a->body ? a->body : "");
        char *d = one_line(description, ANNOTATION_MAX);
        free(description);
        description = d;
    }
    json_t *o = json_pack("{s:s, s:s}", "summary", summary, "description", description);
    if (a->url && *a->url)
        json_object_set_new(o, "dashboard", json_string(a->url));
    free(summary);
    free(description);
    const char *k;
    json_t *v;
    json_object_foreach(a->annotations, k, v) if (json_is_string(v) && *json_string_value(v)) json_object_set(o, k, v);
    return o;
}

/* The attested user of run r: what slurmstepd (or the admin) vouched for at registration, else what it attested for
 * the run's job; never what the job reported. */
#define RUN_ATTESTED_USER                                                                                              \
    "coalesce(r.attested_user, (SELECT a.user_name FROM attestations a WHERE a.job_id = r.job_id "                     \
    "ORDER BY a.attested_at, a.node LIMIT 1))"

/* user_of - whose alert a group's alert is, as an attested identity, into `out`: the group's owner when the owner
 * was attested or one of its runs was attested as the owner (a run attested after it registered counts as
 * attested); else the one user its attested runs were attested as; else "" (none, or several): a job's word is
 * never a routing label. A run's alert (`run`, no group): the run's attested user. Returns 0, or -1 on a database
 * error. */
static int user_of(const char *group, const char *run, char *out, size_t cap, char *err, size_t ecap)
{
    *out = 0;
    if (!group && !run)
        return 0;
    const char *p[] = {group ? group : run};
    PGresult *r = db_exec_once(group ? "alerts_owner" : "alerts_run_user", 1, p, err, ecap);
    if (!r)
        return -1;
    if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

/* The attested users of a group's runs (RUN_ATTESTED_USER). */
#define GROUP_ATTESTED_USERS                                                                                           \
    "SELECT DISTINCT u FROM (SELECT " RUN_ATTESTED_USER " AS u FROM runs r WHERE r.twin_group = $1) x "                \
    "WHERE u IS NOT NULL AND u <> '' ORDER BY u LIMIT " GROUP_MAX_RUNS_TEXT

/* mail_of - the attested users of the alert's group or run (when it mails them) and the addresses its mail goes to
 * (server/alerts/mailmap.h), as text[] literals into *users and *to (caller frees). Returns how many addresses, or
 * -1 on a database error. */
static int mail_of(const alert_spec *a, char **users, char **to, char *err, size_t cap)
{
    const char *names[GROUP_MAX_RUNS], *addrs[GROUP_MAX_RUNS + 1];
    char buf[GROUP_MAX_RUNS + 1][MAIL_ADDR_MAX + 1];
    int nn = 0, na = 0;
    PGresult *r = NULL;
    if (a->mail_users && (a->group || a->run)) {
        const char *p[] = {a->group ? a->group : a->run};
        r = db_exec_once(a->group ? "alerts_users" : "alerts_run_user", 1, p, err, cap);
        if (!r)
            return -1;
        for (int i = 0; i < PQntuples(r) && nn < GROUP_MAX_RUNS; i++) {
            names[nn++] = PQgetvalue(r, i, 0);
            if (mail_address_of(&site_mail, g_srv.cfg.mail_domain, PQgetvalue(r, i, 0), buf[na], sizeof(buf[na]))) {
                addrs[na] = buf[na];
                na++;
            }
        }
    }
    if (a->mail_to && mail_addr_valid(a->mail_to))
        addrs[na++] = a->mail_to;
    *users = pg_array(names, nn);
    *to = pg_array(addrs, na);
    PQclear(r);
    return na;
}

long long alert_enqueue(const alert_spec *a, char *err, size_t cap)
{
    char *users, *mail_to;
    char user[USER_MAX + 1];
    if (user_of(a->group, a->run, user, sizeof(user), err, cap) < 0)
        return -1;
    int naddrs = mail_of(a, &users, &mail_to, err, cap);
    if (naddrs < 0)
        return -1;
    char *details = a->details ? json_dumps(a->details, JSON_COMPACT) : NULL;
    char *blames = pg_array(a->blames, a->nblames);
    json_t *lj = labels_of(a, user), *aj = annotations_of(a);
    char *labels = json_dumps(lj, JSON_COMPACT), *ann = json_dumps(aj, JSON_COMPACT);
    json_decref(lj);
    json_decref(aj);
    const char *p[] = {a->dedup_key,
                       a->kind,
                       a->group,
                       a->node,
                       a->severity,
                       a->summary,
                       a->body,
                       a->url,
                       details ? details : "{}",
                       users,
                       labels,
                       ann,
                       blames,
                       a->facts ? a->facts : "",
                       mail_to};
    PGresult *r = db_exec_once("alerts_add", 15, p, err, cap);
    free(details);
    free(users);
    free(mail_to);
    free(blames);
    free(labels);
    free(ann);
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
    const char *pi[] = {ids};
    /* the alert's own id is a label too: a superseding alert never shares its label set */
    if (db_do("alerts_label_id", 1, pi, err, cap) < 0)
        return -1;
    const char *sinks[4];
    int n = 0;
    if (g_srv.cfg.webhook_url[0])
        sinks[n++] = "webhook";
    if (g_srv.cfg.slack_url[0])
        sinks[n++] = "slack";
    if (g_srv.cfg.alertmanager_url[0])
        sinks[n++] = "alertmanager";
    if (g_srv.cfg.mail_program[0] && naddrs > 0)
        sinks[n++] = "mail";
    for (int i = 0; i < n; i++) {
        const char *q[] = {ids, sinks[i]};
        if (db_do("alerts_delivery_add", 2, q, err, cap) < 0)
            return -1;
    }
    log_info("alert %lld (%s): %s", id, a->kind, a->summary);
    return id;
}

/* Ending alerts: resolved_at and why, and a 'resolved' delivery for every HTTP sink the alert went to. $1 picks
 * the alerts (RESOLVE_WHERE), $2 the reason, $3 who, $4 the superseding alert. */
#define RESOLVE_SQL(where)                                                                                             \
    "WITH r AS (UPDATE alerts SET resolved_at = now(), resolved_reason = $2, resolved_by = $3, "                       \
    "superseded_by = $4::bigint WHERE resolved_at IS NULL AND " where " RETURNING id), "                               \
    "d AS (INSERT INTO alert_deliveries (alert_id, sink, phase) SELECT x.alert_id, x.sink, 'resolved' "                \
    "FROM alert_deliveries x JOIN r ON r.id = x.alert_id WHERE x.phase = 'firing' "                                    \
    "AND x.sink IN ('webhook', 'slack', 'alertmanager') ON CONFLICT DO NOTHING RETURNING 1) "                          \
    "SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM d), (SELECT string_agg(id::text, ',') FROM r)"

static int resolve(const char *stmt, const char *arg, const char *reason, const char *by, long long superseded_by,
                   char *err, size_t cap)
{
    char sup[32];
    snprintf(sup, sizeof(sup), "%lld", superseded_by);
    const char *p[] = {arg, reason, by, superseded_by > 0 ? sup : NULL};
    PGresult *r = db_exec_once(stmt, 4, p, err, cap);
    if (!r)
        return -1;
    int n = atoi(PQgetvalue(r, 0, 0));
    if (n)
        log_info("alerts %s ended (%s%s%s); %s resolution messages queued", PQgetvalue(r, 0, 2), reason,
                 by ? " by " : "", by ? by : "", PQgetvalue(r, 0, 1));
    PQclear(r);
    return n;
}

int alert_enqueue_superseding(const alert_spec *a, const long long *open, int nopen, char *err, size_t cap)
{
    long long id = alert_enqueue(a, err, cap);
    for (int k = 0; id > 0 && k < nopen; k++)
        if (alert_resolve(open[k], "superseded", NULL, id, err, cap) < 0)
            return -1;
    return id < 0 ? -1 : 0;
}

int alert_resolve(long long id, const char *reason, const char *by, long long superseded_by, char *err, size_t cap)
{
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    return resolve("alerts_resolve", ids, reason, by, superseded_by, err, cap);
}

int alert_resolve_blaming(const char *node, char *err, size_t cap)
{
    return resolve("alerts_resolve_node", node, "repaired", node, 0, err, cap);
}

void alert_notify(void)
{
    for (size_t i = 0; i < N_LANES; i++)
        worker_kick(&lanes[i].w);
}

/* iso_in - the UTC time `seconds` from now as Alertmanager's timestamps ("2026-11-29T12:00:00.000Z"). */
static void iso_in(double seconds, char *out, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    time_t t = ts.tv_sec + (time_t)seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[64];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%.40s.%03dZ", base, (int)(ts.tv_nsec / 1000000) % 1000);
}

/* Alertmanager resolves a firing alert it has not heard of by its endsAt: four re-send periods ahead (as
 * Prometheus does), so that a lost re-send or two does not end it, and a lockstepd that is gone does. */
#define AM_LAPSE_PERIODS 4

#define ALERT_COLS                                                                                                     \
    "id, kind, twin_group, node, severity, summary, body, url, details::text, array_to_string(mail_to, ','), "         \
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), labels::text, annotations::text, "   \
    "to_char(resolved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), resolved_reason, resolved_by, "     \
    "superseded_by"

/* msg_of - row `i` of an ALERT_COLS result as the sinks see it in `phase` (JSON members owned by the caller:
 * msg_free). */
static void msg_of(PGresult *r, int i, int resolved, char *ends_at, size_t ecap, alert_msg *m)
{
    const char *resolved_at = PQgetisnull(r, i, 13) ? NULL : PQgetvalue(r, i, 13);
    if (resolved && resolved_at)
        snprintf(ends_at, ecap, "%s", resolved_at);
    else
        iso_in((double)AM_LAPSE_PERIODS * g_srv.cfg.alert_resend_s, ends_at, ecap);
    *m = (alert_msg){.id = strtoll(PQgetvalue(r, i, 0), NULL, 10),
                     .kind = PQgetvalue(r, i, 1),
                     .group = PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2),
                     .node = PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3),
                     .severity = PQgetvalue(r, i, 4),
                     .summary = PQgetvalue(r, i, 5),
                     .body = PQgetvalue(r, i, 6),
                     .url = PQgetvalue(r, i, 7),
                     .details = json_loads(PQgetvalue(r, i, 8), 0, NULL),
                     .mail_to = PQgetvalue(r, i, 9),
                     .created_at = PQgetvalue(r, i, 10),
                     .labels = json_loads(PQgetvalue(r, i, 11), 0, NULL),
                     .annotations = json_loads(PQgetvalue(r, i, 12), 0, NULL),
                     .resolved = resolved,
                     .ends_at = ends_at,
                     .resolved_at = resolved_at,
                     .resolved_reason = PQgetisnull(r, i, 14) ? NULL : PQgetvalue(r, i, 14),
                     .resolved_by = PQgetisnull(r, i, 15) ? NULL : PQgetvalue(r, i, 15),
                     .superseded_by = PQgetisnull(r, i, 16) ? 0 : strtoll(PQgetvalue(r, i, 16), NULL, 10)};
}

static void msg_free(alert_msg *m)
{
    json_decref(m->details);
    json_decref(m->labels);
    json_decref(m->annotations);
}

/* deliver_one - send `phase` ("firing" or "resolved") of alert `id` through `sink`; record the outcome. */
static void deliver_one(const char *id, const char *sink, const char *phase, int attempts)
{
    char err[600] = "", ends_at[64];
    const char *p[] = {id};
    PGresult *r = db_exec_once("alerts_by_id", 1, p, err, sizeof(err));
    if (!r || PQntuples(r) != 1) {
        PQclear(r);
        return;
    }
    int resolved = !strcmp(phase, "resolved");
    alert_msg m;
    msg_of(r, 0, resolved, ends_at, sizeof(ends_at), &m);
    int ok = sink_deliver(sink, &m, err, sizeof(err)) == 0;
    msg_free(&m);
    PQclear(r);
    char delay[64], give_up[64], resend[64], e2[256];
    long long ms = g_srv.cfg.alert_retry_ms;
    for (int i = 1; i < attempts && ms < (long long)g_srv.cfg.alert_retry_max_s * 1000; i++)
        ms *= 2;
    if (ms > (long long)g_srv.cfg.alert_retry_max_s * 1000)
        ms = (long long)g_srv.cfg.alert_retry_max_s * 1000;
    snprintf(delay, sizeof(delay), "%lld milliseconds", ms);
    snprintf(give_up, sizeof(give_up), "%d seconds", g_srv.cfg.alert_give_up_s);
    snprintf(resend, sizeof(resend), "%d seconds", g_srv.cfg.alert_resend_s);
    const char *q[] = {id, sink, ok ? NULL : err, delay, give_up, phase, resend};
    /* A delivery still failing alert_give_up_s after the alert was raised (its resolution: after it ended)
     * stops: 'failed', kept with its last error for the dashboard and the API, and counted in /metrics. Once
     * Alertmanager has a firing alert, it hears of it again every alert_resend_s while it is open. */
    r = db_exec_once(ok ? "alerts_delivered" : "alerts_delivery_failed", 7, q, e2, sizeof(e2));
    int gave_up = r && PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), "failed");
    if (!r)
        log_warn("alerts: cannot record the delivery of alert %s to %s: %s", id, sink, e2);
    PQclear(r);
    metrics_alert_delivery(ok ? MA_DELIVERED : gave_up ? MA_GIVEN_UP : MA_RETRIED);
    if (ok)
        log_info("alert %s%s delivered to %s (attempt %d)", id, resolved ? " resolution" : "", sink, attempts);
    else if (gave_up)
        log_error("alert %s %snot delivered to %s after %d attempts in %d s; given up: %s", id,
                  resolved ? "resolution " : "", sink, attempts, g_srv.cfg.alert_give_up_s, err);
    else
        log_warn("alert %s %snot delivered to %s (attempt %d, next in %lld ms): %s", id, resolved ? "resolution " : "",
                 sink, attempts, ms, err);
}

/* What may be sent now: a firing message when due; a resolution when due, once its sink's firing message is no
 * longer pending (messages arrive in order) and, for Alertmanager, no re-send of the alert is in flight (the
 * resolution is the last word). */
#define CLAIMABLE                                                                                                      \
    "x.state = 'pending' AND (x.phase = 'firing' OR (NOT EXISTS (SELECT 1 FROM alert_deliveries f "                    \
    "WHERE f.alert_id = x.alert_id AND f.sink = x.sink AND f.phase = 'firing' AND f.state = 'pending') AND "           \
    "(x.sink <> 'alertmanager' OR NOT EXISTS (SELECT 1 FROM alerts a WHERE a.id = x.alert_id "                         \
    "AND a.resend_busy_until > now()))))"

/* lease_of - how long a claimed delivery of `sink` is kept from other lockstepd: its attempt's timeout
 * (sinks.h) and LEASE_SPARE_S, so that a receiver that takes its time never gets the message twice at once. */
static void lease_of(const char *sink, char *out, size_t cap)
{
    snprintf(out, cap, "%d seconds", sink_timeout_s(sink) + LEASE_SPARE_S);
}

/* deliver_due - claim this lane's due deliveries one at a time (a lease keeps other lockstepd off each) and send
 * them, up to LANE_BURST. Returns the seconds until the next one is due (0: more are due now). */
static double deliver_due(sink_lane *l)
{
    char err[512], lease[64];
    lease_of(l->sink, lease, sizeof(lease));
    const char *p[] = {l->sink, lease};
    for (int n = 0; n < LANE_BURST && !worker_stopping(&l->w); n++) {
        PGresult *r = db_exec_once("alerts_delivery_claim", 2, p, err, sizeof(err));
        if (!r)
            return 1.0;
        int got = PQntuples(r) == 1;
        if (got)
            deliver_one(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), atoi(PQgetvalue(r, 0, 3)));
        PQclear(r);
        if (!got)
            break;
        if (n + 1 == LANE_BURST)
            return 0;
    }
    const char *q[] = {l->sink, !strcmp(l->sink, "alertmanager") && g_srv.cfg.alertmanager_url[0] ? "true" : "false"};
    PGresult *r = db_exec_once("alerts_next_due", 2, q, err, sizeof(err));
    double wait = 5.0;
    if (r && !PQgetisnull(r, 0, 0))
        wait = atof(PQgetvalue(r, 0, 0));
    PQclear(r);
    return wait < 0.01 ? 0.01 : wait > 5.0 ? 5.0 : wait;
}

#define RESEND_MAX 500 /* alerts in one POST */

/* resend_due - post every open alert whose re-send is due to Alertmanager again, in one request, with the labels
 * it was raised with; claimed with a lease so that one lockstepd sends each. Returns how many it sent. */
static int resend_due(void)
{
    if (!g_srv.cfg.alertmanager_url[0])
        return 0;
    char err[600], resend[64], busy[64];
    snprintf(resend, sizeof(resend), "%d seconds", g_srv.cfg.alert_resend_s);
    snprintf(busy, sizeof(busy), "%d seconds", g_srv.cfg.alert_timeout_s + 5);
    const char *p[] = {resend, busy};
    PGresult *r = db_exec_once("alerts_resend_claim", 2, p, err, sizeof(err));
    if (!r) {
        log_warn("alerts: cannot claim the Alertmanager re-sends: %s (hint: retried in a moment)", err);
        return 0;
    }
    int n = PQntuples(r);
    if (!n) {
        PQclear(r);
        return 0;
    }
    json_t *arr = json_array();
    char ids[RESEND_MAX * 21 + 3];
    size_t il = (size_t)snprintf(ids, sizeof(ids), "{");
    for (int i = 0; i < n; i++) {
        char ends_at[64];
        alert_msg m;
        msg_of(r, i, 0, ends_at, sizeof(ends_at), &m);
        json_array_append_new(arr, sink_am_alert(&m));
        msg_free(&m);
        il += (size_t)snprintf(ids + il, sizeof(ids) - il, "%s%s", i ? "," : "", PQgetvalue(r, i, 0));
    }
    snprintf(ids + il, sizeof(ids) - il, "}");
    PQclear(r);
    char url[1200];
    sink_am_url(url, sizeof(url));
    char *body = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    int ok = body && sink_post(url, body, err, sizeof(err)) == 0;
    free(body);
    /* A failed re-send is tried again at the next period, as Prometheus does: Alertmanager keeps a firing
     * alert for AM_LAPSE_PERIODS periods, so a few failures in a row end nothing. */
    char e2[256];
    const char *q[] = {ids};
    if (db_do("alerts_resend_release", 1, q, e2, sizeof(e2)) < 0)
        log_warn("alerts: cannot record the Alertmanager re-send: %s", e2);
    metrics_alert_resends(ok, (unsigned long)n);
    if (ok)
        log_debug("alerts: %d open alerts re-sent to Alertmanager", n);
    else
        log_warn("alerts: re-sending %d open alerts to Alertmanager failed (next try in %d s): %s", n,
                 g_srv.cfg.alert_resend_s, err);
    return n;
}

static void lane_loop(worker *w)
{
    sink_lane *l = (sink_lane *)w;
    for (;;) {
        double wait = deliver_due(l);
        if (!strcmp(l->sink, "alertmanager") && resend_due() > 0)
            wait = 0;
        worker_lock(w);
        int stop = worker_wait_locked(w, wait);
        worker_unlock(w);
        if (stop)
            return;
    }
}

int alert_start(void)
{
    char err[1200];
    if (g_srv.cfg.mail_map[0] && mail_map_load(&site_mail, g_srv.cfg.mail_map, err, sizeof(err)) < 0) {
        log_error("cannot read mail_map: %s (hint: one \"user address\" pair a line, docs/suspects.md)", err);
        return -1;
    }
    if (g_srv.cfg.mail_admin[0] && !mail_addr_valid(g_srv.cfg.mail_admin))
        log_warn("mail_admin \"%s\" is not an address (local@domain): suspect alerts are not mailed",
                 g_srv.cfg.mail_admin);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (size_t i = 0; i < N_LANES; i++)
        if (worker_start(&lanes[i].w, 1) < 0) {
            alert_stop();
            return -1;
        }
    return 0;
}

void alert_stop(void)
{
    for (size_t i = 0; i < N_LANES; i++)
        worker_stop(&lanes[i].w);
    mail_map_release(&site_mail);
}

void alerts_register(void)
{
    db_register("alerts_resolve", RESOLVE_SQL("id = $1::bigint"));
    db_register("alerts_resolve_node", RESOLVE_SQL("$1 = ANY (blames)"));
    db_register("alerts_delivered",
                "WITH u AS (UPDATE alert_deliveries SET state = 'delivered', delivered_at = now(), last_error = $3 "
                "WHERE alert_id = $1 AND sink = $2 AND phase = $6 AND $4::interval IS NOT NULL "
                "AND $5::interval IS NOT NULL RETURNING state), "
                "a AS (UPDATE alerts SET resend_at = now() + $7::interval WHERE id = $1 AND $2 = 'alertmanager' "
                "AND $6 = 'firing' AND resolved_at IS NULL RETURNING 1) SELECT state FROM u");
    db_register("alerts_delivery_failed",
                "UPDATE alert_deliveries d SET next_at = now() + $4::interval, last_error = $3, state = CASE "
                "WHEN (CASE WHEN d.phase = 'resolved' THEN a.resolved_at ELSE a.created_at END) "
                "< now() - $5::interval THEN 'failed' ELSE 'pending' END FROM alerts a "
                "WHERE a.id = d.alert_id AND d.alert_id = $1 AND d.sink = $2 AND d.phase = $6 "
                "AND $7::interval IS NOT NULL RETURNING d.state");
    db_register("alerts_owner",
                "SELECT CASE WHEN g.owner_attested OR g.owner = ANY (u.users) THEN g.owner "
                "WHEN cardinality(u.users) = 1 THEN u.users[1] END FROM twin_groups g, LATERAL (SELECT "
                "coalesce(array_agg(DISTINCT x.u), '{}') AS users FROM (SELECT " RUN_ATTESTED_USER " AS u "
                "FROM runs r WHERE r.twin_group = g.twin_group) x WHERE x.u <> '') u WHERE g.twin_group = $1");
    db_register("alerts_users", GROUP_ATTESTED_USERS);
    db_register("alerts_run_user", "SELECT u FROM (SELECT " RUN_ATTESTED_USER " AS u FROM runs r WHERE r.run_key = "
                                   "$1::bigint) x WHERE u IS NOT NULL AND u <> ''");
    db_register("alerts_add",
                "INSERT INTO alerts (dedup_key, kind, twin_group, node, severity, summary, body, url, details, "
                "recipients, labels, annotations, blames, facts, mail_to) VALUES ($1, $2, $3, $4, $5, $6, $7, "
                "$8, $9::jsonb, $10::text[], $11::jsonb, $12::jsonb, $13::text[], $14, $15::text[]) "
                "ON CONFLICT (dedup_key) DO NOTHING RETURNING id");
    db_register("alerts_label_id",
                "UPDATE alerts SET labels = labels || jsonb_build_object('lockstep_alert_id', id::text) WHERE id = $1");
    db_register("alerts_delivery_add", "INSERT INTO alert_deliveries (alert_id, sink) VALUES ($1, $2)");
    db_register("alerts_by_id", "SELECT " ALERT_COLS " FROM alerts WHERE id = $1");
    db_register("alerts_delivery_claim",
                "UPDATE alert_deliveries d SET next_at = now() + $2::interval, "
                "attempts = d.attempts + 1 FROM (SELECT x.alert_id, x.sink, x.phase FROM alert_deliveries x "
                "WHERE x.sink = $1 AND " CLAIMABLE " AND x.next_at <= now() ORDER BY x.next_at LIMIT 1 "
                "FOR UPDATE SKIP LOCKED) c WHERE d.alert_id = c.alert_id AND d.sink = c.sink "
                "AND d.phase = c.phase RETURNING d.alert_id, d.sink, d.phase, d.attempts");
    db_register("alerts_next_due",
                "SELECT extract(epoch FROM least((SELECT min(x.next_at) FROM alert_deliveries x WHERE "
                "x.sink = $1 AND " CLAIMABLE "), (SELECT min(resend_at) FROM alerts WHERE resolved_at IS NULL "
                "AND $2)) - now())");
    db_register("alerts_resend_claim",
                "UPDATE alerts SET resend_at = now() + $1::interval, resend_busy_until = now() + $2::interval "
                "WHERE id IN (SELECT id FROM alerts WHERE resolved_at IS NULL AND resend_at <= now() "
                "ORDER BY resend_at LIMIT " XSTR(RESEND_MAX) " FOR UPDATE SKIP LOCKED) RETURNING " ALERT_COLS);
    db_register("alerts_resend_release", "UPDATE alerts SET resend_busy_until = NULL WHERE id = ANY ($1::bigint[])");
}
