/* glance.h - what a twin group's row shows beside its status: its kind, read for many groups at once, and each run's outcome (the pure rules: server/compare/kind.h, server/compare/outcome.h).
 *
 * verdict_load gives one group its kind (grp_verdict.kind) and every run of it its "outcome" through here; the
 * twin-group list reads the kinds of a page's candidates with glance_kinds; the runs list gives each run its
 * outcome. One reading for every reader, as with the status.
 */
#ifndef SERVER_COMPARE_GLANCE_H
#define SERVER_COMPARE_GLANCE_H

#include <stddef.h>
#include <jansson.h>

#include "server/compare/kind.h"

/* glance_register - prepare the statement glance_kinds runs. */
void glance_register(void);

/* glance_kinds - the kind of each of the `n` groups `names` (keys) into out[0..n): the facts twin_kind decides from
 * (the name its owner registered, whether a narrow made it, whether its owner holds NAME.change or NAME.noise) in one
 * query. Runs on this thread's connection. Returns 0, or -1 with the database's message in `err`. */
int glance_kinds(const char *const *names, int n, twin_kind_id *out, char *err, size_t cap);

/* glance_outcomes - set "outcome" on each run of `runs` (verdict_load's run objects: "run_id", "status",
 * "failed_ranks") by twin_outcome, for a group of status `status` whose first divergence is `first` (verdict_load's,
 * JSON null when none): its "runs" entries with "majority", and its "odd_run_id". Never fails. */
void glance_outcomes(json_t *runs, json_t *first, const char *status);

#endif /* SERVER_COMPARE_GLANCE_H */
