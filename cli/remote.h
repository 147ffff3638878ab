/* remote.h - a run's records fetched from lockstepd into the same form as a trace directory. */
#ifndef CLI_REMOTE_H
#define CLI_REMOTE_H

#include "cli/client.h"
#include "cli/tracedir.h"

/* remote_load_run - fetch every record of run `run_id` (all ranks, paged by
 * step, with their call sites) into `run`, so that diff_runs compares it
 * exactly like trace files; with `info`, also the run's own document (its
 * fields and manifests, GET /api/v1/runs/{id}: the caller decrefs it).
 * Returns 0, or the exit code (CLI_BAD_INPUT, CLI_UNREACHABLE,
 * CLI_SERVER_ERROR) after printing the error. Free with td_release. */
int remote_load_run(const client_conf *c, const char *run_id, td_run *run, json_t **info);

#endif /* CLI_REMOTE_H */
