/* narrow.h - replay experiments of diverged twin groups (`lockstep narrow`): designed and stored with their placements, evaluated as the replays record, judged into a verdict that reaches the twin API, the group's evidence, the node history and a follow-up alert.
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
#include <stdint.h>
#include <jansson.h>

#include "server/core/error.h"

#define NARROW_MAX_ORIGIN 16

/* narrow_create - design and store a replay experiment of twin group `group` from the request `req`
 * ({"nodes": [{"name", "state"}], "level", "window", "placements", "timeout_s", "actor"}). Returns the new
 * narrow's id (> 0), or -1 with `e` and the HTTP status in *status (400 bad request, 404 no such group, 409 the
 * group is not diverged, 503 the database). */
long long narrow_create(const char *group, json_t *req, int *status, srv_error *e);

/* narrow_set_jobs - record what became of narrow `id`'s placements: {"placements": [{"index": I, "job_id":
 * "J"} or {"index": I, "error": "why it was not submitted"}]}. Returns 0, or -1 with `e` and *status. */
int narrow_set_jobs(long long id, json_t *req, int *status, srv_error *e);

/* narrow_json - narrow `id` as the API shows it (a new reference): its group, window, design, placements with
 * their outcomes, verdict, reasoning and record. NULL when unknown (*status 404) or on a database error (503). */
json_t *narrow_json(long long id, int *status, srv_error *e);

/* narrow_list - the narrows of `group`, newest first, `limit` from id `before` (0: the newest), as list items
 * (summaries: id, state, verdict, node, gpu, reason, narrow_group, times). NULL on a database error. */
json_t *narrow_list(const char *group, long long limit, long long before, srv_error *e);

/* narrow_twin_fields - the twin API's fields for `group`: "replay" (its newest narrow's summary, or null),
 * "replays" (how many), and "narrow_of" ({"group", "id"} when `group` is a narrow's replay group, else null),
 * set into `o`. Returns 0, or -1 with the database's message. */
int narrow_twin_fields(const char *group, json_t *o, char *err, size_t cap);

/* narrow_pass - evaluate the running experiments (the fleet thread calls it on every pass): decide the
 * placements whose replays recorded the window, judge the experiments whose placements are all decided or
 * whose deadline passed, and for each finished one store the verdict, the node's history and the follow-up
 * alert in one transaction, then wake the evaluation of its group and its replay group (`wake`, called with each
 * group's name once the transaction committed; the fleet thread passes its own queue, so that this module calls
 * nothing of the thread that calls it). Sets *running to how many are still running. Returns how many
 * experiments finished, -1 on a database error (retried on the next pass). */
int narrow_pass(int *running, void (*wake)(const char *group));

/* What the suspects evaluation needs of a replay verdict. */
typedef struct narrow_verdict {
    long long id;
    char verdict[32];     /* software, persistent-hardware, transient-hardware, inconclusive */
    char node[256], gpu[128];
    char reason[1200];
    char narrow_group[300];
    char group[300];      /* the group narrowed (for a replay group) */
    int done;             /* the experiment finished */
    int64_t step;         /* the group's first diverging step */
    int origin[NARROW_MAX_ORIGIN], norigin; /* its origin ranks */
} narrow_verdict;

/* narrow_latest - the newest finished narrow of `group` into `out`, inside the caller's transaction. Returns 1
 * found, 0 none, -1 on a database error. */
int narrow_latest(const char *group, narrow_verdict *out, char *err, size_t cap);

/* narrow_of_group - whether `group` is a narrow's replay group: 1 with `out` filled (done says whether its
 * experiment finished), 0 when it is not, -1 on a database error. */
int narrow_of_group(const char *group, narrow_verdict *out, char *err, size_t cap);

/* narrow_replay_diverged - for a finished narrow: whether the replay of run `run_key` (a run of its replay
 * group) diverged (1), ran clean (0), or was not judged (-1); -2 on a database error. */
int narrow_replay_diverged(long long narrow_id, const char *run_key, char *err, size_t cap);

#endif /* SERVER_REPLAY_NARROW_H */
