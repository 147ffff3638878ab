/* narrow.h - replay experiments of diverged twin groups (`lockstep narrow`): designed and stored with their placements,
 * evaluated as the replays record, judged into a verdict that reaches the twin API, the group's evidence, the node
 * history and a follow-up alert.
 *
 * The lifecycle (docs/cli.md, "narrow"; docs/server.md, "Narrows"):
 *   1. a client (the CLI) sends the cluster's nodes and their states: narrow_create designs the experiment
 *      (server/rules/replay.h), picks for each placement the command (the run's own, or its resume
 *      template from the newest checkpoint before the window) and stores it, state running;
 *   2. the client submits each placement to Slurm, in the narrow's twin group, and reports the job ids
 *      (narrow_set_jobs), or why one could not be submitted;
 *   3. the fleet thread (narrow_pass) finds each job's run, and once it recorded the window (or ended, or the
 *      deadline passed) compares it with the group's runs and the other replays (server/replay/replay_cmp.h):
 *      which result it produced, on which nodes;
 *   4. every placement decided: the verdict (rp_judge), the record the finer trace names, history on the node,
 *      the follow-up alert; the group and the narrow group are evaluated again, and their evidence follows
 *      the verdict (server/fleet/suspects.c).
 */
#ifndef SERVER_REPLAY_NARROW_H
#define SERVER_REPLAY_NARROW_H

#include <stddef.h>
#include <jansson.h>

#include "server/core/error.h"

/* narrow_create - design and store a replay experiment of twin group `group` from the request `req`
 * ({"nodes": [{"name", "state"}], "level", "window", "placements", "timeout_s", "actor"}). Returns the new
 * narrow's id (> 0), or -1 with `e` and the HTTP status in *status (400 bad request, 404 no such group, 409 the
 * group is not diverged, 503 the database). */
long long narrow_create(const char *group, json_t *req, int *status, srv_error *e);

/* narrow_set_jobs - record what became of narrow `id`'s placements: {"placements": [{"index": I, "job_id":
 * "J"} or {"index": I, "error": "why it was not submitted"}]}. Returns 0, or -1 with `e` and *status. */
int narrow_set_jobs(long long id, json_t *req, int *status, srv_error *e);

/* narrow_register - prepare the statements this module runs (db_register). */
void narrow_register(void);

#endif /* SERVER_REPLAY_NARROW_H */
