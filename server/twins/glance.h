/* glance.h - what each run of a twin group did, beside the group's status: its outcome (the pure rule:
 * server/rules/outcome.h), from the run's place at the group's earliest divergence.
 *
 * The earliest divergence is the cause rule's earliest point (common/cause.h): the first diverging step, its
 * smallest seq, its lowest rank. A run's place there (in the majority or not, the run named odd) and whether it
 * failed decide its outcome. findings_load gives every run of one group its "outcome" through glance_outcomes; the
 * runs list and the twin-group list read the same facts for many runs at once with glance_run_outcomes, so that
 * GET /api/v1/twins/{group}, the list and GET /api/v1/runs say the same of each run.
 */
#ifndef SERVER_TWINS_GLANCE_H
#define SERVER_TWINS_GLANCE_H

#include <stddef.h>
#include <jansson.h>

#include "server/twins/divergence.h"

/* glance_register - prepare the statements glance_run_outcomes runs. */
void glance_register(void);

/* glance_outcomes - set "outcome" and "outcome_why" on each run of `runs` (findings_load's run objects: "run_id",
 * "status", "failed_ranks") by twin_outcome, for a group of status `status` whose per-rank divergences are
 * divs[0..n) (findings_load's, their run entries typed). Never fails. */
void glance_outcomes(json_t *runs, const divergence *divs, int n, const char *status);

/* glance_run_outcomes - the outcome of each of `n` runs (run_ids[i] of group groups[i], whose status is
 * statuses[i]; groups[i] NULL: a run in no group, outcome NULL) into out[i] (a static string, or NULL), reading the
 * earliest divergence of the diverged groups and the failures of the incomplete groups' runs in two queries on this
 * thread's connection. Returns 0, or -1 with the database's message in `err`. */
int glance_run_outcomes(const char *const *run_ids, const char *const *groups, const char *const *statuses, int n,
                        const char **out, char *err, size_t cap);

#endif /* SERVER_TWINS_GLANCE_H */
