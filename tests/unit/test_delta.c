/* test_delta.c - each run's per-step distance from the majority (server/rules/delta.h), from a table of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "include/lockstep.h"
#include "server/rules/delta.h"

static uint64_t f64(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof(b));
    return b;
}

static uint64_t f32(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof(b));
    return b;
}

/* A point as the table gives it: a value of the dtype, or its raw bits when `raw` is set. */
typedef struct pt {
    int has;
    unsigned dtype;
    double v;
    uint64_t raw;
} pt;

#define D(x)                                                                                                           \
    {                                                                                                                  \
        1, LS_F64, (x), 0                                                                                              \
    }
#define F(x)                                                                                                           \
    {                                                                                                                  \
        1, LS_F32, (x), 0                                                                                              \
    }
#define RAW(dt, bits)                                                                                                  \
    {                                                                                                                  \
        1, (dt), 0, (bits)                                                                                             \
    }
#define NONE                                                                                                           \
    {                                                                                                                  \
        0, 0, 0, 0                                                                                                     \
    }
#define NO -1 /* no ULP (or no relative difference) expected */

static const struct {
    const char *what;
    int n;
    pt pts[5];
    int ref;          /* the reference run */
    long long ulp[5]; /* NO: none */
    double rel[5];    /* < 0: none */
} CASES[] = {
    {"three runs agree", 3, {D(2.5), D(2.5), D(2.5)}, 0, {0, 0, 0}, {0, 0, 0}},
    {"a bit flip in the lowest bit: 1 ULP on the odd run",
     3,
     {D(2.5), RAW(LS_F64, 0x4004000000000001ULL), D(2.5)},
     0,
     {0, 1, 0},
     {0, 2.220446049250313e-16 / 2.5 * 2, 0}},
    {"the odd run first: the majority is the reference",
     3,
     {D(1.0), D(2.0), D(2.0)},
     1,
     {4503599627370496LL, 0, 0},
     {0.5, 0, 0}},
    {"a pair that disagrees: the first run is the reference",
     2,
     {D(1.0), D(1.5)},
     0,
     {0, 2251799813685248LL},
     {0, 0.5}},
    {"no majority of three: the first run", 3, {F(1.0f), F(2.0f), F(3.0f)}, 0, {0, 8388608, 12582912}, {0, 1.0, 2.0}},
    {"runs without a point there count for nothing",
     4,
     {NONE, D(3.0), NONE, D(3.0)},
     1,
     {NO, 0, NO, 0},
     {-1, 0, -1, 0}},
    {"one run holds the step", 2, {NONE, F(0.25f)}, 1, {NO, 0}, {-1, 0}},
    {"no run holds the step", 2, {NONE, NONE}, -1, {NO, NO}, {-1, -1}},
    {"f32: one ULP", 3, {F(1.0f), F(1.0f), RAW(LS_F32, 0x3f800001)}, 0, {0, 0, 1}, {0, 0, 1.1920928955078125e-07}},
    {"another dtype: no ULP, a relative difference", 3, {D(1.0), D(1.0), F(1.5f)}, 0, {0, 0, NO}, {0, 0, 0.5}},
    {"a NaN: no ULP, no relative difference", 3, {D(1.0), D(1.0), D(NAN)}, 0, {0, 0, NO}, {0, 0, -1}},
    {"the reference is 0: no relative difference",
     3,
     {D(0.0), D(0.0), D(4.9406564584124654e-324)},
     0,
     {0, 0, 1},
     {0, 0, -1}},
    {"+0 against -0: 1 ULP, no relative distance", 3, {D(0.0), D(0.0), D(-0.0)}, 0, {0, 0, 1}, {0, 0, 0}},
};

static void test_delta_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        delta_dist out[5];
        delta_point pts[5];
        for (int k = 0; k < CASES[i].n; k++) {
            const pt *p = &CASES[i].pts[k];
            pts[k] = (delta_point){p->has, p->dtype,
                                   p->raw               ? p->raw
                                   : p->dtype == LS_F32 ? f32((float)p->v)
                                                        : f64(p->v)};
        }
        int ref = delta_step(pts, CASES[i].n, out);
        if (ref != CASES[i].ref)
            fail_msg("%s: reference %d, expected %d", CASES[i].what, ref, CASES[i].ref);
        for (int k = 0; k < CASES[i].n; k++) {
            long long want = CASES[i].ulp[k];
            if (want == NO ? out[k].has_ulp : !out[k].has_ulp || out[k].ulp != (uint64_t)want)
                fail_msg("%s: run %d ULP %s%llu, expected %lld", CASES[i].what, k, out[k].has_ulp ? "" : "none ",
                         (unsigned long long)out[k].ulp, want);
            double rel = CASES[i].rel[k];
            if (rel < 0 ? out[k].has_rel : !out[k].has_rel || fabs(out[k].rel - rel) > 1e-12 * (1 + rel))
                fail_msg("%s: run %d relative %s%g, expected %g", CASES[i].what, k, out[k].has_rel ? "" : "none ",
                         out[k].rel, rel);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delta_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
