/* forward.h - what an instance that does not hold a twin group's comparison lease (lease.h) sends the holder: each
 * batch's step sums as it committed (the holder's memory then holds every batch of the group, whichever instance
 * stored it) and the ranks to look at (a run's end, a claim); likewise for a run's consensus lease, each batch's
 * consensus digests and the run to check. They travel as PostgreSQL notifications (NOTIFY lockstep_cmp, sent after
 * the batches' commit, at most every 20 ms) to every instance, and each keeps those of the groups and runs it
 * holds. A forward lost (an instance killed before sending it, a holder reconnecting) leaves memory short
 * of the database's counts, so the rank goes to the look: the database stays the authority. */
#ifndef SERVER_PEERS_FORWARD_H
#define SERVER_PEERS_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "server/store/write.h"
#include "server/peers/fwd_line.h"

/* fwd_register - register this module's prepared statement. */
void fwd_register(void);

/* fwd_sums - forward a committed batch's step sums of run `run_key`, rank `rank`, to the holder of `group`'s
 * lease. fwd_look - forward a rank to look at. Neither blocks: they queue (a full queue drops, counted). */
void fwd_sums(const char *group, int64_t run_key, int rank, const store_step *steps, size_t n, int64_t counted,
              int flags);
void fwd_look(const char *group, int rank);

/* fwd_cons - forward a committed batch's consensus digests of run `run_key`'s rank `rank` to the holder of the
 * run's consensus lease; fwd_cons_look - forward the run to check. Neither blocks. */
void fwd_cons(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s);
void fwd_cons_look(int64_t run_key);

/* fwd_on_groups, fwd_on_runs - what the listener does with the twin groups' and the runs' forwards. Call
 * before fwd_start (a forward nobody handles is dropped). */
void fwd_on_groups(fwd_sums_fn sums, fwd_look_fn look);
void fwd_on_runs(fwd_cons_fn cons, fwd_cons_look_fn look);

/* fwd_start - the thread that sends the queued forwards, and the one that listens for other instances'
 * forwards and hands them to the handlers (on the listener's thread). fwd_stop - stop both; what is queued is
 * dropped (the holders' sweeps compare it). */
int fwd_start(void);
void fwd_stop(void);

#endif /* SERVER_PEERS_FORWARD_H */
