/* divergence_alert.h - the alert a twin group's first divergence raises: its summary, text, details, recipients and
 * Alertmanager labels; a new one when a re-evaluation changes what it reports, which supersedes the old. */
#ifndef SERVER_FLEET_DIVERGENCE_ALERT_H
#define SERVER_FLEET_DIVERGENCE_ALERT_H

#include <stddef.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "server/twins/findings.h"
#include "server/fleet/suspects_int.h"

/* divergence_alert_enqueue - enqueue group `g`'s first-divergence alert
 * inside the evaluator's open transaction: where and how the runs parted (the
 * findings' first divergence, with its cause, origin ranks, call site, and the
 * ignore rule when every rank's inputs differed), each run's values and exit,
 * the group's status, and `v`, the hardware-or-software classification, with
 * Alertmanager labels naming the diverging runs' nodes, GPUs and jobs. Once
 * for what it reports (a call that reports the same again is a no-op): when a
 * re-evaluation changes that (the first divergence, its cause, the group's
 * status, the classification, the implicated hardware or the diverging runs),
 * a new alert is raised and the group's open one (and an open follow-up of a
 * replay verdict, reached on the older facts) is resolved as superseded by it.
 * A replay verdict leaves the classification, and so these facts, unchanged:
 * its own follow-up supersedes this alert instead. A group that is not "diverged" (incomplete: its runs failed) raises
 * nothing unless it was alerted before; then the new alert says so. Returns 0,
 * or -1 with the database's message in `err`. */
int divergence_alert_enqueue(const grp *g, const grp_findings *vd, const grp_class *v, char *err, size_t cap);

/* divergence_alert_register - prepare the statements this module runs (db_register). */
void divergence_alert_register(void);

#endif /* SERVER_FLEET_DIVERGENCE_ALERT_H */
