/* alert_read.h - the alerts as the API shows them, and acknowledging one (which resolves it). */
#ifndef SERVER_ALERTS_ALERT_READ_H
#define SERVER_ALERTS_ALERT_READ_H

#include <stddef.h>
#include <libpq-fe.h>

/* The columns of an alert row, in this order: id, kind, twin_group, node, severity, summary, body, url, details
 * (JSON text), created_at, acked_at, acked_by, deliveries (a JSON array text of {sink, phase, state, attempts,
 * last_error, delivered_at}, or NULL), resolved_at, resolved_reason, resolved_by, superseded_by, labels and
 * annotations (JSON texts); times in ISO 8601, UTC. */
#define ALERT_NCOLS 19

/* alert_list_read - alerts newest first, `limit` from `offset`, of `kind` ("" any) in `state` ("" any, open,
 * acknowledged, resolved): rows of the ALERT_NCOLS columns and the count of all as column ALERT_NCOLS. NULL with
 * the database's message in `err`. Free with PQclear. */
PGresult *alert_list_read(const char *kind, const char *state, long long limit, long long offset, char *err,
                          size_t cap);

/* alert_read - alert `id` (decimal text) as one row of the ALERT_NCOLS columns (none when unknown). NULL with the
 * database's message in `err`. */
PGresult *alert_read(const char *id, char *err, size_t cap);

/* alert_acknowledge - acknowledge alert `id` (decimal text, `n` its value) by `by` and resolve it, in one transaction
 * under the evaluator's lock, run again while a delivery updating the alert at the same moment makes it fail.
 * *found: whether the alert exists. Returns 0, or -1 with the reason in `err`. */
int alert_acknowledge(const char *id, long long n, const char *by, int *found, char *err, size_t cap);

/* alert_read_register - prepare the statements this module runs (db_register). */
void alert_read_register(void);

#endif /* SERVER_ALERTS_ALERT_READ_H */
