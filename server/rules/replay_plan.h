/* replay_plan.h - the designed experiment of a replay: which runs' jobs go on which nodes (the table in
 * server/rules/replay.h). Pure. */
#ifndef SERVER_RULES_REPLAY_PLAN_H
#define SERVER_RULES_REPLAY_PLAN_H

#include <stddef.h>

#include "common/hostlist.h"

#define RP_MAX_RUNS 16       /* runs of a group the design considers */
#define RP_MAX_PLACEMENTS 16 /* placements of one experiment */
#define RP_MAX_NODES 256     /* nodes of the cluster the design considers */
#define RP_MAX_PROBE 8       /* probe nodes of one execution */
#define RP_LIST_CAP 512      /* a node list's text */
#define RP_MAX_NOTES 8

/* One run of the group, as the design sees it. */
typedef struct rp_run {
    const char *id;    /* for notes */
    const char *nodes; /* the Slurm node list slurmstepd attested it ran on; "" or NULL: unknown, and no replay
                        * is placed there (a job's own report is never a placement) */
    int content;       /* its content class at the first divergence (0, 1, ...), -1 unknown */
} rp_run;

/* One node of the cluster and its Slurm state (sinfo's %t: idle, mix, alloc, drain, down, ... with a
 * trailing * when it does not respond), and whether lockstepd already holds it a hardware suspect (suspect or
 * drained): such a node is never a control, whose clean run the verdict relies on. */
typedef struct rp_node {
    const char *name, *state;
    int suspect;
} rp_node;

typedef struct rp_group {
    const rp_run *runs;
    int nruns;
    int odd;      /* the run a majority names as odd, -1 when none */
    int software; /* 1: the cause is software by nature (the runs are replayed in place only) */
} rp_group;

/* One placement: run `source`'s job on `nodes`. */
typedef struct rp_place {
    const char *role;
    int source;
    char nodes[RP_LIST_CAP];
    char why[256];
} rp_place;

typedef struct rp_plan {
    const char *kind; /* "three-run", "two-run" or "in-place" */
    rp_place p[RP_MAX_PLACEMENTS];
    int n;
    char notes[RP_MAX_NOTES][320]; /* what could not be placed, and why */
    int nnotes;
} rp_plan;

/* rp_node_usable - 1 when a node in Slurm state `state` can take a replay now or after the jobs it runs
 * (idle, mixed, allocated, completing), 0 when it cannot (drained or draining, down, failed, reserved,
 * maintenance, powered down, not responding). */
int rp_node_usable(const char *state);

/* rp_plan_make - the placements for group `g` on the cluster's `nodes` (at most `max`, 1..RP_MAX_PLACEMENTS),
 * in the order of the table above, into `out`. Returns 0, or -1 when the group cannot be planned (fewer than
 * two runs, a node list that does not parse), with the reason in out->notes[0]. */
int rp_plan_make(const rp_group *g, const rp_node *nodes, int nnodes, int max, rp_plan *out);

#endif /* SERVER_RULES_REPLAY_PLAN_H */
