/* conswin.h - a rank's consensus windows: the place of each consensus record in its (step, key), and the digest of
 * each window of CONS_WINDOW places (common/consensus.h), handed out as it fills or its step ends.
 *
 * Bounded: one step's keys only (the table empties when the step changes), at most CW_KEYS_MAX keys per step. A key
 * beyond them gets no place: its records are recorded as plain ones and no digest covers them (an absent copy is no
 * disagreement), with the count in n_refused. Not thread-safe: the caller serializes (the agent's `mu`). Tested by
 * tests/unit/test_agent_consensus.c.
 *
 * A place may be reserved (a nonblocking collective: its place is taken when the call is made, its record folded when
 * it completes, cw_fill). A window holding an open reservation is sent when its last reservation is filled, not
 * before: kept in the late list once later places have moved on (at most CW_LATE_MAX windows; past them the window is
 * voided). A window is voided (never sent, counted in n_voided) when a reservation in it is given up (cw_void) or
 * still open when the table is flushed: on this rank the copy is absent, which is no disagreement. */
#ifndef AGENT_CONSWIN_H
#define AGENT_CONSWIN_H

#include <stddef.h>
#include <stdint.h>

#include "common/consensus.h"
#include "common/record.h"

#define CW_SLOTS 256    /* hash slots of the table (a power of two) */
#define CW_KEYS_MAX 192 /* keys one step may hold */
#define CW_LATE_MAX 32  /* windows past their last place, waiting for a reservation */

/* One window's digest, as a REC_CONSENSUS_DIGEST pseudo-record carries it (cw_digest_record). */
typedef struct cw_digest {
    int64_t step;
    uint64_t key;
    uint32_t window; /* index / CONS_WINDOW */
    uint32_t n;      /* records folded */
    uint64_t fold;
    uint32_t size, n_listed; /* the group: its size, and its sorted world ranks when listed */
    const uint32_t *ranks;   /* borrowed for the emit call only */
} cw_digest;

/* Where digests go: called once per window that closes. */
typedef void (*cw_emit_fn)(void *arg, const cw_digest *d);

typedef struct cw_entry {
    uint64_t key;
    uint32_t used;
    uint32_t next;   /* the next record's index */
    uint32_t n;      /* records folded into the open window */
    uint32_t open;   /* reservations of the open window not filled yet */
    uint32_t voided; /* the open window is given up */
    uint32_t size, n_listed;
    uint64_t fold;
    uint32_t ranks[REC_COMM_LIST_MAX]; /* sorted world ranks (n_listed of them) */
} cw_entry;

/* A window past its last place with a reservation still open (its step is the table's). */
typedef struct cw_late {
    uint64_t key;
    uint32_t window, n, open, size, n_listed;
    uint64_t fold;
    uint32_t ranks[REC_COMM_LIST_MAX];
} cw_late;

typedef struct cw_table {
    cw_entry *slots; /* CW_SLOTS, allocated at the first place; NULL before */
    size_t nkeys;
    int64_t step;
    int has_step;
    cw_late *late; /* CW_LATE_MAX, allocated at the first window that needs it */
    size_t n_late;
    uint64_t n_refused; /* records given no place (table full, no memory) */
    uint64_t n_voided;  /* windows never sent: a reservation given up or still open at a flush */
} cw_table;

/* cw_init - an empty table (nothing allocated yet). */
void cw_init(cw_table *t);

/* cw_place - the place of the next consensus record of (`step`, `key`), whose group has `size` members with world
 * ranks `ranks[0..n_ranks)` (any order; n_ranks 0 when not known; listed in digests when size <= REC_COMM_LIST_MAX).
 * A step other than the table's closes every window of the old step first (`emit`). Returns 0 with *index set, or
 * -1 when the key gets no place (the table is full for this step, or no memory). */
int cw_place(cw_table *t, int64_t step, uint64_t key, uint32_t size, const uint32_t *ranks, size_t n_ranks,
             uint32_t *index, cw_emit_fn emit, void *arg);

/* cw_reserve - cw_place for a record folded later (cw_fill) or given up (cw_void): its window is not sent before. */
int cw_reserve(cw_table *t, int64_t step, uint64_t key, uint32_t size, const uint32_t *ranks, size_t n_ranks,
               uint32_t *index, cw_emit_fn emit, void *arg);

/* cw_fill - fold record `r` into the window of reserved place (`key`, `index`) of the table's current step; the
 * window's digest goes to `emit` when this was its last open reservation and its places are all given. Nothing when
 * the window was voided. */
void cw_fill(cw_table *t, uint64_t key, uint32_t index, const rec_record *r, cw_emit_fn emit, void *arg);

/* cw_void - give reserved place (`key`, `index`) up: its window is never sent. */
void cw_void(cw_table *t, uint64_t key, uint32_t index);

/* cw_fold - fold record `r` into the window of its place (`key`, `index`, from cw_place in the table's current
 * step); the window's digest goes to `emit` when this was its last place. */
void cw_fold(cw_table *t, uint64_t key, uint32_t index, const rec_record *r, cw_emit_fn emit, void *arg);

/* cw_flush - close every open window (its digest to `emit`, with the records it holds so far; voided when a
 * reservation in it is still open, as is every late window) and empty the table: at a step change, at shutdown, at an
 * abort. The table stays usable. */
void cw_flush(cw_table *t, cw_emit_fn emit, void *arg);

/* cw_release - free the table without emitting (a fork()ed child's copy, a second ls_init). */
void cw_release(cw_table *t);

/* cw_digest_record - `d` as the REC_CONSENSUS_DIGEST pseudo-record (common/record.h) into `out`, its comm extension
 * field encoded into `ext` (REC_EXT_ENCODED_MAX bytes, borrowed by out). `seq` is the last record's seq. */
void cw_digest_record(const cw_digest *d, uint64_t seq, int64_t t_ns, rec_record *out, unsigned char *ext);

#endif /* AGENT_CONSWIN_H */
