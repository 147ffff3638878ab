/* first.h - the first divergence: among twin runs' records of one rank, which record diverges first and which run is
 * the odd one out; one rule for lockstepd's comparison and `lockstep diff`.
 *
 * Pure: no database, no JSON, no files. Records are matched on their key (step, name, occurrence); a key diverges
 * when a run lacks it or holds it differently (common/recmatch.h decides "differently"). A record's place is its
 * position among its run's records of its step, in seq order. Up to the first divergence every run recorded the
 * same things in the same order, so the diverging key that comes first is where they parted: the smallest step,
 * then the smallest place any run holds it at, then the lowest run holding it there, then name and occurrence.
 * Places, not seqs, are compared across runs: a resumed run numbers its records from another seq, and they still
 * line up. A key repeated within one run counts once, as its first record. With three runs or more, the content
 * that more than half of the runs share (missing counts as a content) is the majority, and a single run outside
 * it is the odd one. lockstepd applies it to one step of one rank of a twin group's runs (and to the logical
 * tensors of runs of different rank counts), `GET /api/v1/compare` to two runs, `lockstep diff` to each step of a
 * rank of two traces. Tested from a table of cases in tests/unit/test_first.c.
 */
#ifndef COMMON_FIRST_H
#define COMMON_FIRST_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

#define FIRST_MAX_RUNS 64 /* runs one call compares (lockstepd's GROUP_MAX_RUNS is no more) */

/* One record of one run (an index into the caller's runs). */
typedef struct first_rec {
    int run;
    rec_record rec; /* name and shape borrowed from the caller */
    int row;        /* the caller's own index of the record (the rule ignores it) */
    size_t place;   /* set by first_find: the record's position among its run's records of its step */
} first_rec;

/* The first divergence of the records given. */
typedef struct first_div {
    int found;                               /* 0: every run holds the same records */
    int64_t step;                            /* the diverging key's step */
    int64_t seq;                             /* the smallest seq of the diverging key's records */
    const first_rec *by_run[FIRST_MAX_RUNS]; /* the diverging key's record in each run; NULL: missing there */
    int missing;                             /* some run lacks the record */
    int majority;                            /* a run holding the majority's content, or -1 when none */
    int agrees[FIRST_MAX_RUNS];              /* with a majority: 1 for each run that holds its content */
    int odd;                                 /* with 3+ runs: the one run outside the majority, else -1 */
} first_div;

/* first_find - sort `recs` (n records of `nruns` runs; runs outside [0, nruns) and past FIRST_MAX_RUNS are not
 * compared) in place, number their places, and fill `out` with their first divergence. `out` points into `recs`.
 * Never fails, allocates nothing. */
void first_find(first_rec *recs, size_t n, int nruns, first_div *out);

/* first_same - 1 when two runs' records of one key hold the same (both missing counts as the same). */
int first_same(const first_rec *a, const first_rec *b);

#endif /* COMMON_FIRST_H */
