/* cons_evidence.h - whether a run's consensus disagreement is hardware evidence, and against what: pure. */
#ifndef SERVER_RULES_CONS_EVIDENCE_H
#define SERVER_RULES_CONS_EVIDENCE_H

/* What lockstepd knows of one run's first consensus disagreement (a consensus_divergences row, judged by
 * common/consensus.h's majority rule) and of the hardware that ran its odd ranks, as slurmstepd attested it. */
typedef struct cons_ev_facts {
    int clear;        /* more than half of the copies agree: the odd ranks are named */
    int comm_size;    /* members of the communicator whose copies differ */
    int n_odd;        /* odd ranks: outside the majority, or every member when there is none */
    int unattested;   /* odd ranks no attested node ran (common/json/node_of.h) */
    int odd_nodes;    /* distinct attested nodes among the odd ranks */
    int odd_rank;     /* the first odd rank (for the reason) */
    const char *node; /* the attested node of the odd ranks when they share one (for the reason); may be NULL */
    const char *gpu;  /* its GPU when one odd rank names one; may be NULL or "" */
    /* The same disagreement elsewhere: runs of the same program within the software window whose consensus
     * disagreed at the same record. */
    int repeat_runs;  /* other such runs */
    int repeat_nodes; /* distinct attested odd nodes over this run and those */
    int program_runs; /* runs of the program within the window, this one included */
    int spread;       /* software_spread: nodes that no one fault explains */
} cons_ev_facts;

/* How much a verdict weighs on each implicated node (and GPU). */
typedef enum cons_ev_weight {
    CONS_EV_NONE = 0, /* no evidence */
    CONS_EV_WEAK,     /* weak_weight on each attested odd rank's node: one of these */
    CONS_EV_STRONG    /* 1 on the odd ranks' one node, and on the GPU when one odd rank names one */
} cons_ev_weight;

/* What the rule concluded. cls and code are static strings. */
typedef struct cons_ev_verdict {
    const char *cls;  /* hardware | inconclusive | software */
    const char *code; /* odd_rank | odd_node | pair | single | no_majority | several | no_hardware | repeats */
    cons_ev_weight weight;
    char reason[1024];
} cons_ev_verdict;

/* cons_ev_judge - apply the rule of docs/suspects.md ("Consensus disagreements") to `f` into `out`, the first
 * rule that fires deciding: a communicator of one is no evidence; a pair that differs is weak evidence on both;
 * no majority of three or more is inconclusive; several odd ranks on more than one node are software; an odd
 * rank no attested node ran gives none; the same disagreement on every run of the program, or on more nodes than
 * software_spread, is software; else strong evidence against the odd ranks' one node (and the GPU of a single odd
 * rank). Never fails. */
void cons_ev_judge(const cons_ev_facts *f, cons_ev_verdict *out);

#endif /* SERVER_RULES_CONS_EVIDENCE_H */
