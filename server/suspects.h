/* suspects.h - evidence from twin divergences: the hardware that ran each diverging rank, hardware vs software, the suspects thread. */
#ifndef SERVER_SUSPECTS_H
#define SERVER_SUSPECTS_H

/* susp_start - start the suspects thread: it evaluates groups it is told
 * about (susp_notify) and, every suspects_interval_ms, groups whose runs,
 * manifests or divergences changed (also those written by another lockstepd
 * on the same database), then rescores the fleet. Returns 0 or -1. */
int susp_start(void);

/* susp_stop - stop the thread (finishing the pass under way). */
void susp_stop(void);

/* susp_kick - ask for a rescore of the fleet on the next pass, soon (after
 * an admin action). Never blocks on the database. */
void susp_kick(void);

/* susp_notify - ask for twin group `group` to be evaluated soon (called
 * after a divergence is stored). Never blocks on the database. */
void susp_notify(const char *group);

/* susp_evaluate - evaluate group `group` now in one transaction: classify its
 * first divergence, replace its exposures and involvements, write history,
 * and enqueue its divergence alert (once per group). Groups that the spread
 * rule reclassifies are appended to `requeue` (up to `cap` names of 256
 * bytes; `*nrequeue` counts them). Returns 1 when something changed, 0 when
 * the group is not ready or unchanged, 2 when its divergence has not settled
 * yet (ask again soon), -1 on a database error (rolled back). */
int susp_evaluate(const char *group, char (*requeue)[256], int cap, int *nrequeue);

/* susp_pass - one full pass: evaluate the notified and changed groups, then
 * rescore. Returns 0, or -1 when the database failed (retried next pass). */
int susp_pass(void);

#endif /* SERVER_SUSPECTS_H */
