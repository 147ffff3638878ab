/* rule.h - the first-divergence rule: among the records of one step and rank of a twin group's runs, which record diverges first and which run is the odd one out.
 *
 * Pure: no database, no JSON. Records are matched on (name, occurrence); a key diverges when a run
 * lacks it or holds it differently (common/recmatch.h decides "differently"). The first divergence is
 * the diverging key with the smallest seq in any run: up to it every run recorded the same things in
 * the same order, so that is where they parted. With three runs or more, the content that more than
 * half of the runs share is the majority, and a single run outside it is the odd one. Tested from a
 * table of cases in tests/unit/test_rule.c.
 */
#ifndef SERVER_COMPARE_RULE_H
#define SERVER_COMPARE_RULE_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"
#include "server/core/limits.h"

/* One record of one run (an index into the group's runs) at the step compared. */
typedef struct cmp_rec {
    int run;
    rec_record rec; /* name and shape borrowed from the caller */
    int row;        /* the caller's own index of the record (the rule ignores it) */
} cmp_rec;

/* The verdict for one step and rank. */
typedef struct cmp_first {
    int found;                                /* 0: every run holds the same records */
    int64_t seq;                              /* the smallest seq of the diverging key's records */
    const cmp_rec *by_run[GROUP_MAX_RUNS];    /* the diverging key's record in each run; NULL: missing there */
    int missing;                              /* some run lacks the record */
    int majority;                             /* a run holding the majority's content, or -1 when none */
    int agrees[GROUP_MAX_RUNS];               /* with a majority: 1 for each run that holds its content */
    int odd;                                  /* with 3+ runs: the one run outside the majority, else -1 */
} cmp_first;

/* cmp_rule_first - sort `recs` (n records of `nruns` runs; nruns <=
 * GROUP_MAX_RUNS) by key in place and fill `out` with the first divergence.
 * `out` points into `recs`. Never fails. */
void cmp_rule_first(cmp_rec *recs, size_t n, int nruns, cmp_first *out);

/* cmp_rule_same - 1 when two runs' records of one key hold the same (both
 * missing counts as the same). */
int cmp_rule_same(const cmp_rec *a, const cmp_rec *b);

#endif /* SERVER_COMPARE_RULE_H */
