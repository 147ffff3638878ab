/* sinks.h - alert formats and delivery: generic JSON webhook, Slack incoming webhook, Alertmanager v2, mail through a
 * sendmail-compatible program. */
#ifndef SERVER_ALERTS_SINKS_H
#define SERVER_ALERTS_SINKS_H

#include <stddef.h>
#include <jansson.h>

/* One alert as the sinks see it, in one phase of its life (strings and JSON borrowed). */
typedef struct alert_msg {
    long long id;
    const char *kind, *group, *node, *severity, *summary, *body, *url, *created_at;
    json_t *details;
    json_t *labels, *annotations; /* Alertmanager's, fixed when the alert was raised; may be NULL */
    const char *mail_to;          /* ','-separated addresses the mail goes to (fixed when it was raised) */
    int resolved;                 /* 0: the firing message; 1: the resolution message */
    const char *ends_at;          /* Alertmanager's endsAt: resolved_at when resolved, else when it lapses */
    const char *resolved_at, *resolved_reason, *resolved_by; /* NULL while the alert is open */
    long long superseded_by; /* the alert that replaced it (resolved_reason "superseded"), else 0 */
} alert_msg;

/* sink_payload - the request body `sink` ("webhook", "slack",
 * "alertmanager") sends for `a` in its phase (firing or resolved), as a new
 * JSON value (caller decrefs), or NULL for an unknown sink. */
json_t *sink_payload(const char *sink, const alert_msg *a);

/* sink_alert_name - Alertmanager's alertname for an alert of `kind` (divergence, suspect, verdict: a replay's
 * follow-up), a static string. */
const char *sink_alert_name(const char *kind);

/* sink_am_alert - one alert of Alertmanager's v2 API (POST /api/v2/alerts takes an array of them): its
 * labels and annotations, generatorURL, startsAt and endsAt, as a new JSON object (caller decrefs). */
json_t *sink_am_alert(const alert_msg *a);

/* sink_resolution_text - why the alert ended, in words ("acknowledged by ops", "node n3 repaired",
 * "superseded by alert 12"), into `out`. */
void sink_resolution_text(const alert_msg *a, char *out, size_t cap);

/* sink_post - POST the JSON `body` to `url` (alert_timeout_s). Returns 0 on a 2xx, else -1 with the reason
 * in `err`. */
int sink_post(const char *url, const char *body, char *err, size_t cap);

/* sink_am_url - the Alertmanager alerts endpoint (alert_alertmanager_url + "/api/v2/alerts") into `out`. */
void sink_am_url(char *out, size_t cap);

/* sink_mail_text - the whole message (headers and body) mailed for `a` to
 * the valid addresses of its mail_to (server/alerts/mailmap.h: nothing else
 * reaches a header), as a new string (caller frees), or NULL when none is
 * valid. */
char *sink_mail_text(const alert_msg *a);

/* sink_slack_escape - `s` with &, < and > escaped for Slack mrkdwn, as a
 * new string (caller frees). */
char *sink_slack_escape(const char *s);

/* sink_timeout_s - how long one attempt through `sink` may take before it is cut: alert_timeout_s for the HTTP
 * sinks, 30 s for the mail program (then killed). */
int sink_timeout_s(const char *sink);

/* sink_deliver - deliver `a` through `sink` once. Returns 0 when the
 * receiver took it (HTTP 2xx, or the mail program exited 0), else -1 with
 * the reason in `err`. */
int sink_deliver(const char *sink, const alert_msg *a, char *err, size_t cap);

#endif /* SERVER_ALERTS_SINKS_H */
