/* cons_check.h - each run checked against itself as its batches arrive: the consensus digests of a (step, key,
 * window) judged once every member of the group reported (cons_judge, common/consensus.h), the run's first
 * disagreement stored in consensus_divergences, and its first differing record found once the members' records of
 * that step are stored (asked for from agents that hold them back, as the twin comparison does). */
#ifndef SERVER_CONSENSUS_CONS_CHECK_H
#define SERVER_CONSENSUS_CONS_CHECK_H

#include <stdint.h>

/* cons_on_divergence - whom to tell when a run's consensus disagreement is stored or finished (main wires the
 * fleet's kick: its evidence and alert follow within moments, not at its next sweep). */
void cons_on_divergence(void (*fn)(void));

/* cons_register - this module's prepared statements. */
void cons_register(void);

/* cons_start - start the consensus thread (it also sweeps, every few seconds, runs whose windows or divergences
 * another lockstepd on the same database may have left). Returns 0 or -1. */
int cons_start(void);

/* cons_stop - stop the thread. */
void cons_stop(void);

/* cons_notify - a batch of run `run_key` committed at `commit_s` (epoch seconds) brought consensus digests, or held
 * records a divergence may wait for: look at the run now. Never blocks on the database. */
void cons_notify(int64_t run_key, double commit_s);

/* cons_check_run - judge run `run_key`'s complete windows and finish its divergence when its records are there.
 * Returns 0, or -1 on a database error (logged). */
int cons_check_run(int64_t run_key, double commit_s);

#endif /* SERVER_CONSENSUS_CONS_CHECK_H */
