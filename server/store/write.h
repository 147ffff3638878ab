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
} store_result;

/* store_step_sums - the per-step digests batch `b` adds (its records' terms and the step digests it carries for
 * records held back, merged, sorted by step) into a new array the caller frees, and in *counted the records it adds
 * to its rank's progress (rank_progress.n_records). Returns how many steps; 0 for a batch of held records (their
 * digests came before). The comparison's memory (server/twins/cmp_mem.c) adds the same sums the database does. */
size_t store_step_sums(const srv_batch *b, store_step **out, int64_t *counted);

/* store_write_register - register the prepared statements of this module. */
void store_write_register(void);

/* store_batch - store batch `b` of `run` in one transaction: the batches
 * row first (a replay finds it and stores nothing: res->duplicate = 1), the
 * records as frames cut per step (server/store/frames.h), the per-step
 * digests (of its records and of the step digests it carries) and the
 * rank's progress; a batch of held records (b->held) adds neither digests nor
 * progress and answers the requests for its steps. Returns 0 only after
 * COMMIT succeeded (or for a duplicate), with `res` filled, else -1 with `e`
 * filled and nothing stored. */
int store_batch(const run_info *run, const srv_batch *b, store_result *res, srv_error *e);

/* store_batches - store `n` batches (b[i] of runs[i]) in one transaction and
 * one commit, as store_batch does each (in (run, rank, batch_seq) order, so
 * that concurrent groups take their row locks in one order). When the
 * transaction fails, each batch is stored on its own, so that one bad batch
 * fails alone. Fills res[i] and returns 0 when batch i was stored (or is a
 * duplicate) after its COMMIT, else sets rc[i] = -1 with e[i] filled.
 * Returns how many failed. */
int store_batches(const run_info *const *runs, const srv_batch *const *b, size_t n, store_result *res, int *rc,
                  srv_error *e);

/* store_wanted_steps - the steps of `rank` of `run` whose held-back records
 * lockstepd asked for and has not received (digest streaming), ascending,
 * at most `cap` into `out`. Returns the count, or -1 with `e` filled. */
int store_wanted_steps(const run_info *run, int rank, int64_t *out, int cap, srv_error *e);

#endif /* SERVER_STORE_WRITE_H */
