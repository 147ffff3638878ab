/* consensus.h - copies that must be bit-identical inside one run: which records count, how a rank folds them, and
 * which ranks are odd when the copies differ. One rule for the agent, lockstepd and the lockstep command.
 *
 * After an allreduce, allgather or broadcast every rank of the communicator holds the same bytes, and replicas
 * declared with ls_replica hold the same tensor across their group. Each such record carries its consensus place
 * (key, index: common/record.h, extension field 6). A rank folds the records of each window of CONS_WINDOW
 * places of one (step, key) into a consensus digest; every member of the group computes the same digest unless
 * its copy differs. The key is the same on every member (the sorted world ranks), so the digests of one (step,
 * key, window) line up across the ranks that sent them. */
#ifndef COMMON_CONSENSUS_H
#define COMMON_CONSENSUS_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

#define CONS_WINDOW 64 /* consensus records per digest: a program without steps is checked window by window */
/* CONS_EVERY_MAX - the largest sampling rate (LOCKSTEP_CONSENSUS_EVERY, the plugin's consensus_every=). */
#define CONS_EVERY_MAX 1000000

/* cons_key - the key of the group of world ranks `ranks[0..n)` in any order: rec_comm_id of the ranks sorted
 * (duplicates counted once). The same on every member and in every run. n = 0 gives the key of no ranks. */
uint64_t cons_key(const uint32_t *ranks, size_t n);

/* cons_term - what a copy must share with the other members' copies at its place: the record's name (the kind of
 * collective), its byte count and its fingerprint. Nothing that may differ between correct members is in it: not the
 * occurrence (a rank counts a name over all its communicators, and ranks of one communicator make different calls on
 * others: Quantum ESPRESSO's row and column groups), not the call site (a broadcast's root and its receivers call from
 * different functions: BLACS's Cdgebs2d and Cdgebr2d), not the dtype or shape (MPI lets the root and the receivers
 * pass different datatypes of one type signature; the bytes are hashed packed, so the fingerprints still agree). */
uint64_t cons_term(const rec_record *r);

/* cons_same - 1 when records `a` and `b` are the same copy: cons_term's parts equal. */
int cons_same(const rec_record *a, const rec_record *b);

/* cons_fold - the digest `acc` (0 for an empty window) with record `r` folded in at place `index`. The term is
 * cons_term(r) bound to the place, so two members' digests are equal exactly when each place holds the same copy on
 * both (up to 64-bit collisions); the fold is order-free, so records completed in another order inside a window
 * (non-blocking collectives) fold the same. */
uint64_t cons_fold(uint64_t acc, const rec_record *r, uint32_t index);

/* The copies of one (step, key, window) as the members reported them. */
typedef struct cons_copy {
    uint32_t rank; /* world rank */
    uint32_t n;    /* records folded */
    uint64_t fold; /* their digest */
} cons_copy;

/* What cons_judge found. */
typedef struct cons_verdict {
    int agree;    /* every copy equal (count and digest) */
    int clear;    /* disagree, and more than half of the copies are equal: the others are the odd ones */
    size_t n_odd; /* copies flagged in odd[]: those outside the majority, or every copy when no majority (two
                     copies that differ: "one of these") */
} cons_verdict;

/* cons_judge - judge `n` copies (n >= 1). odd[i] is set to 1 for each odd copy, 0 otherwise (odd has n entries). */
cons_verdict cons_judge(const cons_copy *copies, size_t n, unsigned char *odd);

/* Where a disagreement sits: the order of disagreements within a run (the first is the one stored). */
typedef struct cons_place {
    int64_t step;
    uint64_t key;
    uint32_t win; /* the window: the consensus index / CONS_WINDOW */
} cons_place;

/* cons_place_cmp - negative, 0 or positive as `a` comes before, with or after `b`: by step, then key (as a signed
 * 64-bit integer: the order of lockstepd's bigint column, so that its SQL and this rule agree), then window. */
int cons_place_cmp(const cons_place *a, const cons_place *b);

/* One member's consensus records of one (step, key) as stored (any order, other windows may be among them). */
typedef struct cons_member {
    uint32_t rank;                 /* world rank */
    int odd;                       /* cons_judge flagged its copy */
    const rec_record *const *recs; /* its records that carry the consensus field of the key */
    const uint32_t *index;         /* index[i]: recs[i]'s consensus index */
    size_t n;
} cons_member;

/* The first record where the members of a disagreeing window differ (cons_first_record). */
typedef struct cons_first {
    uint32_t index;        /* its consensus index: the first place where some member's record differs */
    size_t member;         /* the member that differs there: the first odd one that does (else the first) */
    const rec_record *rec; /* that member's record there, NULL when it has none */
    const rec_record *ref; /* the reference's record there (a member outside the odd ones, else the first member;
                              NULL when it has none) */
} cons_first;

/* cons_first_record - the first place of window `win` (indexes win*CONS_WINDOW ..) where a member's record differs
 * from the reference's: one present and the other not, or not cons_same. Returns 1 with
 * `out` filled, 0 when every place of the window holds the same records (the digests differed by a collision or
 * the records are not all stored yet). */
int cons_first_record(const cons_member *m, size_t n, uint32_t win, cons_first *out);

#endif /* COMMON_CONSENSUS_H */
