/* mode.h - the job's Lockstep mode as the agent and its MPI and NCCL wrappers read it: one rule for all of them.
 *
 * The plugin sets LOCKSTEP_MODE for every task (off, consensus, fp, det); the consensus mode records only what the
 * run's check against itself needs (docs/agent.md, "Consensus"). */
#ifndef AGENT_MODE_H
#define AGENT_MODE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/consensus.h"

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

/* mode_every_of - LOCKSTEP_CONSENSUS_EVERY's value `v` (NULL when unset) as a rate: 1 (every collective) when unset,
 * empty, not a whole number, or out of 1..CONS_EVERY_MAX. */
static inline unsigned mode_every_of(const char *v)
{
    if (!v || !*v)
        return 1;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < 1 || n > CONS_EVERY_MAX ? 1 : (unsigned)n;
}

/* mode_consensus_every_env - in the consensus mode, one in how many of a communicator's collectives is
 * fingerprinted (LOCKSTEP_CONSENSUS_EVERY, read once; 1 in every other mode, where twins need every record).
 * Which ones: mode_sampled. */
static inline unsigned mode_consensus_every_env(void)
{
    static unsigned every; /* 0: not read yet */
    unsigned v = __atomic_load_n(&every, __ATOMIC_RELAXED);
    if (!v) {
        v = mode_consensus_env() ? mode_every_of(getenv("LOCKSTEP_CONSENSUS_EVERY")) : 1;
        __atomic_store_n(&every, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* mode_sampled - whether the `call`-th (from 0) consensus collective on a communicator is fingerprinted at one in
 * `every`: in each block of `every` calls, the one at position (block mod every), so that a program whose steps
 * make the same few collectives in the same order has each of them checked in turn, not always the first. MPI has
 * every member of a communicator make its collectives in the same order, so every member samples the same calls and
 * their consensus places line up. */
static inline int mode_sampled(uint64_t call, unsigned every)
{
    return every <= 1 || call % every == (call / every) % every;
}

#endif /* AGENT_MODE_H */
