/* hold.h - digest streaming's ring: the records of recent steps this rank holds back (their step digest is sent
 * instead), in memory, then in the spool, sent when lockstepd asks for a step.
 *
 * Each step's held records form a block: a ready-to-post batch stream (header flag REC_HDR_HELD, batch_seq
 * HOLD_SEQ_BASE + the seq of its first record, so that a block sent twice - by the agent, then by a spool send - is
 * stored once) followed by the records' frames. Closed blocks wait in memory, oldest first, up to mem_cap bytes;
 * past it the oldest half moves to the spool as one file (SPOOL_HELD_FMT: entries of u32 length, i64 step, then
 * the block, little-endian), and the spool keeps at most disk_cap bytes of them (the oldest steps go first). At
 * exit every block goes to the spool, where `lockstep replay --steps` finds them.
 * Nothing here aborts or blocks on the network; a block that cannot be kept is counted as lost.
 */
#ifndef AGENT_HOLD_H
#define AGENT_HOLD_H

#include <stddef.h>
#include <stdint.h>

#include "agent/spool.h"
#include "common/record.h"

#define HOLD_SEQ_BASE (1ULL << 62)

typedef struct hold_block {
    struct hold_block *next;
    int64_t step;
    int64_t cover; /* the batch_seq of the batch carrying the step digest that covers these records; -1: unknown */
    uint64_t seq_lo;
    uint32_t count;
    size_t len, cap;    /* bytes of buf in use (the header's room included) and allocated */
    unsigned char *buf; /* hdr_len bytes of stream header (written when the block closes), then frames */
} hold_block;

typedef struct hold_ring {
    rec_header hdr; /* template of every block's header */
    size_t hdr_len;
    hold_block *head, *tail; /* closed blocks, oldest first */
    hold_block *open;        /* the step being recorded */
    size_t mem, mem_cap;     /* bytes held in memory, and the most */
    size_t disk, disk_cap;   /* bytes of held files written to the spool (an estimate), and the most */
    uint64_t n_held, n_lost; /* records held back; records lost (no memory, no spool) */
} hold_ring;

/* hold_init - an empty ring whose blocks carry header `tmpl` (its rank, job, step and algo). */
void hold_init(hold_ring *h, const rec_header *tmpl, size_t mem_cap, size_t disk_cap);

/* hold_add - hold record `r` back in the block of its step (closing the open block of another step first).
 * `sp` (NULL when there is no usable spool) takes the blocks memory cannot. Returns 0, or -1 when the record
 * is lost (counted). */
int hold_add(hold_ring *h, const rec_record *r, const spool *sp);

/* hold_close - close the open block (if any): it joins the ring, and the oldest blocks move to the spool
 * while memory holds more than mem_cap. */
void hold_close(hold_ring *h, const spool *sp);

/* A copy of one block, ready to post. */
typedef struct hold_copy {
    unsigned char *buf;
    size_t len;
} hold_copy;

/* hold_seal - close the open block (if any) as hold_close does, recording that the step digest covering its records
 * travels in batch `cover`: the sender seals the block each time it sends the digest summed so far, so a block's
 * records are exactly those some sent digest stands for. */
void hold_seal(hold_ring *h, const spool *sp, int64_t cover);

/* hold_copy_step - copies of the closed blocks of `step` held in memory whose covering digest lockstepd has (their
 * cover is at most `posted`, the last batch posted; -1: none yet), in a new array (*out, caller frees each buf and
 * the array). The open block is never sent: no digest lockstepd has stands for its records yet, and lockstepd
 * refuses records its digests do not account for (server/store/held.c). Returns the count, or -1 when out of
 * memory. */
long hold_copy_step(hold_ring *h, int64_t step, int64_t posted, hold_copy **out);

/* hold_spool_step - the blocks of `step` kept in the spool `sp`, read into a new array as hold_copy_step.
 * Returns the count (0 when none), or -1 with `why`. */
long hold_spool_step(const spool *sp, int64_t step, hold_copy **out, char *why, size_t cap);

/* hold_spill_all - close the open block and write every block in memory to the spool (at exit). Returns the
 * blocks written, or -1 when some could not be (they are lost, counted). */
long hold_spill_all(hold_ring *h, const spool *sp);

/* hold_release - free every block in memory (not the spool's files). */
void hold_release(hold_ring *h);

/* hold_copies_free - free what hold_copy_step or hold_spool_step returned. */
void hold_copies_free(hold_copy *c, long n);

#endif /* AGENT_HOLD_H */
