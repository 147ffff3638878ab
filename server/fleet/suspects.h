/* suspects.h - evidence from twin divergences: the hardware that ran each diverging rank, hardware vs software. */
#ifndef SERVER_FLEET_SUSPECTS_H
#define SERVER_FLEET_SUSPECTS_H

/* suspects_evaluate - evaluate group `group` now in one transaction: classify its
 * first divergence, replace its exposures and involvements, write history,
 * and enqueue its divergence alert (once per group). Groups that the spread
 * rule reclassifies are appended to `requeue` (up to `cap` names of 256
 * bytes; `*nrequeue` counts them). Returns 1 when something changed, 0 when
 * the group is not ready or unchanged, 2 when its divergence has not settled
 * yet (ask again soon), -1 on a database error (rolled back). */
int suspects_evaluate(const char *group, char (*requeue)[256], int cap, int *nrequeue);

/* suspects_register - prepare the statements this module runs (db_register). */
void suspects_register(void);

#endif /* SERVER_FLEET_SUSPECTS_H */
