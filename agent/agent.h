/* agent.h - what the agent's parts share inside liblockstep (not public). */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include <stdarg.h>

/* agent_set_error - set the calling thread's ls_last_error message. */
void agent_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* agent_last_error - the calling thread's last error message ("" if none). */
const char *agent_last_error(void);

/* agent_warn_once - print one "lockstep: ..." line on stderr per `key`
 * (a static flag owned by the caller); the job goes on. */
void agent_warn_once(int *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* agent_env_rank - the rank from LOCKSTEP_RANK, torchrun's RANK (with
 * LOCAL_RANK), OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID
 * (first set wins: the innermost launcher before the Slurm step), else 0.
 * Returns -1 when the variable that is set is not a rank number; *which
 * names it. */
long agent_env_rank(const char **which);

/* agent_new_uuid - a random (version 4) UUID in `out` (37 bytes). */
void agent_new_uuid(char out[37]);

#endif /* AGENT_AGENT_H */
