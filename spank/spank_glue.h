/* spank_glue.h - what the plugin does in a job step, written against a small table of operations so that
 * it runs the same under slurmstepd and under the unit tests' fake SPANK API. */
#ifndef SPANK_SPANK_GLUE_H
#define SPANK_SPANK_GLUE_H

#include <stddef.h>
#include <stdint.h>

#include "spank/spank_conf.h"

/* The options, by their SPANK `val`. */
enum { LSP_OPT_MODE = 1, LSP_OPT_TWIN = 2, LSP_OPT_TRACE = 3, LSP_OPT_IGNORE = 4, LSP_OPT_RESUME = 5 };

/* The job environment and the user's options, as the plugin reaches them. */
typedef struct lsp_glue_ops {
    void *ctx;
    /* 1 and the value in buf, 0 when unset, -1 on error (also too long). */
    int (*get)(void *ctx, const char *name, char *buf, size_t cap);
    int (*set)(void *ctx, const char *name, const char *value); /* 0 or -1 */
    int (*unset)(void *ctx, const char *name);                  /* 0 or -1 */
    /* 1 and *value (NULL for a bare flag) when the user gave option `which`, else 0. */
    int (*option)(void *ctx, int which, const char **value);
    void (*user_msg)(void *ctx, const char *msg); /* reaches the user and the log */
    void (*log)(void *ctx, const char *msg);      /* reaches the log only */
} lsp_glue_ops;

#define LSP_MAX_LOCAL_TASKS 1024 /* tasks of one step on one node whose ranks the plugin attests */

/* What slurmstepd knows about the step. */
typedef struct lsp_job_facts {
    uint32_t job_id, step_id;
    int is_batch;   /* the batch script's step */
    int is_special; /* extern, interactive and other non-srun steps */
    uint32_t ntasks, node_id;
    uint32_t restarts; /* SLURM_RESTART_COUNT: how many times the job was requeued (0: never) */
    long cpus_per_task;
    char user[64];
    char command[2048];
    char **argv; /* the step's argument vector as slurmstepd holds it (S_JOB_ARGV, borrowed), argc words */
    int argc;
    uint32_t nlocal;                           /* tasks on this node (0: unknown, nothing attested) */
    uint32_t local_ranks[LSP_MAX_LOCAL_TASKS]; /* their global ranks */
} lsp_job_facts;

typedef struct lsp_step_result {
    int active;       /* tasks get the agent */
    char token[65];   /* the job's token ("" when no secret is configured) */
    char attest[65];  /* the job's attestation token: slurmstepd's own, never in the job's environment */
    char run_id[128]; /* from lockstepd when registration succeeded, else "" */
    int attested;     /* lockstepd took this node's attestation */
    char nodes[1024]; /* the step's node list as attested ("" when unknown) */
} lsp_step_result;

/* lsp_step_key - the step id lockstepd knows this step by: "S", or "S.rN" in the job's N-th requeue. A
 * requeued job keeps its job id and numbers its steps from 0 again, so without the suffix a rank of the new
 * attempt could find, and write into, the previous attempt's run. The agent makes the same key from
 * SLURM_STEP_ID and SLURM_RESTART_COUNT when the plugin is not there. */
void lsp_step_key(const lsp_job_facts *f, char *out, size_t cap);

/* lsp_step_scrub - remove from the step's environment what no task may hold, whatever its mode: the
 * operator's LOCKSTEP_ADMIN_TOKEN, which sbatch and srun pass on from the submitting shell. A failure is
 * logged. */
void lsp_step_scrub(const lsp_glue_ops *ops);

/* lsp_step_prepare - everything the plugin does to a step before its
 * tasks start: remove what lsp_step_scrub removes; decide the mode; under det check the user's environment and
 * set the deterministic runtime (fail closed on a conflict); under fp record
 * conflicts in LOCKSTEP_CONFLICTS; append the agent to LD_PRELOAD; set
 * LOCKSTEP_* (never the secret, never the attestation token; the site's
 * secret_vars= ahead of the job's LOCKSTEP_SECRET_VARS); mint the
 * tokens and the user's LOCKSTEP_DIGEST_KEY; register the step with lockstepd when one is configured (the first
 * node, with the attestation token: the run's user is slurmstepd's word) and
 * attest, from every node, which global ranks run on it, under which user and
 * node list (POST /api/v1/attest); both within timeout_ms together. A batch step gets the runtime and
 * LOCKSTEP_MODE only (its srun steps get the agent). Returns 0 to let the
 * step run, -1 to fail it: for the user's own error (a bad value, a det
 * conflict) or, with `enforce`, for lockstep's trouble; without enforce
 * lockstep's trouble (agent missing, secret unreadable, server down) is
 * logged and the step runs. `res` says what happened. */
int lsp_step_prepare(const lsp_glue_ops *ops, const lsp_conf *c, const lsp_job_facts *f, lsp_step_result *res);

/* lsp_step_attest - attest this node's part of the step (as lsp_step_prepare
 * does) within `budget_ms`, with res->attest and res->nodes; sets
 * res->attested on success. For a second try, from task_exit, when the first
 * did not get through. Failure is logged. */
void lsp_step_attest(const lsp_glue_ops *ops, const lsp_conf *c, const lsp_job_facts *f, int budget_ms,
                     lsp_step_result *res);

#endif /* SPANK_SPANK_GLUE_H */
