/* alerts.h - the alert outbox: alerts enqueued in the evaluator's transaction, a delivery thread with retries and exponential backoff (at-least-once). */
#ifndef SERVER_FLEET_ALERTS_H
#define SERVER_FLEET_ALERTS_H

#include <stddef.h>
#include <jansson.h>

/* What one alert says. Strings are borrowed. */
typedef struct alert_spec {
    const char *dedup_key;         /* "group:NAME", "suspect:NODE:ID": a second enqueue of one key is a no-op */
    const char *kind;              /* divergence | suspect */
    const char *group;             /* or NULL */
    const char *node;              /* or NULL */
    const char *severity;          /* warning | critical */
    const char *summary;           /* one line */
    const char *body;              /* the full text */
    const char *url;               /* dashboard deep link */
    json_t *details;               /* borrowed; may be NULL */
    const char *const *recipients; /* job users for mail */
    int nrecipients;
} alert_spec;

/* alert_enqueue - insert the alert and one pending delivery per configured
 * sink, on this thread's connection, inside the caller's open transaction
 * (so the alert exists exactly when what it reports is committed). Returns
 * the new alert's id, 0 when an alert with that dedup key already exists,
 * -1 on a database error (message in `err`). */
long long alert_enqueue(const alert_spec *a, char *err, size_t cap);

/* alert_url - the dashboard link for `fragment` (e.g. "/twins/g1"; the
 * name is percent-encoded by the caller), from public_url or the listen
 * address, as a new string (caller frees). */
char *alert_url(const char *fragment);

/* alert_start - start the delivery thread (links use g_srv.port when
 * public_url is not set). Returns 0 or -1. */
int alert_start(void);

/* alert_stop - stop the delivery thread (undelivered alerts stay pending
 * in the outbox and go out after the next start). */
void alert_stop(void);

/* alert_notify - wake the delivery thread (new alerts committed). */
void alert_notify(void);

#endif /* SERVER_FLEET_ALERTS_H */
