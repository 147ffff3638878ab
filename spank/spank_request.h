/* spank_request.h - the user's request to the plugin: the --lockstep* options and their SLURM_LOCKSTEP* variables,
 * checked where they are typed (each option as srun, sbatch or salloc parses it; the variables and the options
 * together at submission) and read in slurmstepd. Tested by tests/unit/test_spank_logic.c and
 * tests/unit/test_spank_callbacks.c. */
#ifndef SPANK_SPANK_REQUEST_H
#define SPANK_SPANK_REQUEST_H

#include <stddef.h>

#include "spank/spank_conf.h"
#include "spank/spank_glue.h"

/* lsp_request_check - validate one value of request `which` (LSP_OPT_*) as the user gave it: `from` names
 * the environment variable it came from (SLURM_LOCKSTEP_TWIN, ...), NULL for the option. Returns 0, or -1 with a
 * user-facing reason in `why` that names the option or the variable as the user wrote it. */
int lsp_request_check(int which, const char *value, const char *from, char *why, size_t cap);

/* lsp_request_read - the user's request: each --lockstep* option, else its SLURM_LOCKSTEP,
 * SLURM_LOCKSTEP_TWIN, SLURM_LOCKSTEP_TRACE, SLURM_LOCKSTEP_IGNORE or SLURM_LOCKSTEP_RESUME variable (ignore
 * patterns also from the job's own LOCKSTEP_IGNORE, the agent's variable, when neither is given). Returns 0, or
 * -1 with a user-facing reason in `why` for an invalid or unreadable value, naming where it came from. */
int lsp_request_read(const lsp_glue_ops *ops, lsp_request *r, char *why, size_t cap);

/* lsp_submit_check - the request as srun, sbatch or salloc sees it before anything is allocated: ops->get reads
 * the submitting shell's environment, ops->option the options parsed so far, `c` the plugstack arguments. Every
 * SLURM_LOCKSTEP* variable must hold a valid value (each option was checked as it was parsed); and a
 * --lockstep-twin, -trace, -ignore or -resume (or its variable) that would do nothing because the job runs
 * without lockstep (no --lockstep where the site's default and enforce are off, or --lockstep=off) is worth a
 * warning. Returns 0 when there is nothing to say, 1 with the warning in `why`, -1 with the error in `why` (the
 * submission must fail). */
int lsp_submit_check(const lsp_glue_ops *ops, const lsp_conf *c, char *why, size_t cap);

#endif /* SPANK_SPANK_REQUEST_H */
