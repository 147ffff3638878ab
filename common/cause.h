/* cause.h - why twins parted: the cause and origin ranks of a first divergence, one rule for lockstepd and `lockstep
 * diff`.
 *
 * Pure: no database, no JSON, no files. The input is each rank's first divergence (step, seq, record key,
 * whether a run lacks the record, whether the runs' input fingerprints of that record agree) and whether a
 * determinism-relevant configuration difference was found (common/judge/mdiff.h). The rule, in order:
 *
 *   restore        the earliest divergence is a restore difference: a resumed run's restored state block holds
 *                  other state than its twin saved at that step (common/recmatch.h's rec_restore_check); the
 *                  ranks where it does are the origin ranks. The program's checkpoint code; software.
 *   layout         the earliest divergence is in a logical tensor, its shards combined across ranks
 *                  (common/shard.h): runs of different rank counts on lockstepd, `lockstep diff --logical`
 *                  offline. Ranks do not line up across layouts, so no rank is named; software.
 *   configuration  the runs' configuration differs where it can change bits: that explains the divergence.
 *   missing        at the earliest point a run lacks the record the others hold.
 *   origin         the inputs of the earliest diverging record differed on some ranks only: those are the
 *                  origin ranks; the other ranks of the collective's own communicator received the change
 *                  through it. Also, without input fingerprints, the ranks that diverged first in program order
 *                  while others diverged later or not at all. Two kinds are flagged, for the evidence rules
 *                  (server/rules/hw_rule.h): `local`, the change never left the origin's process (a collective
 *                  on a communicator of one process moves no data; a reduce whose root alone diverged kept its
 *                  own buffer), and `root_input`, the origin is the root of a broadcast whose buffer already
 *                  differed before it (the value entered at the root from outside the recorded computation).
 *   every-rank     the inputs differed on every rank at once (two ranks or more): run-specific values (timings,
 *                  process ids, host names) or nondeterministic computation on every rank; software.
 *   operation      the inputs matched everywhere and the output differs: the operation itself.
 *   content        every rank diverged at the same record and no input fingerprints tell where it began.
 *
 * "The earliest point": the group's first divergence is at the smallest step S; among the ranks that diverge
 * at S, the earliest are those at the smallest seq and those whose diverging record has the same key (name,
 * occurrence) as that one (the same collective call, whatever records a rank made before it). Tested from a
 * table of cases in tests/unit/test_cause.c.
 */
#ifndef COMMON_CAUSE_H
#define COMMON_CAUSE_H

#include <stddef.h>
#include <stdint.h>

#define CAUSE_MAX_ORIGIN 64 /* origin ranks reported (the rest are counted) */

typedef enum cause_kind {
    CAUSE_NONE = 0, /* nothing diverged */
    CAUSE_ORIGIN,
    CAUSE_EVERY_RANK,
    CAUSE_OPERATION,
    CAUSE_CONFIGURATION,
    CAUSE_MISSING,
    CAUSE_CONTENT,
    CAUSE_RESTORE,
    CAUSE_LAYOUT,
} cause_kind;

/* cause_name - "origin", "every-rank", "operation", "configuration", "missing", "content", "restore",
 * "layout" ("none"). */
const char *cause_name(cause_kind k);

/* What the runs' input fingerprints of one diverging record say. */
typedef enum cause_inputs {
    CAUSE_IN_UNKNOWN = 0, /* some run's record carries none */
    CAUSE_IN_SAME,        /* every run carries them and they agree */
    CAUSE_IN_DIFF,        /* every run carries them and they differ */
} cause_inputs;

/* cause_inputs_of - compare `n` runs' input fingerprint lists (counts[i] words at lists[i]; a list may be
 * NULL with count 0). */
cause_inputs cause_inputs_of(const uint64_t *const *lists, const int *counts, int n);

/* One rank's first divergence. */
typedef struct cause_rank {
    int rank;
    int64_t step, seq;
    const char *name; /* borrowed; need not be NUL-terminated */
    size_t name_len;
    uint32_t occurrence;
    int missing; /* some run lacks the record */
    cause_inputs inputs;
    int restore;                  /* a restore difference: the entry (name, occurrence) of the state block of `step` */
    const char *restore_status;   /* with restore: "differs", "not-restored" or "not-saved" (NULL: unknown) */
    long not_restored, not_saved; /* with restore: saved entries not restored, restored entries never saved */
    int logical;                  /* a logical tensor of runs of different layouts (`rank` stands for none) */
    int comm_size;                /* processes of the record's communicator, 0 when not known (cause_comm_of) */
    const uint32_t *comm_ranks;   /* the world ranks it spans in its own order, borrowed; NULL when not listed */
    int comm_nlisted;
} cause_rank;

typedef struct cause_facts {
    const cause_rank *ranks; /* every rank's first divergence, in any order */
    size_t n;
    int nranks;        /* ranks the runs recorded, diverged or not */
    int configuration; /* 1: a determinism-relevant configuration difference was found */
} cause_facts;

typedef struct cause_result {
    cause_kind kind;
    int64_t step;                 /* the group's first diverging step */
    const cause_rank *first;      /* the divergence that stands for the group (points into the facts) */
    int origin[CAUSE_MAX_ORIGIN]; /* origin ranks, ascending (origin; also missing, content and restore: where seen
                                     first) */
    int norigin;
    int thin;       /* 1: the records cannot tell (no input fingerprints, a single rank) */
    int local;      /* origin: the change stayed in the origin's process (communicator of one, a reduce's root) */
    int root_input; /* origin: a broadcast's root held another value before it (read from outside) */
    int comm_size;  /* the diverging collective's communicator size, 0 when not known */
    char why[768];  /* one or two sentences for people */
} cause_result;

/* cause_comm_size - the communicator size a record states when it has no comm field: the shape the MPI and NCCL
 * wrappers give their records, {communicator size, elements}, for names starting "mpi." or "nccl." with two
 * dimensions; else 0 (not known). */
int cause_comm_size(const char *name, size_t name_len, int ndim, const int64_t *shape);

/* cause_ignore_why - the sentence that goes before a suggested ignore rule (every-rank and local causes): why
 * leaving the call out is right, for `v`. */
const char *cause_ignore_why(const cause_result *v);

/* cause_judge - apply the rule to `f` into `out`. With no divergence the
 * kind is CAUSE_NONE and `first` is NULL. Never fails. */
void cause_judge(const cause_facts *f, cause_result *out);

#endif /* COMMON_CAUSE_H */
