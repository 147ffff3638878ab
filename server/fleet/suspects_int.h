/* suspects_int.h - what suspects.c and divergence_alert.c share: a twin group as the fleet evaluates it, its runs,
 * the hardware each rank ran on, and the classification of its first divergence. */
#ifndef SERVER_FLEET_SUSPECTS_INT_H
#define SERVER_FLEET_SUSPECTS_INT_H

#include "server/core/limits.h"

#define GROUP_MAX_RANKS 1024 /* ranks whose hardware the evaluation maps (manifests of higher ranks are not read) */
#define GROUP_MAX_RANKS_TEXT "1024"

/* The hardware one rank of one run ran on. `node` is what counts as hardware evidence: the node slurmstepd
 * attested (when the manifest's own host agrees with it, or names none), or with trust_reported_hosts the
 * manifest's host; NULL when nothing counts. `reported` is the manifest's own host, kept to be shown. */
typedef struct hw_slot {
    const char *node, *gpu, *gpu_name; /* borrowed from the manifests and attestations results */
    const char *reported;
    int attested; /* `node` is slurmstepd's word */
} hw_slot;

/* One run of the group being evaluated. */
typedef struct grp_run {
    const char *key, *id, *nodes, *user, *job;
    hw_slot *ranks; /* [nranks] */
    double weight;  /* involvement weight of this run's origin hardware */
} grp_run;

/* The group being evaluated. */
typedef struct grp {
    const char *name, *program; /* program: the first run's command */
    int nruns, nranks;
    grp_run runs[GROUP_MAX_RUNS];
} grp;

/* group_slot - the hardware of `rank` of run `run`; an empty slot outside the mapped ranks. */
static inline const hw_slot *group_slot(const grp *g, int run, int rank)
{
    static const hw_slot none = {0};
    if (rank < 0 || rank >= g->nranks)
        return &none;
    return &g->runs[run].ranks[rank];
}

/* Classification of the group's first divergence. */
typedef struct grp_class {
    const char *cls, *code;
    char reason[1024];
    char implicated[1024];
} grp_class;

#endif /* SERVER_FLEET_SUSPECTS_INT_H */
