/* hw_rule.h - whether hardware is the better explanation of a twin group's first divergence: the fleet's evidence
 * rules, one pure rule (no database, no JSON). server/fleet/suspects.c reads the facts and writes what it decides.
 *
 * In order; the first that applies decides, and only the last gives hardware evidence:
 *   1 the cause is software by nature: configuration (the manifest diff explains it), every-rank (every rank's
 *     inputs differed at once), operation, restore, layout (common/cause.h)                      -> software
 *   2 local: the difference never left the origin's process: a collective on a communicator of one process moves
 *     no data; a reduce whose root alone diverged kept its own buffer. What the program does with a buffer no
 *     other process sees (often a word it never uses) is no fault Lockstep saw arise         -> software, `local`
 *   3 root input: the origin is the root of a broadcast whose buffer already differed before it, nothing having
 *     diverged earlier: the value came from outside the recorded computation (a file the root read, the clock,
 *     its environment)                                                                  -> software, `root_input`
 *   4 every rank diverged at one record that carries no input fingerprints (cause content, two ranks or more)
 *     and no majority of three runs or more names an odd run on each: the records cannot tell where the change
 *     began, and evidence spread over every node of a pair names none                -> inconclusive, `content`
 *   5 two runs that differ on an origin rank ran it on the same hardware: a transient fault does exactly that,
 *     and so does nondeterminism; a replay tells them apart                    -> inconclusive, `same_hardware`
 *   6 no attested hardware ran an origin rank                                    -> software, `no_hardware`
 *   7 otherwise hardware: strong (`minority`, three runs or more with a majority on every origin rank) or weak
 *     (`pair`). (The spread over unrelated nodes, which needs the fleet's history, is applied by the caller
 *     between 6 and 7.)
 * An absorbed difference (a collective's inputs differed on some ranks while its outputs matched) is no evidence:
 * the runs' results agree, and a value read from outside looks the same as a fault there; it is shown, not
 * weighed. Tested from a table of cases in tests/unit/test_hw_rule.c; docs/suspects.md gives an example of each.
 */
#ifndef SERVER_RULES_HW_RULE_H
#define SERVER_RULES_HW_RULE_H

#include <stddef.h>

#include "common/cause.h"

/* What the rule decides from. */
typedef struct hw_facts {
    cause_kind cause;
    int local, root_input;      /* cause_result's flags */
    int nranks;                 /* ranks the runs recorded */
    const char *cause_why;      /* the cause's sentences (borrowed) */
    const char *config_summary; /* the manifest diff's summary, for configuration (borrowed, may be NULL) */
    int same_hw;                /* two runs that differ on an origin rank ran it on the same node (and GPU) */
    int same_hw_rank;
    const char *same_hw_node, *same_hw_gpu; /* borrowed; gpu may be "" */
    int attested;                           /* some attested hardware ran an origin rank */
    int origin_rank;                        /* the first origin rank (for the no_hardware reason) */
    int strong;                             /* three runs or more and a majority on every origin rank */
    const char *implicated;                 /* the nodes evidence would go to, comma-separated (borrowed) */
    const char *group;                      /* the twin group, for the narrow hint (borrowed) */
} hw_facts;

typedef struct hw_verdict {
    const char *cls;  /* "hardware", "software" or "inconclusive" */
    const char *code; /* the rule: configuration, every_rank, operation, restore, layout, local, root_input,
                         content, same_hardware, no_hardware, minority, pair */
    char reason[1024];
} hw_verdict;

/* hw_judge - apply the rule to `f` into `out`. Never fails. */
void hw_judge(const hw_facts *f, hw_verdict *out);

/* hw_is_evidence - 1 when `v` puts evidence on hardware (class hardware). */
int hw_is_evidence(const hw_verdict *v);

#endif /* SERVER_RULES_HW_RULE_H */
