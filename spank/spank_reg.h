/* spank_reg.h - register a job step with lockstepd and report task exits, within a hard time limit. */
#ifndef SPANK_SPANK_REG_H
#define SPANK_SPANK_REG_H

#include <stddef.h>

#include "common/wire.h"

/* lsp_reg_register - POST the step (wire_run_body) to `server`/api/v1/runs with
 * `Authorization: Bearer token` (no header when token is NULL or ""), giving
 * up after `timeout_ms` in all. On 201 copies the returned run id into
 * `run_id` and returns 0 (200: the run an earlier attempt with the same
 * client_id registered); otherwise returns -1 with the reason in `why`.
 * Never waits longer than timeout_ms, never retries. */
int lsp_reg_register(const char *server, const char *token, const wire_run *info, int timeout_ms, char *run_id,
                     size_t run_id_cap, char *why, size_t cap);

/* lsp_reg_attest - POST what slurmstepd attests of this step on this node
 * (wire_attest_body) to `server`/api/v1/attest with the job's attestation
 * token, within `timeout_ms`. Returns 0 on 200, else -1 with `why`. Never
 * retries. */
int lsp_reg_attest(const char *server, const char *attest_token, const wire_attest *a, int timeout_ms, char *why,
                   size_t cap);

/* lsp_reg_end - POST {"rank", "exit_code"} to `server`/api/v1/runs/RUN/end,
 * within `timeout_ms`. Returns 0 on a 2xx answer, else -1 with `why`. */
int lsp_reg_end(const char *server, const char *token, const char *run_id, long rank, int exit_code, int timeout_ms,
                char *why, size_t cap);

/* lsp_reg_lookup - find the run of job `job_id`, step `step_id` on
 * lockstepd (GET /api/v1/runs?job=&step=), within `timeout_ms`. Returns 0
 * with the id in `run_id`; 1 when lockstepd answered but has no such run (yet);
 * -1 with `why` when it could not be asked (away, no read access). */
int lsp_reg_lookup(const char *server, const char *token, const char *job_id, const char *step_id, int timeout_ms,
                   char *run_id, size_t run_id_cap, char *why, size_t cap);

#endif /* SPANK_SPANK_REG_H */
