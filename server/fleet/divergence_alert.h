/* divergence_alert.h - the alert a twin group's first divergence raises: its summary, text, details, recipients and Alertmanager labels; a new one when a re-evaluation changes what it reports, which supersedes the old. */
#ifndef SERVER_FLEET_DIVERGENCE_ALERT_H
#define SERVER_FLEET_DIVERGENCE_ALERT_H

#include <stddef.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "server/fleet/group.h"

/* divergence_alert_enqueue - enqueue group `g`'s first-divergence alert
 * inside the evaluator's open transaction: once for what it reports (the
 * first divergence, the verdict, the diverging runs' nodes, GPUs and jobs; a
 * call that reports the same again is a no-op). When a re-evaluation changes
 * that, a new alert is raised and the group's open one is resolved as
 * superseded by it. `divs` holds the group's divergences (rank, step, seq, name,
 * occurrence, kind, runs) with the first in row 0, `entries` that first
 * divergence's per-run entries (borrowed), `v` its classification. Returns 0,
 * or -1 with the database's message in `err`. */
int divergence_alert_enqueue(const grp *g, PGresult *divs, json_t *entries, const verdict *v, char *err, size_t cap);

#endif /* SERVER_FLEET_DIVERGENCE_ALERT_H */
