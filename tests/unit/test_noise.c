/* test_noise.c - the effect-versus-noise rule (server/rules/noise.h): Student's t, a table of cases, and a
 * simulated calibration (one more replica of the noise is within-noise at least 99 times in 100). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/rules/noise.h"

/* ---- a small deterministic generator (splitmix64 + Box-Muller) ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(void) /* (0, 1) */
{
    return ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_gauss(void)
{
    return sqrt(-2 * log(rng_unit())) * cos(6.283185307179586 * rng_unit());
}

/* ---- Student's t ---- */

static void test_t_quantiles(void **state)
{
    (void)state;
    static const struct {
        double p, df, t, tol; /* tol: relative */
    } T[] = {
        {0.975, 1, 12.706204736174707, 1e-9}, /* tan(0.475 pi) */
        {0.99, 1, 31.820515953773956, 1e-9},  /* tan(0.49 pi) */
        {0.999, 2, 22.327124770119877, 1e-9}, /* (2p-1) / sqrt(2p(1-p)) */
        {0.99, 3, 4.5407, 1e-4},
        {0.995, 4, 4.6041, 1e-4},
        {0.95, 10, 1.8125, 1e-4},
        {0.975, 30, 2.0423, 1e-4},
        {0.99, 1000, 2.3301, 1e-4},
        {0.9995, 7, 5.4079, 1e-4},
        {0.5, 5, 0, 0},
    };
    for (size_t i = 0; i < sizeof(T) / sizeof(T[0]); i++) {
        double got = noise_t_quantile(T[i].p, T[i].df);
        if (fabs(got - T[i].t) > T[i].tol * fabs(T[i].t) + 1e-12)
            fail_msg("t(%g; %g) = %.10g, want %.10g", T[i].p, T[i].df, got, T[i].t);
        if (T[i].t > 0 && fabs(noise_t_tail(got, T[i].df) - (1 - T[i].p)) > 1e-9 * (1 - T[i].p) + 1e-15)
            fail_msg("tail(t(%g; %g)) = %.12g", T[i].p, T[i].df, noise_t_tail(got, T[i].df));
    }
    assert_true(fabs(noise_t_tail(-2, 3) - (1 - noise_t_tail(2, 3))) < 1e-14);
}

/* ---- a table of cases ---- */

enum noise_kind { QUIET, IID, GROWING, WALK, MIXTURE };
enum cand_kind { C_BASE, C_REPLICA, C_SHIFT, C_NAN_AT, C_STEP_FROM, C_NEGZERO, C_INT_PLUS_ONE };

typedef struct noise_case {
    const char *what;
    int k, steps;
    enum noise_kind noise;
    enum cand_kind cand;
    double param; /* C_SHIFT: the shift in noise scales; C_NAN_AT, C_STEP_FROM: the step */
    int base_nan; /* a step where the baseline (and every run) is NaN, -1 for none */
    int mant_bits;
    noise_verdict want;
    long long first_differs; /* -2: do not check */
} noise_case;

static const noise_case CASES[] = {
    {"the baseline itself is identical", 4, 50, IID, C_BASE, 0, -1, 52, NOISE_IDENTICAL, -1},
    {"one more replica is within the noise", 6, 80, GROWING, C_REPLICA, 0, -1, 52, NOISE_WITHIN, -2},
    {"a shift of 50 noise scales is beyond", 4, 80, GROWING, C_SHIFT, 50, -1, 52, NOISE_BEYOND, 0},
    {"two replicas still judge a huge change", 2, 40, IID, C_SHIFT, 1e4, -1, 52, NOISE_BEYOND, 0},
    {"two replicas: one more replica is within", 2, 40, IID, C_REPLICA, 0, -1, 52, NOISE_WITHIN, -2},
    {"replicas that never differ: any difference is beyond", 4, 30, QUIET, C_STEP_FROM, 7, -1, 52, NOISE_BEYOND, 7},
    {"replicas that never differ, candidate identical", 4, 30, QUIET, C_BASE, 0, -1, 52, NOISE_IDENTICAL, -1},
    {"a NaN where the baseline is finite is beyond", 4, 30, IID, C_NAN_AT, 12, -1, 52, NOISE_BEYOND, 12},
    {"a step NaN everywhere is skipped", 5, 60, IID, C_REPLICA, 0, 9, 52, NOISE_WITHIN, -2},
    {"a change from step 20 on is found there", 4, 60, IID, C_STEP_FROM, 20, -1, 52, NOISE_BEYOND, 20},
    {"-0 against +0: other bits, no deviation", 4, 30, QUIET, C_NEGZERO, 0, -1, 52, NOISE_WITHIN, 0},
    {"an integer metric moved by one", 3, 20, QUIET, C_INT_PLUS_ONE, 0, -1, 0, NOISE_BEYOND, 0},
    {"random-walk noise: one more replica is within", 6, 200, WALK, C_REPLICA, 0, -1, 23, NOISE_WITHIN, -2},
};

#define MAXK 16
#define MAXT 4096

static double g_base[MAXT], g_noise[MAXK][MAXT], g_cand[MAXT], g_sigma[MAXT];
static double g_marg[MAXT]; /* the sd of a replica's deviation at step t (of the walk's sum, for a walk) */

/* gen_path - one replica's deviation path (sigma_t set by gen_sigma). */
static void gen_path(enum noise_kind kind, int steps, double *out)
{
    double w = 0;
    /* MIXTURE: a tenth of the replicas are noisier, 1.5 times (as lockstep-train's grad_norm replicas are). */
    double amp = kind == MIXTURE && rng_unit() < 0.1 ? 1.5 : 1;
    for (int t = 0; t < steps; t++) {
        switch (kind) {
        case QUIET: out[t] = 0; break;
        case IID:
        case GROWING: out[t] = g_sigma[t] * rng_gauss(); break;
        case MIXTURE: out[t] = amp * g_sigma[t] * rng_gauss(); break;
        case WALK:
            w += g_sigma[t] * rng_gauss();
            out[t] = w;
            break;
        }
    }
}

static void gen_sigma(enum noise_kind kind, int steps)
{
    for (int t = 0; t < steps; t++) {
        g_sigma[t] = kind == GROWING ? 1e-9 * exp(t * 0.05) : kind == WALK ? 1e-7 : 1e-6;
        g_marg[t] = kind == WALK ? g_sigma[t] * sqrt(t + 1.0) : g_sigma[t];
    }
}

/* gen_case - fill g_base, g_noise, g_cand for a case; returns the input. */
static noise_in gen_case(const noise_case *c, const double **rows)
{
    gen_sigma(c->noise, c->steps);
    for (int t = 0; t < c->steps; t++)
        g_base[t] = c->mant_bits ? 2.0 / (1 + 0.05 * t) : (double)(1000 + t);
    double dev[MAXT];
    for (int k = 0; k < c->k; k++) {
        gen_path(c->noise, c->steps, dev);
        for (int t = 0; t < c->steps; t++)
            g_noise[k][t] = g_base[t] + dev[t];
        rows[k] = g_noise[k];
    }
    gen_path(c->noise, c->steps, dev);
    for (int t = 0; t < c->steps; t++) {
        switch (c->cand) {
        case C_BASE: g_cand[t] = g_base[t]; break;
        case C_REPLICA: g_cand[t] = g_base[t] + dev[t]; break;
        case C_SHIFT: g_cand[t] = g_base[t] + c->param * g_marg[t]; break;
        case C_NAN_AT: g_cand[t] = t == (int)c->param ? NAN : g_base[t]; break;
        case C_STEP_FROM: g_cand[t] = t >= (int)c->param ? g_base[t] * (1 + 1e-3) : g_base[t]; break;
        case C_NEGZERO:
            g_base[t] = 0;
            g_cand[t] = -0.0;
            break;
        case C_INT_PLUS_ONE: g_cand[t] = g_base[t] + 1; break;
        }
    }
    if (c->cand == C_NEGZERO)
        for (int k = 0; k < c->k; k++)
            for (int t = 0; t < c->steps; t++)
                g_noise[k][t] = 0;
    if (c->base_nan >= 0) {
        g_base[c->base_nan] = g_cand[c->base_nan] = NAN;
        for (int k = 0; k < c->k; k++)
            g_noise[k][c->base_nan] = NAN;
    }
    return (noise_in){.steps = (size_t)c->steps, .base = g_base, .noise = rows, .k = c->k, .mant_bits = c->mant_bits};
}

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        const noise_case *c = &CASES[i];
        rng_state = 1000 + i;
        const double *rows[MAXK];
        noise_in in = gen_case(c, rows);
        double scale[MAXT];
        unsigned char usable[MAXT];
        noise_band b = {.scale = scale, .usable = usable};
        assert_int_equal(noise_band_fit(&in, &b), 0);
        double thr = noise_threshold(&b, NOISE_ALPHA);
        noise_effect e;
        noise_judge(&in, &b, thr, g_cand, &e);
        if (e.verdict != c->want)
            fail_msg("case \"%s\": %s (score %g, threshold %g), want %s", c->what, noise_verdict_name(e.verdict),
                     e.score, thr, noise_verdict_name(c->want));
        if (c->first_differs != -2 && e.first_differs != c->first_differs)
            fail_msg("case \"%s\": first difference at %lld, want %lld", c->what, e.first_differs, c->first_differs);
        if (c->base_nan >= 0 && (b.usable[c->base_nan] || b.used != (size_t)c->steps - 1))
            fail_msg("case \"%s\": the NaN step counts", c->what);
        /* The band is threshold * scale; a run sitting on it at every step scores the threshold. */
        if (thr > 0) {
            double on[MAXT];
            for (int t = 0; t < c->steps; t++)
                on[t] = usable[t] ? g_base[t] + thr * scale[t] : g_base[t];
            noise_effect edge;
            noise_judge(&in, &b, thr, on, &edge);
            if (fabs(edge.score - thr) > 1e-6 * thr)
                fail_msg("case \"%s\": a run on the band scores %g, threshold %g", c->what, edge.score, thr);
        }
        /* Without replicas only the sizes are said. */
        noise_effect plain;
        noise_judge(&in, NULL, 0, g_cand, &plain);
        assert_int_equal(plain.verdict, c->want == NOISE_IDENTICAL ? NOISE_IDENTICAL : NOISE_DIFFERS);
        assert_int_equal(plain.first_differs, e.first_differs);
    }
}

static void test_quiet_and_sizes(void **state)
{
    (void)state;
    /* Replicas identical to the baseline: a quiet band, threshold 0. */
    double base[20], n0[20], n1[20], cand[20], scale[20];
    unsigned char usable[20];
    for (int t = 0; t < 20; t++)
        base[t] = n0[t] = n1[t] = cand[t] = 1.0 + t;
    cand[5] = 6.5;
    const double *rows[] = {n0, n1};
    noise_in in = {.steps = 20, .base = base, .noise = rows, .k = 2, .mant_bits = 52};
    noise_band b = {.scale = scale, .usable = usable};
    assert_int_equal(noise_band_fit(&in, &b), 0);
    assert_true(b.quiet);
    assert_true(noise_threshold(&b, 0.01) == 0);
    noise_effect e;
    noise_judge(&in, &b, 0, cand, &e);
    assert_int_equal(e.verdict, NOISE_BEYOND);
    assert_int_equal(e.first_differs, 5);
    assert_int_equal(e.first_beyond, 5);
    assert_true(e.max_abs == 0.5 && fabs(e.max_rel - 0.5 / 6) < 1e-15);
    /* Too few replicas, or no steps. */
    in.k = 1;
    assert_int_equal(noise_band_fit(&in, &b), -1);
    in.k = 2;
    in.steps = 0;
    assert_int_equal(noise_band_fit(&in, &b), -1);
}

static void test_alpha_orders_thresholds(void **state)
{
    (void)state;
    rng_state = 77;
    const noise_case c = {"", 4, 100, IID, C_REPLICA, 0, -1, 52, NOISE_WITHIN, -2};
    const double *rows[MAXK];
    noise_in in = gen_case(&c, rows);
    double scale[MAXT];
    unsigned char usable[MAXT];
    noise_band b = {.scale = scale, .usable = usable};
    assert_int_equal(noise_band_fit(&in, &b), 0);
    double t1 = noise_threshold(&b, 0.05), t2 = noise_threshold(&b, 0.01), t3 = noise_threshold(&b, 0.001);
    assert_true(t1 < t2 && t2 < t3);
    /* By hand: exp(m + t(0.99; 3) * max(sd, 0.1) * sqrt(1 + 1/4)). */
    double sd = b.log_sd > NOISE_MIN_LOG_SD ? b.log_sd : NOISE_MIN_LOG_SD;
    assert_true(fabs(t2 - exp(b.log_mean + 4.540702858 * sd * sqrt(1.25))) < 1e-6 * t2);
}

/* simulate - `trials` draws of K replicas and one more; the share the rule judges beyond-noise. `shift` > 0
 * moves the extra run by that many noise scales (a real effect) instead. */
static double simulate(enum noise_kind kind, int K, int steps, int trials, double shift, double alpha)
{
    int beyond = 0;
    for (int i = 0; i < trials; i++) {
        noise_case c = {"", K, steps, kind, shift > 0 ? C_SHIFT : C_REPLICA, shift, -1, 52, NOISE_WITHIN, -2};
        const double *rows[MAXK];
        noise_in in = gen_case(&c, rows);
        double scale[MAXT];
        unsigned char usable[MAXT];
        noise_band b = {.scale = scale, .usable = usable};
        assert_int_equal(noise_band_fit(&in, &b), 0);
        noise_effect e;
        noise_judge(&in, &b, noise_threshold(&b, alpha), g_cand, &e);
        beyond += e.verdict == NOISE_BEYOND;
    }
    return (double)beyond / trials;
}

/* The rule's promise on simulated noise of four shapes (independent steps, a scale growing 150-fold, a random
 * walk, independent steps where a tenth of the replicas are 1.5 times noisier): one more replica is judged
 * beyond-noise in at most 1% of trials (alpha 0.01), and a shift of 20 noise scales almost always is, given
 * enough replicas (a walk, whose replicas' scores spread widely, needs more). The mixture is why the bound's t
 * stops at 3 degrees of freedom: with K - 1 of them it lets 3.7% through at K = 12. */
static void test_simulated_calibration(void **state)
{
    (void)state;
    static const struct {
        enum noise_kind kind;
        int k, steps;
        double min_power; /* of a 20-scale shift */
    } S[] = {{IID, 4, 100, 0.99},   {GROWING, 4, 100, 0.99}, {IID, 3, 50, 0.9},        {WALK, 4, 200, 0},
             {WALK, 12, 100, 0.95}, {GROWING, 2, 60, 0},     {MIXTURE, 12, 100, 0.99}, {MIXTURE, 6, 100, 0.99}};
    for (size_t i = 0; i < sizeof(S) / sizeof(S[0]); i++) {
        rng_state = 4242 + i;
        double fp = simulate(S[i].kind, S[i].k, S[i].steps, 1500, 0, 0.01);
        double power = simulate(S[i].kind, S[i].k, S[i].steps, 300, 20, 0.01);
        print_message("noise %d, K %d, %d steps: one more replica beyond-noise in %.2f%%, a 20-scale shift in %.1f%%\n",
                      S[i].kind, S[i].k, S[i].steps, 100 * fp, 100 * power);
        if (fp > 0.01)
            fail_msg("noise %d, K %d: one more replica judged beyond-noise in %.2f%% of trials (> 1%%)", S[i].kind,
                     S[i].k, 100 * fp);
        if (power < S[i].min_power)
            fail_msg("noise %d, K %d: a 20-scale shift judged beyond-noise in only %.1f%%", S[i].kind, S[i].k,
                     100 * power);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_t_quantiles),           cmocka_unit_test(test_cases),
        cmocka_unit_test(test_quiet_and_sizes),       cmocka_unit_test(test_alpha_orders_thresholds),
        cmocka_unit_test(test_simulated_calibration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
