/* rescore.h - the fleet pass: involvements and exposures per node and GPU, scores, state changes, their history and
 * alerts. */
#ifndef SERVER_FLEET_RESCORE_H
#define SERVER_FLEET_RESCORE_H

/* rescore_fleet - recompute every node's and GPU's score from the evidence
 * since its last repair (in one transaction), write score and state changes
 * to the history, enqueue an alert for each node turning suspect, and then,
 * when slurm_action = drain, drain those nodes. Returns the number of nodes
 * that turned suspect, or -1 on a database error (rolled back). */
int rescore_fleet(void);

/* rescore_register - prepare the statements this module runs (db_register). */
void rescore_register(void);

#endif /* SERVER_FLEET_RESCORE_H */
