/* twin_row.h - what the twin API says of a group beside its findings, in both its reads (GET /api/v1/twins and GET
 * /api/v1/twins/{group}): the classification with its summary, the hardware its evidence suspects, the odd runs, each
 * divergence entry's ULP distance. */
#ifndef SERVER_API_TWIN_ROW_H
#define SERVER_API_TWIN_ROW_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "server/twins/twin_read.h"

/* Most hardware entries a group's "suspected" lists (its evidence's, strongest first). */
#define TWIN_SUSPECTED_MAX 8

/* twin_row_classification - what the fleet concluded of a group (docs/suspects.md) from row `i` of a result whose first
 * columns are the classification's (TWIN_CLASS_NCOLS, server/twins/twin_read.h): {"class": hardware | software | none,
 * "code": the rule that decided it, "reason": why, in words, "summary": the same in a dozen words at most
 * (server/rules/class_summary.h), "evaluated_at"}; JSON null when i < 0 (not evaluated yet: it has not diverged and
 * settled, nor have all its runs ended). Not to be confused with the first divergence's "cause" (where and how the runs
 * parted) nor with a replay's verdict. A new reference. */
json_t *twin_row_classification(PGresult *r, int i);

/* twin_row_suspected - give each group of `items` (an object of group objects keyed by group key) its "suspected":
 * the hardware its evidence holds involved (hw_exposures with a weight: the odd run's origin ranks' nodes and GPUs,
 * both runs' for a pair, or what a replay verdict names), [{"node", "gpu" (null when unknown), "weight" (1 strong,
 * 0.5 weak), "node_state" (the node's state now: ok, suspect, drained, repaired)}], strongest first, at most
 * TWIN_SUSPECTED_MAX; [] when none. `names_json` lists the groups (group_names_json). Returns 0, or -1 with the
 * database's message. */
int twin_row_suspected(const char *names_json, json_t *items, char *err, size_t cap);

/* twin_row_odd_runs - the run ids of the runs of `runs` outside the majority: whose "outcome" is "odd-one-out" or
 * "outside-majority" (server/rules/outcome.h), as a new JSON array. */
json_t *twin_row_odd_runs(json_t *runs);

/* twin_row_ulps - give each run entry of a divergence (`runs`) its "ulp" distance from the reference entry: the first
 * run of the majority when there is one, else the first run that holds the record. */
void twin_row_ulps(json_t *runs);

#endif /* SERVER_API_TWIN_ROW_H */
