/* cons_int.h - what the consensus modules share (cons_check.c, cons_first.c). Not used outside server/consensus/. */
#ifndef SERVER_CONSENSUS_CONS_INT_H
#define SERVER_CONSENSUS_CONS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/consensus.h"

/* cons_first_register - cons_first.c's statements. */
void cons_first_register(void);

/* cons_finish_run - name the first differing record of run `run_key`'s unfinished divergence when its members'
 * records of the step are stored, or ask the agents that hold them back for them. Returns 1 when the row was
 * finished, 0 when not (nothing to finish, or records awaited), -1 on a database error. */
int cons_finish_run(int64_t run_key);

/* A complete window to judge: its place, its group (size, and its sorted world ranks as an int[] literal, '{}' when
 * not listed), its members' copies, and the commit time of the batch that completed it (0: not known). */
typedef struct cons_window {
    cons_place at;
    int64_t size;
    const char *ranks;
    size_t n;
    cons_copy *c;
    double commit_s;
} cons_window;

/* A run's windows judged together and stored in one statement (cons_judge.c): cons_judging_new for at most `n_max`
 * windows, cons_judging_add each (judged at once: the earliest disagreement is kept), cons_judging_end stores them
 * (each window counts once, whoever judges it: consensus_judged) and, when a disagreement was stored, looks for its
 * first record. cons_judging_end returns 1 when a disagreement was stored or moved, 0 when not, -1 on a database
 * error, and frees the judging. */
typedef struct cons_judging cons_judging;
cons_judging *cons_judging_new(int64_t run, size_t n_max);
void cons_judging_add(cons_judging *j, const cons_window *w);
int cons_judging_end(cons_judging *j);

/* cons_judge_register - cons_judge.c's statement. */
void cons_judge_register(void);

/* cons_tell_to - whom cons_tell tells (cons_on_divergence); cons_tell - a disagreement was stored or its record
 * found: the fleet looks at it now. */
void cons_tell_to(void (*fn)(void));
void cons_tell(void);

/* cons_touch - the next sweep's database look reads run `run_key` (cons_look). */
void cons_touch(int64_t run_key);

/* cons_look_register - cons_look.c's statements. */
void cons_look_register(void);

/* cons_look - the database's look at run `run_key`: its stored consensus digests past the steps already swept
 * (consensus_runs.swept_upto) read and grouped into windows; each complete window no one judged yet is judged; the
 * swept mark moves to the last step no window can still fill. What memory cannot judge is judged here: windows half
 * reported before a restart, or half taken by another lockstepd, a group whose members named different sizes, a
 * window memory dropped. Returns how many windows it judged, or -1 on a database error. */
int cons_look(int64_t run_key);

/* cons_look_touched - the database's look at each run touched since the last call (the sweep's); cons_look_reset
 * - forget them (lockstepd's stop). */
void cons_look_touched(void);
void cons_look_reset(void);

/* cons_look_recent - touch the runs still running or ended within the day that have consensus digests: a lockstepd
 * before this one may have left windows of theirs unjudged. */
void cons_look_recent(void);

#endif /* SERVER_CONSENSUS_CONS_INT_H */
