/* write.h - the write path of a record batch: one statement, so one transaction (batches row, frames, step digests,
 * rank progress), acknowledged only after COMMIT. */
#ifndef SERVER_STORE_WRITE_H
#define SERVER_STORE_WRITE_H

#include <stdint.h>

#include "server/core/error.h"
#include "server/store/batch.h"
#include "server/store/runs.h"

#define STORE_WANT_MAX 64 /* steps one reply asks an agent for at most */

/* What storing a batch came to. */
typedef struct store_result {
    int duplicate;   /* a replay: stored before, nothing stored now */
    double commit_s; /* wall-clock time of the commit (seconds since the epoch) */
    int n_want;      /* steps of this rank whose held-back records lockstepd asks for */
    int64_t want[STORE_WANT_MAX];
    /* The per-step digests the batch added (its records' terms and the step digests it carries for records held
     * back, merged, sorted by step; none for a batch of held records, whose digests came before) and the records it
     * added to its rank's progress (rank_progress.n_records): made once, for the statement, and what the
     * comparison's memory adds (server/twins/cmp_mem.c), so both add the same sums. store_result_release frees. */
    store_step *steps;
    size_t n_steps;
    int64_t counted;
} store_result;

/* store_result_release - free what `res` holds (its step sums); it may be zeroed or released already. */
void store_result_release(store_result *res);

/* store_write_register - register the prepared statements of this module. */
void store_write_register(void);

/* store_batches - store `n` batches (b[i] of runs[i]) in one transaction and one commit, in (run, rank, batch_seq)
 * order, so that concurrent groups take their row locks in one order. Each batch is stored as if alone: its batches
 * row first (a replay finds it and stores nothing: res[i].duplicate = 1), its records as frames cut per step
 * (server/store/frames.h), its per-step digests (of its records and of the step digests it carries) and its rank's
 * progress; a batch of held records (b->held) adds neither digests nor progress and answers the requests for its
 * steps. When the transaction fails, each batch is stored on its own, so that one bad batch fails alone. `res`
 * comes zeroed; res[i] is filled (store_result_release frees it) and rc[i] = 0 when batch i was stored (or is a
 * duplicate) after its COMMIT, else rc[i] = -1 with e[i] filled and nothing of it stored. Returns how many failed. */
int store_batches(const run_info *const *runs, const srv_batch *const *b, size_t n, store_result *res, int *rc,
                  srv_error *e);

/* store_wanted_steps - the steps of `rank` of `run` whose held-back records
 * lockstepd asked for and has not received (digest streaming), ascending,
 * at most `cap` into `out`. Returns the count, or -1 with `e` filled. */
int store_wanted_steps(const run_info *run, int rank, int64_t *out, int cap, srv_error *e);

#endif /* SERVER_STORE_WRITE_H */
