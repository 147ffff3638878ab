/* replay.h - verdicts by replay: the designed experiment that re-runs a diverged twin group's window on chosen nodes,
 * and the verdict its outcomes give. Pure: no database, no JSON.
 *
 * The design (rp_plan_make), from the group's runs, which one is odd, and the nodes Slurm offers:
 *
 *   three runs or more, a majority names the odd run O (on nodes X), a majority run M (on nodes Y):
 *     odd-again              O's job on X again         does the divergence come back where it happened?
 *     majority-on-odd-nodes  M's job on X               does it follow the nodes, whoever's job runs there?
 *     odd-on-majority-nodes  O's job on Y               is O's job sound on other nodes?
 *     odd-on-other-nodes     O's job on free nodes Z    a control outside the group (as many as nodes allow)
 *   two runs (or no majority) A on X and B on Y:
 *     run-again              A on X, B on Y             does each run repeat itself?
 *     swapped                A on Y, B on X             does the result follow the nodes or the job?
 *     other-nodes            A on free nodes Z          the third opinion that says which result is right
 *   a cause that is software by nature (configuration, every-rank, operation):
 *     run-again              each run on its own nodes  names the record at the finer level; the cause decides
 *
 * Placements need usable nodes: drained, down, failed, not responding or reserved nodes take no replay, and
 * the design says so in its notes (which become the reasons of an inconclusive verdict). Nodes lockstepd
 * already suspects are not taken as controls (other-nodes): a second faulty node there would make a hardware
 * fault look like software.
 *
 * The verdict (rp_judge), from every execution (the group's runs and the replays that ran) and the content each
 * produced over the window (executions that agree on every record they share have the same content):
 *
 *   1. the cause is software by nature                                   -> software
 *   2. no replay ran                                                     -> inconclusive (why each did not)
 *   3. two replays on the same nodes disagree, one of them with a result
 *      no other execution produced                                       -> software (it does not repeat itself)
 *   4. the healthy content: the original majority's; without one, the content seen on the most distinct
 *      nodes; a tie                                                      -> inconclusive (no majority says
 *                                                                           which result is wrong)
 *   5. no replay diverged: one ran on the odd run's nodes                -> transient-hardware (that node)
 *                          none could run there                          -> inconclusive
 *   6. replays diverged: the executions that diverged share no node      -> software (differs wherever it runs)
 *      the shared nodes less every node a clean execution ran on:
 *        none (it also ran clean there)                                  -> inconclusive (intermittent)
 *        several (never placed apart)                                    -> inconclusive
 *        one, and a replay ran clean elsewhere as a control              -> persistent-hardware (that node,
 *                                                                           its GPU when every diverging
 *                                                                           execution names the same one)
 *        one, no control                                                 -> inconclusive
 *
 * "Nodes" of an execution are its probe nodes: those that ran the group's origin ranks. Tested from tables of
 * cases in tests/unit/test_replay.c; docs/cli.md ("narrow") describes the experiment for people. The design is in
 * server/rules/replay_plan.h (.c), the verdict here (replay.c).
 */
#ifndef SERVER_RULES_REPLAY_H
#define SERVER_RULES_REPLAY_H

#include <stddef.h>

#include "server/rules/replay_plan.h"

#define RP_MAX_EXEC (RP_MAX_RUNS + RP_MAX_PLACEMENTS) /* executions one verdict weighs */
#define RP_MAX_STEPS 12                               /* steps of its reasoning */

/* How an execution came out. */
typedef enum rp_outcome {
    RP_RAN = 0,   /* it recorded the window: `content` says what it produced */
    RP_FAILED,    /* it ran but ended (or was cut) before the window was recorded */
    RP_NOT_RUN,   /* it was never started (no usable node, sbatch refused) */
    RP_TIMED_OUT, /* it had not recorded the window when the experiment's deadline passed */
} rp_outcome;

/* One execution: a run of the group (original) or a replay. Strings are borrowed. */
typedef struct rp_exec {
    int original;
    const char *label;               /* how the reasoning names it, e.g. "odd-again (job 45) on n3" */
    const char *probe[RP_MAX_PROBE]; /* nodes that ran the origin ranks */
    const char *gpu[RP_MAX_PROBE];   /* their GPUs, "" or NULL when unknown */
    int nprobe;
    rp_outcome outcome;
    int content; /* RP_RAN: its content class */
} rp_exec;

typedef struct rp_facts {
    const char *cause;     /* the group's cause (common/cause.h's name) */
    const char *cause_why; /* and its explanation */
    int cause_software;    /* configuration, every-rank or operation */
    int majority;          /* the content class of the original majority, -1 when none */
    const rp_exec *e;
    int n;
    const char (*notes)[320]; /* the design's notes */
    int nnotes;
} rp_facts;

typedef struct rp_verdict {
    const char *verdict;    /* software, persistent-hardware, transient-hardware, inconclusive */
    char node[RP_LIST_CAP]; /* the node a hardware verdict names ("" otherwise) */
    char gpu[128];
    int healthy;               /* the content judged healthy, -1 when none */
    int diverged[RP_MAX_EXEC]; /* per execution: 1 diverged, 0 clean, -1 no content */
    char reason[1200];
    char steps[RP_MAX_STEPS][400]; /* the reasoning, in the order the rule went */
    int nsteps;
} rp_verdict;

/* rp_judge - the verdict for `f` (at most RP_MAX_EXEC executions) into `out`. Never fails. */
void rp_judge(const rp_facts *f, rp_verdict *out);

#endif /* SERVER_RULES_REPLAY_H */
