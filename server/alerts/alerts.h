/* alerts.h - the alert outbox: alerts enqueued in the evaluator's transaction, resolved when acknowledged, repaired or
 * superseded; a delivery thread with retries and exponential backoff (at-least-once) that re-sends open alerts to
 * Alertmanager. */
#ifndef SERVER_ALERTS_ALERTS_H
#define SERVER_ALERTS_ALERTS_H

#include <stddef.h>
#include <jansson.h>

/* What one alert says. Strings are borrowed. */
typedef struct alert_spec {
    const char *dedup_key;     /* "group:NAME", "suspect:NODE:ID": a second enqueue of one key is a no-op */
    const char *kind;          /* divergence | suspect | verdict (a replay's follow-up) | consensus (a run's
                                * copies disagree) */
    const char *group;         /* or NULL */
    const char *run;           /* a run's key (runs.run_key) when the alert is that run's, or NULL: its attested
                                * user is the `user` label and, with mail_users, gets the mail */
    const char *node;          /* or NULL */
    const char *severity;      /* warning | critical */
    const char *summary;       /* one line */
    const char *description;   /* what happened and what follows, in a line or two (Alertmanager's
                                * `description`); NULL: the body's first line */
    const char *body;          /* the full text */
    const char *url;           /* dashboard deep link */
    json_t *details;           /* borrowed; may be NULL */
    int mail_users;            /* 1: mail the attested users of `group`'s runs, or of `run` (server/alerts/mailmap.h) */
    const char *mail_to;       /* an address the site configured (mail_admin), or NULL */
    json_t *labels;            /* borrowed; identifying Alertmanager labels beside the ones every alert has
                                * (alertname, kind, severity, service, cluster, lockstep_alert_id, and for a
                                * group's alert `user`, its attested owner: alerts.c, user_of); empty
                                * values are left out. May be NULL. */
    json_t *annotations;       /* borrowed; Alertmanager annotations (summary, description and dashboard,
                                * each one line, are added) */
    const char *const *blames; /* nodes the alert blames: repairing one resolves it */
    int nblames;
    const char *facts; /* what the alert reports, as a comparable string (or NULL) */
} alert_spec;

/* The kinds of alert, as a PostgreSQL text[] literal: what /metrics counts by kind (server/api/health.c). */
#define ALERT_KINDS_SQL "'{divergence,suspect,verdict,consensus}'"
/* How an alert ends (alerts.resolved_reason), likewise. */
#define ALERT_RESOLVED_REASONS_SQL "'{acknowledged,repaired,superseded,set-aside}'"

/* alert_enqueue - insert the alert and one pending delivery per configured
 * sink, on this thread's connection, inside the caller's open transaction
 * (so the alert exists exactly when what it reports is committed). Its mail
 * goes to the addresses the site maps the group's attested users to and to
 * `mail_to`, fixed now (alerts.mail_to); no mail delivery when there are
 * none. Returns the new alert's id, 0 when an alert with that dedup key
 * already exists, -1 on a database error (message in `err`). */
long long alert_enqueue(const alert_spec *a, char *err, size_t cap);

/* alert_enqueue_superseding - alert_enqueue `a`, then end the `nopen` alerts it replaces (`open`: their ids,
 * reason "superseded", pointing at the new one), all inside the caller's open transaction. Returns 0 (also when
 * `a` was a repeat and enqueued nothing), or -1 with the database's message in `err`. */
int alert_enqueue_superseding(const alert_spec *a, const long long *open, int nopen, char *err, size_t cap);

/* alert_resolve - end alert `id` if it is still open, inside the caller's open transaction: set resolved_at,
 * `reason` ("acknowledged", "superseded"), `by` (who acknowledged; may be NULL) and `superseded_by` (0: none),
 * and queue one resolution delivery for each HTTP sink (webhook, Slack, Alertmanager) that had the alert.
 * Returns 1 when it ended the alert, 0 when it was not open, -1 on a database error (message in `err`). */
int alert_resolve(long long id, const char *reason, const char *by, long long superseded_by, char *err, size_t cap);

/* alert_resolve_blaming - end every open alert that blames `node` (reason "repaired"), the same way, inside
 * the caller's open transaction. Returns how many it ended, or -1. */
int alert_resolve_blaming(const char *node, char *err, size_t cap);

/* alert_url - the dashboard link for `fragment` (e.g. "/twins/g1"; the
 * name is percent-encoded by the caller), from public_url or the listen
 * address, as a new string (caller frees). */
char *alert_url(const char *fragment);

/* alert_group_url - the dashboard link of twin group `group`'s page (alert_url of "/twins/NAME", the name
 * percent-encoded but for letters, digits and "-._~"), as a new string (caller frees). */
char *alert_group_url(const char *group);

/* alert_start - read mail_map (when set) and start a delivery lane per sink
 * (links use g_srv.port when public_url is not set). Returns 0, or -1 after
 * logging (mail_map unreadable or malformed: lockstepd does not start). */
int alert_start(void);

/* alert_stop - stop the delivery lanes (undelivered alerts stay pending
 * in the outbox and go out after the next start). */
void alert_stop(void);

/* alert_notify - wake the delivery lanes (new alerts committed). */
void alert_notify(void);

/* alerts_register - prepare the statements this module runs (db_register). */
void alerts_register(void);

#endif /* SERVER_ALERTS_ALERTS_H */
