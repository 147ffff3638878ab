/* delta.c - each run's distance from the majority at one step (server/rules/delta.h): pure, tested from a table of
 * cases. */
#include "server/rules/delta.h"

#include <math.h>
#include <string.h>

#include "common/dtype.h"

/* same_value - two points hold the same value: the same dtype and the same bits. */
static int same_value(const delta_point *a, const delta_point *b)
{
    return a->dtype == b->dtype && a->bits == b->bits;
}

/* reference - the run whose value more than half of the runs with a point hold, else the first run with one; -1
 * when none has a point. */
static int reference(const delta_point *pts, int n)
{
    int held = 0, first = -1;
    for (int i = 0; i < n; i++)
        if (pts[i].has) {
            held++;
            if (first < 0)
                first = i;
        }
    for (int i = 0; i < n; i++) {
        if (!pts[i].has)
            continue;
        int same = 0, earlier = 0;
        for (int k = 0; k < n; k++)
            if (pts[k].has && same_value(&pts[i], &pts[k])) {
                same++;
                earlier |= k < i;
            }
        if (!earlier && 2 * same > held)
            return i;
    }
    return first;
}

int delta_step(const delta_point *pts, int n, delta_dist *out)
{
    memset(out, 0, (size_t)(n > 0 ? n : 0) * sizeof(*out));
    int ref = reference(pts, n);
    if (ref < 0)
        return -1;
    const delta_point *r = &pts[ref];
    double rv = dtype_value_to_double(r->dtype, r->bits);
    for (int i = 0; i < n; i++) {
        if (!pts[i].has)
            continue;
        if (same_value(&pts[i], r)) {
            out[i] = (delta_dist){1, 0, 1, 0.0};
            continue;
        }
        if (pts[i].dtype == r->dtype) {
            uint64_t d = dtype_ulp_distance(r->dtype, r->bits, pts[i].bits);
            out[i].has_ulp = d != UINT64_MAX;
            out[i].ulp = out[i].has_ulp ? d : 0;
        }
        double x = dtype_value_to_double(pts[i].dtype, pts[i].bits);
        if (isfinite(x) && isfinite(rv) && (rv != 0.0 || x == 0.0)) {
            out[i].has_rel = 1;
            out[i].rel = rv != 0.0 ? fabs(x - rv) / fabs(rv) : 0.0; /* +0 against -0: other bits, no distance */
        }
    }
    return ref;
}
