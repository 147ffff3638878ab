/* replay_diff.h - two runs' records of a window of steps compared, the rule of a replay comparison: only the records
 * both runs hold are compared (a replay traced finer inside its window holds more), by the one rule of
 * common/recmatch.h; where they differ, each rank's first difference goes through the cause rule (common/cause.h)
 * to find the ranks where the difference began, and the first record whose output differs while its input
 * fingerprints matched is kept: the record a narrow names. Pure; server/replay/replay_cmp.c reads the records.
 */
#ifndef SERVER_RULES_REPLAY_DIFF_H
#define SERVER_RULES_REPLAY_DIFF_H

#include <stdint.h>

#include "common/cause.h"
#include "common/record.h"

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
    int ranks_differ; /* how many ranks hold a differing record: the cause rule weighs one first difference each */
    cause_kind cause; /* differs: the cause rule over each rank's first difference */
    int origin[RC_MAX_ORIGIN];
    int norigin;
} rc_result;

/* One record of the window: whose, its key, the comparable record. */
typedef struct rc_row {
    int run; /* 0: run a, 1: run b */
    int rank;
    int64_t step;
    rec_record rec; /* borrowed: the caller keeps what it points into */
    int level;
} rc_row;

/* replay_diff - compare the records rows[0..n) of runs a and b (any order; sorted in place by run and key) into
 * `out`: the records both hold (common), the first difference (smallest step, then seq in run a), the first whose
 * inputs matched (clean), and the cause rule over each rank's first difference with its origin ranks. */
void replay_diff(rc_row *rows, int n, rc_result *out);

#endif /* SERVER_RULES_REPLAY_DIFF_H */
