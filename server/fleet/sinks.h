/* sinks.h - alert formats and delivery: generic JSON webhook, Slack incoming webhook, Alertmanager v2, mail through a sendmail-compatible program. */
#ifndef SERVER_FLEET_SINKS_H
#define SERVER_FLEET_SINKS_H

#include <stddef.h>
#include <jansson.h>

/* One alert as the sinks see it (strings borrowed; details borrowed). */
typedef struct alert_msg {
    long long id;
    const char *kind, *group, *node, *severity, *summary, *body, *url, *created_at;
    json_t *details;
    const char *recipients; /* ','-separated job users (mail) */
} alert_msg;

/* sink_payload - the request body `sink` ("webhook", "slack",
 * "alertmanager") sends for `a`, as a new JSON value (caller decrefs), or
 * NULL for an unknown sink. */
json_t *sink_payload(const char *sink, const alert_msg *a);

/* sink_mail_text - the whole message (headers and body) mailed for `a` to
 * the valid addresses among its recipients, as a new string (caller
 * frees), or NULL when no recipient is valid. */
char *sink_mail_text(const alert_msg *a);

/* sink_slack_escape - `s` with &, < and > escaped for Slack mrkdwn, as a
 * new string (caller frees). */
char *sink_slack_escape(const char *s);

/* sink_deliver - deliver `a` through `sink` once. Returns 0 when the
 * receiver took it (HTTP 2xx, or the mail program exited 0), else -1 with
 * the reason in `err`. */
int sink_deliver(const char *sink, const alert_msg *a, char *err, size_t cap);

#endif /* SERVER_FLEET_SINKS_H */
