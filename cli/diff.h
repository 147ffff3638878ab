/* diff.h - compare two runs' traces: per rank the first divergence, overall the first step. */
#ifndef CLI_DIFF_H
#define CLI_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "cli/tracedir.h"
#include "common/cause.h"
#include "common/recmatch.h"

typedef enum diff_kind {
    DIFF_MATCH = 0,
    DIFF_CONTENT, /* same record, different fingerprint */
    DIFF_DTYPE,   /* same record, different dtype */
    DIFF_SHAPE,   /* same record, different shape or byte count */
    DIFF_MISSING, /* in A, not in B */
    DIFF_EXTRA,   /* in B, not in A */
    DIFF_ONLY_A,  /* the whole rank is in A only */
    DIFF_ONLY_B,  /* the whole rank is in B only */
    DIFF_RESTORE, /* a restored state block differs from its twin's saved state (or records) at that step */
    DIFF_SCALES,  /* same record, same values, different scales */
} diff_kind;

const char *diff_kind_name(diff_kind k);

/* One rank's result. `a` and `b` point into the runs (NULL where absent). */
typedef struct diff_rank {
    uint32_t rank;
    diff_kind kind;
    int64_t step;            /* step of the first divergence */
    const rec_record *a, *b; /* the diverging records */
    size_t compared;         /* records compared on this rank (of A) */
    int64_t first_chunk;     /* first differing 1 MiB chunk, or -1 */
    uint64_t ulp;            /* scalars: distance in ULPs (UINT64_MAX: NaN) */
    int has_ulp;
    /* DIFF_RESTORE: `a` and `b` are the entry in A and in B (NULL where absent), `step` the block's step */
    int restored_by;            /* 0: A restored (B is the reference), 1: B restored */
    rec_restore_result restore; /* the check's result (its pointers point into the runs) */
    int restore_ref_saved;      /* the reference was a saved block (else the twin's records of the step) */
    /* every restored block of this rank, either side */
    size_t restores, restores_same, restores_unverified;
    size_t restore_compared; /* state entries those checks compared */
} diff_rank;

typedef struct diff_result {
    int diverged;
    int64_t first_step; /* smallest divergence step over ranks */
    size_t n_ranks;
    diff_rank *ranks; /* sorted by rank */
    int overlap;
    int64_t overlap_lo, overlap_hi; /* with --overlap: the steps compared */
    size_t compared;                /* records compared, over all ranks both runs hold (restored state entries checked
                                       included) */
    cause_result cause;             /* diff_cause's answer (kind CAUSE_NONE before it, or when nothing diverged) */
    cause_rank *cause_ranks;        /* what cause.first points into */
    uint32_t *comm_ranks;           /* the cause ranks' communicators' world ranks (REC_COMM_LIST_MAX each) */
} diff_result;

/* diff_runs - compare runs `a` and `b`, matching records on (rank, step,
 * name, occurrence). With `overlap`, only the steps both runs have count.
 * Entries of state blocks are not step records: each restored block (either
 * side) is checked against the other run's saved block of its step, or
 * else its records of that step (rec_restore_check); a difference there is
 * the rank's first divergence unless a step at or before the block's
 * already diverged. Returns 0, or -1 when out of memory. Free with
 * diff_release. */
int diff_runs(const td_run *a, const td_run *b, int overlap, diff_result *out);

void diff_release(diff_result *r);

/* diff_cause - the cause and origin ranks of the runs' first divergence, by
 * the rule lockstepd applies (common/cause.h), into res->cause: each diverged
 * rank's first divergence (a restore difference as one), its input
 * fingerprints in A and B compared; `configuration` says whether the runs'
 * configurations differ where it can change results (their manifest diff,
 * when the manifests are known); `logical`: the runs were compared on logical
 * tensors (diff --logical), whose divergences stand for no rank. Returns 0,
 * or -1 when out of memory. */
int diff_cause(diff_result *res, int configuration, int logical);

/* diff_rank_of - the result of rank `rank`, or NULL. */
const diff_rank *diff_rank_of(const diff_result *res, uint32_t rank);

#endif /* CLI_DIFF_H */
