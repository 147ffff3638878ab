/* replay_cmp.h - how two runs compare over a window of steps, from their stored records: a replay against the group's
 * runs and against the other replays.
 *
 * Only the records both runs hold are compared (a replay traced finer inside its window holds more), by the one
 * rule of common/recmatch.h. Where they differ, each rank's first difference goes through the cause rule
 * (common/cause.h) to find the ranks where the difference began, and the first record whose output differs
 * while its input fingerprints matched is kept: the record a narrow names.
 */
#ifndef SERVER_REPLAY_REPLAY_CMP_H
#define SERVER_REPLAY_REPLAY_CMP_H

#include <stddef.h>
#include <stdint.h>

#include "common/cause.h"

#define RC_MAX_RECORDS 2000000 /* records of the two runs in one window; more is refused */
#define RC_MAX_ORIGIN 16

/* One differing record. */
typedef struct rc_rec {
    int rank;
    int64_t step, seq;
    char name[256];
    uint32_t occurrence;
    int level, dtype;
    uint64_t fp_a, fp_b;
    int has_value;
    uint64_t value_a, value_b;
    int inputs; /* cause_inputs: 0 none on some side, 1 the same, 2 different */
} rc_rec;

typedef struct rc_result {
    long common;  /* records both runs hold in the window */
    int differs;  /* 1: a shared record differs */
    rc_rec first; /* differs: the first differing record (smallest step, then seq in run a) */
    rc_rec clean; /* the first whose output differs while its inputs matched (has_clean) */
    int has_clean;
    cause_kind cause; /* differs: the cause rule over each rank's first difference */
    int origin[RC_MAX_ORIGIN];
    int norigin;
} rc_result;

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
