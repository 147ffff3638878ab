/* cons_int.h - what the consensus modules share (cons_check.c, cons_first.c). Not used outside server/consensus/. */
#ifndef SERVER_CONSENSUS_CONS_INT_H
#define SERVER_CONSENSUS_CONS_INT_H

#include <stdint.h>

/* cons_first_register - cons_first.c's statements. */
void cons_first_register(void);

/* cons_finish_run - name the first differing record of run `run_key`'s unfinished divergence when its members'
 * records of the step are stored, or ask the agents that hold them back for them. Returns 1 when the row was
 * finished, 0 when not (nothing to finish, or records awaited), -1 on a database error. */
int cons_finish_run(int64_t run_key);

#endif /* SERVER_CONSENSUS_CONS_INT_H */
