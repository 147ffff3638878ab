/* glance.h - what each run of a twin group did, beside the group's status: its outcome (the pure rule: server/compare/outcome.h), from the verdict's facts.
 *
 * verdict_load gives every run of a group its "outcome" through here, so that GET /api/v1/twins/{group}, the
 * twin-group list and the runs list (through verdict_load) say the same of each run.
 */
#ifndef SERVER_COMPARE_GLANCE_H
#define SERVER_COMPARE_GLANCE_H

#include <jansson.h>

/* glance_outcomes - set "outcome" on each run of `runs` (verdict_load's run objects: "run_id", "status",
 * "failed_ranks") by twin_outcome, for a group of status `status` whose first divergence is `first` (verdict_load's,
 * JSON null when none): its "runs" entries with "majority", and its "odd_run_id". Never fails. */
void glance_outcomes(json_t *runs, json_t *first, const char *status);

#endif /* SERVER_COMPARE_GLANCE_H */
