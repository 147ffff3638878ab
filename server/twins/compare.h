/* compare.h - twin comparison as records arrive: per-step digests first, then the records of the first differing step.
 */
#ifndef SERVER_TWINS_COMPARE_H
#define SERVER_TWINS_COMPARE_H

#include <stdint.h>

#include "server/store/batch.h"
#include "server/store/write.h"

/* cmp_divergence_fn - told the name of a twin group whose comparison stored
 * a new (or an earlier) first divergence. Runs on the comparison thread; it
 * must not block on more than a queue. */
typedef void (*cmp_divergence_fn)(const char *group);

/* cmp_on_divergence - whom to tell about divergences (main wires the fleet's
 * evaluator here, so that the comparison knows nothing of suspects or alerts).
 * Call before cmp_start. */
void cmp_on_divergence(cmp_divergence_fn fn);

/* cmp_register - register this module's prepared statements. */
void cmp_register(void);

/* cmp_start - start the comparison thread (it sweeps recently active groups
 * every few seconds as well, so batches stored by another lockstepd on the
 * same database are compared too). Returns 0 or -1. */
int cmp_start(void);

/* cmp_stop - finish the queued work and stop the thread. */
void cmp_stop(void);

/* cmp_notify - ask for group `group`, rank `rank` to be compared again because a batch committed at `commit_s`
 * (epoch seconds; 0 if unknown) changed it: queued here when this lockstepd holds the group's comparison lease,
 * else forwarded to the one that does (server/peers/lease.h). Blocks on the database only to ask who holds the
 * lease (once per lease period and group at most). */
void cmp_notify(const char *group, int rank, double commit_s);

/* cmp_stored - batch `b` of the run `run_key` of twin group `group` stored (`res`: committed at res->commit_s, the
 * step sums its statement added in res->steps): its step digests go to
 * the comparison's memory, which marks the steps its runs agree on without a look through the database
 * (server/twins/cmp_mem.h); what memory cannot compare is queued for the look, at most every 100 ms a group when
 * the batch carried step digests (digest streaming: a differing step waits a step for its records anyway), else
 * every 20 ms. When another lockstepd holds the group's lease, the batch's step sums are forwarded to it instead
 * (server/peers/forward.h). Blocks on the database as cmp_notify does. */
void cmp_stored(const char *group, int64_t run_key, const srv_batch *b, const store_result *res);

/* cmp_check - compare group `group` on rank `rank` now: find the first step
 * of the shared, complete steps not yet checked whose digests differ, and
 * store the first divergence among its records (common/first.h). Returns 1 when a divergence
 * was stored or made earlier, 0 when none, -1 on a database error. */
int cmp_check(const char *group, int rank, double commit_s);

/* cmp_end - run `run_key` ended on rank `rank` of group `group` (its end committed): compare the rank now, as
 * cmp_check, so that the end's reply can ask for held-back records of a step the end completes that differs; unless
 * the comparison's memory vouches that the end completes no such step (cmp_mem_end_quiet), when the rank is queued
 * for the look instead (which takes many ranks at once: a fleet's ends come together). Returns as cmp_check. */
int cmp_end(const char *group, int rank, int64_t run_key);

#endif /* SERVER_TWINS_COMPARE_H */
