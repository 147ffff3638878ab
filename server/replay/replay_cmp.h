/* replay_cmp.h - how two runs compare over a window of steps, from their stored records: a replay against the group's
 * runs and against the other replays. This module reads the records; the comparison's rule is
 * server/rules/replay_diff.h.
 */
#ifndef SERVER_REPLAY_REPLAY_CMP_H
#define SERVER_REPLAY_REPLAY_CMP_H

#include <stddef.h>
#include <stdint.h>

#include "server/rules/replay_diff.h"

#define RC_MAX_RECORDS 2000000 /* records of the two runs in one window; more is refused */

/* rc_register - prepare the statements rc_compare runs. */
void rc_register(void);

/* rc_compare - compare runs `a` and `b` (run keys) over steps [from, to], limited to ranks `ranks` (a
 * PostgreSQL int array text such as "{1,3}", or NULL for every rank). Runs on this thread's connection. Returns
 * 0 with `out` filled, -1 with a reason in `err` (a database error, or a window of more than RC_MAX_RECORDS). */
int rc_compare(int64_t a, int64_t b, int64_t from, int64_t to, const char *ranks, rc_result *out, char *err,
               size_t cap);

/* How a replay that resumed from a checkpoint loaded it: its restored state block at the checkpoint's step against
 * the block the run it resumes saved there, rank by rank, by rec_restore_check (common/recmatch.h). */
typedef struct rc_resume {
    int checked;               /* ranks whose restored block was compared with a saved one */
    int not_restored;          /* ranks where the source saved a block at the step and the replay restored none */
    int not_saved;             /* ranks where the replay restored a block and the source saved none there */
    int differs;               /* 1: a restored block is not the saved one */
    int rank;                  /* differs: the first such rank */
    const char *status, *diff; /* differs: rec_restore_status_name, and rec_diff_name when the entry differs */
    char name[256];            /* differs: the entry named (first differing, or one side only) */
    uint32_t occurrence;
} rc_resume;

/* rc_resume_check - the restored blocks of run `replay` at `step` against the saved blocks of run `source` there,
 * on ranks `ranks` (int array text, NULL: every rank). Returns 0 with `out` filled, -1 with a reason in `err`. */
int rc_resume_check(int64_t replay, int64_t source, int64_t step, const char *ranks, rc_resume *out, char *err,
                    size_t cap);

#endif /* SERVER_REPLAY_REPLAY_CMP_H */
