/* mode.h - the job's Lockstep mode as the agent and its MPI and NCCL wrappers read it: one rule for all of them.
 *
 * The plugin sets LOCKSTEP_MODE for every task (off, consensus, fp, det); the consensus mode records only what the
 * run's check against itself needs (docs/agent.md, "Consensus"). */
#ifndef AGENT_MODE_H
#define AGENT_MODE_H

#include <stdlib.h>
#include <string.h>

/* mode_is_consensus - 1 when `mode` (LOCKSTEP_MODE's value, NULL when unset) names the consensus mode. */
static inline int mode_is_consensus(const char *mode)
{
    return mode && strcmp(mode, "consensus") == 0;
}

/* mode_consensus_env - mode_is_consensus of this process's LOCKSTEP_MODE, read once (the environment of a job does
 * not change its mode) and safe from any thread. */
static inline int mode_consensus_env(void)
{
    static int on = -1;
    int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
    if (v < 0) {
        v = mode_is_consensus(getenv("LOCKSTEP_MODE"));
        __atomic_store_n(&on, v, __ATOMIC_RELAXED);
    }
    return v;
}

#endif /* AGENT_MODE_H */
