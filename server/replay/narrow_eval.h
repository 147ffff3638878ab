/* narrow_eval.h - replay experiments evaluated as their replays record, on the fleet thread. */
#ifndef SERVER_REPLAY_NARROW_EVAL_H
#define SERVER_REPLAY_NARROW_EVAL_H

/* narrow_pass - evaluate the running experiments (the fleet thread calls it on every pass): decide the
 * placements whose replays recorded the window, judge the experiments whose placements are all decided or
 * whose deadline passed, and for each finished one store the verdict, the node's history and the follow-up
 * alert in one transaction, then wake the evaluation of its group and its replay group (`wake`, called with each
 * group's name once the transaction committed; the fleet thread passes its own queue, so that this module calls
 * nothing of the thread that calls it). Sets *running to how many are still running. Returns how many
 * experiments finished, -1 on a database error (retried on the next pass). */
int narrow_pass(int *running, void (*wake)(const char *group));

/* narrow_eval_register - prepare the statements this module runs (db_register). */
void narrow_eval_register(void);

#endif /* SERVER_REPLAY_NARROW_EVAL_H */
