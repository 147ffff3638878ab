/* delta.h - how far each run of a twin group is from the majority at each step: one pure rule for the twin page's
 * per-step delta plot (GET /api/v1/twins/{group}/deltas).
 *
 * At one step of one scalar series (a metric such as loss), among the runs that hold a point there:
 *   the reference is the value more than half of those runs hold (the same dtype and the same bits), else, when no
 *   value has a majority (two runs that disagree), the value of the first of them in run order — the convention of
 *   the ULP column of a divergence (GET /api/v1/twins/{group}: the first run of the majority, else the first run);
 *   each run's `ulp` is the number of representable values between its value and the reference (common/dtype.h:
 *   dtype_ulp_distance; none for a NaN on either side, or another dtype), its `rel` the relative difference
 *   |x - r| / |r| (0 for the same bits; none when either is not finite, or r is 0 and x is not);
 *   a run without a point there has neither.
 * A bit flip in the lowest bit of a mantissa is 1 ULP at its step, where an overlaid curve shows nothing.
 * Tested from a table of cases in tests/unit/test_delta.c.
 */
#ifndef SERVER_RULES_DELTA_H
#define SERVER_RULES_DELTA_H

#include <stdint.h>

/* One run's point at the step (has = 0: the run has none there). */
typedef struct delta_point {
    int has;
    unsigned dtype; /* LS_* (common/dtype.h) */
    uint64_t bits;  /* the value's raw bits */
} delta_point;

/* One run's distance from the reference at the step. */
typedef struct delta_dist {
    int has_ulp;
    uint64_t ulp;
    int has_rel;
    double rel;
} delta_dist;

/* delta_step - the reference among pts[0..n) and every run's distance from it into out[0..n). Returns the index of
 * the run whose value is the reference (the first run holding it), or -1 when no run has a point. Never fails. */
int delta_step(const delta_point *pts, int n, delta_dist *out);

#endif /* SERVER_RULES_DELTA_H */
