/* cons_check.h - each run checked against itself as its batches arrive: the consensus digests of a (step, key,
 * window) judged once every member of the group reported (cons_judge, common/consensus.h), the run's first
 * disagreement stored in consensus_divergences, and its first differing record found once the members' records of
 * that step are stored (asked for from agents that hold them back, as the twin comparison does). */
#ifndef SERVER_CONSENSUS_CONS_CHECK_H
#define SERVER_CONSENSUS_CONS_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "server/store/cons_batch.h"

/* cons_on_divergence - whom to tell when a run's consensus disagreement is stored or finished (main wires the
 * fleet's kick: its evidence and alert follow within moments, not at its next sweep). */
void cons_on_divergence(void (*fn)(void));

/* cons_register - this module's prepared statements. */
void cons_register(void);

/* cons_start - start the consensus thread (it also sweeps every 10 s: the database's look at the runs whose batches
 * or ends came since, and at the start at the runs a lockstepd before may have left windows of; the divergences
 * another lockstepd on the same database left unfinished). Returns 0 or -1. */
int cons_start(void);

/* cons_stop - stop the thread. */
void cons_stop(void);

/* cons_digests_stored - the consensus digests `d` (`n`) of a batch of run `run_key`'s rank `rank`, committed at
 * `commit_s` (epoch seconds): their windows are held in memory (cons_mem.h) and judged as soon as every member of
 * their group reported, with no read of the database, by the lockstepd that holds the run's consensus lease
 * (another one forwards them there: server/peers/forward.h). Blocks on the database only to ask who holds the lease
 * (once per lease period and run at most). */
void cons_digests_stored(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s);
/* cons_notify - have the consensus thread of the lease's holder check run `run_key` now (cons_check_run): a batch
 * brought held records its divergence may wait for, or a store failed. Blocks as cons_digests_stored does. */
void cons_notify(int64_t run_key);

/* cons_check_run - judge the windows memory holds ready (one caller at a time), finish run `run_key`'s divergence
 * when its records are there, and have the next sweep's database look read the run (what memory does not hold).
 * Returns 0, or -1 on a database error (logged). */
int cons_check_run(int64_t run_key);

#endif /* SERVER_CONSENSUS_CONS_CHECK_H */
