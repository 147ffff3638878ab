/* divergence_alert.h - the alert a twin group's first divergence raises: its summary, text, details and recipients. */
#ifndef SERVER_FLEET_DIVERGENCE_ALERT_H
#define SERVER_FLEET_DIVERGENCE_ALERT_H

#include <stddef.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "server/compare/verdict.h"
#include "server/fleet/group.h"

/* divergence_alert_enqueue - enqueue group `g`'s first-divergence alert
 * (once per group: a second call is a no-op) inside the evaluator's open
 * transaction: where and how the runs parted (the verdict's first divergence,
 * with its cause, origin ranks, call site, and the ignore rule when every
 * rank's inputs differed), each run's values and exit, the group's status,
 * and `v`, the hardware-or-software classification. Returns 0, or -1 with
 * the database's message in `err`. */
int divergence_alert_enqueue(const grp *g, const grp_verdict *vd, const verdict *v, char *err, size_t cap);

#endif /* SERVER_FLEET_DIVERGENCE_ALERT_H */
