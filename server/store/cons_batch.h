/* cons_batch.h - a batch's consensus digests (REC_CONSENSUS_DIGEST, common/consensus.h), checked as they are decoded.
 */
#ifndef SERVER_STORE_CONS_BATCH_H
#define SERVER_STORE_CONS_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"
#include "server/core/error.h"

/* A consensus digest a rank sent. */
typedef struct srv_cons_digest {
    int64_t step;
    uint64_t key;  /* cons_key of the group's sorted world ranks */
    uint32_t win;  /* the window */
    uint32_t n;    /* records folded */
    uint64_t fold; /* their cons_fold */
    uint32_t size; /* the group's member count */
    uint32_t n_listed;
    uint32_t ranks[REC_COMM_LIST_MAX]; /* its sorted world ranks, when listed */
} srv_cons_digest;

/* cons_batch_add - add the consensus digest `r` (record `i` of the stream) of a batch of rank `rank` (`held`: a
 * batch of held records, which carries none) to the array *d (*n of *cap used; grown): its step in range, its comm
 * field present with 1 .. CONS_MEMBERS_MAX members, its key the comm field's id and, when the group has at most
 * REC_COMM_LIST_MAX members, the cons_key of its listed ranks (sorted, each once, `rank` among them), 1 ..
 * CONS_WINDOW records folded. A repeat of a (step, key, window) is dropped (the first counts, as in the database).
 * Returns 0, or -1 with `e` filled: a malformed digest refuses its batch, as a malformed step digest does. */
int cons_batch_add(srv_cons_digest **d, size_t *n, size_t *cap, const rec_record *r, uint32_t rank, int held, size_t i,
                   srv_error *e);

/* A consensus digest as step_consensus.cons holds it (sql/migrations/026_consensus_beside_steps.sql): 24 bytes, big
 * endian: the group's key (8), the window (4), the records folded (4), their fold (8). A step's digests follow each
 * other in the order they came; the first of a (key, window) counts. */
#define CONS_PACKED 24

/* cons_pack - `d` as step_consensus.cons holds it, into `out` (CONS_PACKED bytes). */
void cons_pack(unsigned char *out, const srv_cons_digest *d);

/* cons_unpack - the digest packed at `p` (CONS_PACKED bytes): its key, window, records folded and fold. */
void cons_unpack(const unsigned char *p, uint64_t *key, uint32_t *win, uint32_t *n, uint64_t *fold);

/* cons_comms_known - lockstepd stored run `run_key`'s group `key` (consensus_comms) before: a batch need not send its
 * ranks again (each is one conflicting insert a batch: a sixth of a consensus batch's PostgreSQL time). Forgetting
 * costs nothing but that insert, so the set is bounded and starts over when full. */
int cons_comms_known(int64_t run_key, uint64_t key);

/* cons_comms_stored - the groups of the `n` digests `d` of a batch of run `run_key` that committed are stored. */
void cons_comms_stored(int64_t run_key, const srv_cons_digest *d, size_t n);

#endif /* SERVER_STORE_CONS_BATCH_H */
