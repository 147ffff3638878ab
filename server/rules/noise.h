/* noise.h - the effect-versus-noise rule: is a change's effect on a metric larger than run-to-run noise?
 *
 * Pure: no database, no JSON; what GET /api/v1/compare applies to each scalar metric its runs share. Tested
 * from a table of cases, a simulated calibration and Student's t table in tests/unit/test_noise.c; calibrated
 * on lockstep-train by bench/compare/calibrate.sh (docs/compare.md has the figures).
 *
 * Inputs, for one metric over T aligned steps: the baseline's values b_t (a deterministic run), K >= 2 noise
 * replicas n_kt (the baseline's program again with nondeterminism on), and a candidate c_t (a run with the
 * change, judged on its own).
 *
 *  1. Deviations from the baseline: e_kt = n_kt - b_t for each replica, d_t = c_t - b_t for the candidate.
 *  2. The noise scale of step t, s_t: the root mean square of the replicas' deviations over the steps
 *     t-W .. t+W (W = NOISE_WINDOW, clipped to the range), never below about one unit in the last place of
 *     the metric's dtype at b_t, so that a window where no replica happened to differ does not make every
 *     difference there infinitely large. Steps where the baseline or a replica is not finite are skipped.
 *  3. A run's score is the root mean square over the usable steps of its deviation in units of the scale:
 *     S = sqrt(mean_t (d_t / s_t)^2). A candidate that is not finite where the baseline and every replica are
 *     scores +inf. Each replica's own score is computed against the scale of the other K-1 replicas (leave one
 *     out), so that no replica is judged against a band it helped make.
 *  4. The threshold: the log of a replica's score is modelled as normal. From the K replicas' log-scores (mean
 *     m, sample standard deviation sd, taken as at least NOISE_MIN_LOG_SD) the upper prediction bound for
 *     ONE MORE replica at level 1 - a is  exp(m + t(1 - a; v) * sd * sqrt(1 + 1/K)),  t the quantile of
 *     Student's t with v = min(K - 1, NOISE_MAX_DF) degrees of freedom. With v = K - 1 it would be exact
 *     under the model whatever K is (t(0.99; 3) = 4.54, t(0.99; 1) = 31.8); real replicas' log-scores have a
 *     heavier upper tail than the normal's (lockstep-train's grad_norm: a tenth of the replicas score 1.4 times
 *     the others), which a bound that tightens with K lets through (1.3% beyond at K = 8, 2.1% at K = 12), so v
 *     stops at 3: more replicas sharpen m and sd, not the tail assumed. A replica whose score is 0
 *     (bit-identical to the baseline over every step) counts as a tenth of the smallest non-zero score; when
 *     every score is 0 the replicas carry no noise at all and the threshold is 0.
 *  5. The verdict: identical when c_t and b_t have the same bits at every step; beyond-noise when S exceeds the
 *     threshold; within-noise otherwise (undetermined when no step is usable).
 *
 * The band a dashboard shades at step t, threshold * s_t, is the deviation a run could keep at every step and
 * still score exactly the threshold. The caller chooses a: GET /api/v1/compare divides its alpha by the
 * number of (metric, distinct changed run) judgements (Bonferroni), so that one more replica of the noise
 * passed as the change is judged within-noise overall with probability >= 1 - alpha.
 *
 * Assumptions: the replicas and a replica-like candidate are exchangeable (the same program and data, only
 * the nondeterminism differs); the noise scale changes slowly over 2W+1 steps; the log-score of a replica is
 * close to normal. The scale from K-1 replicas is noisier than the one from all K, so the replicas' scores
 * run a little high and the threshold errs on the side of within-noise. A change whose effect is systematic
 * but smaller than the noise (a 0.1% lower loss under 1% noise) is within-noise by design: this rule asks
 * whether a change moves the numbers more than nondeterminism does, not whether it has any effect at all.
 */
#ifndef SERVER_RULES_NOISE_H
#define SERVER_RULES_NOISE_H

#include <stddef.h>
#include <stdint.h>

#define NOISE_WINDOW 4         /* steps on each side pooled into one step's noise scale */
#define NOISE_MIN_REPLICAS 2   /* fewer replicas cannot estimate a spread */
#define NOISE_MAX_REPLICAS 256 /* the most replicas one band takes */
#define NOISE_MIN_LOG_SD 0.1   /* the smallest spread of the replicas' log-scores the threshold assumes */
#define NOISE_MAX_DF 3         /* the most degrees of freedom the prediction bound's t takes (step 4) */
#define NOISE_ALPHA 0.01       /* the default false-alarm rate for one more replica */

/* A verdict on one metric (or on a whole comparison). */
typedef enum noise_verdict {
    NOISE_IDENTICAL,    /* the same bits at every step */
    NOISE_WITHIN,       /* differs, by no more than the noise */
    NOISE_BEYOND,       /* differs by more than the noise */
    NOISE_DIFFERS,      /* differs; no replicas to say by how much relative to noise */
    NOISE_UNDETERMINED, /* differs, and no step has a finite baseline and finite replicas */
} noise_verdict;

/* One metric's baseline and replicas, aligned on the same `steps` steps (index 0 .. steps-1). */
typedef struct noise_in {
    size_t steps;
    const double *base;         /* steps values */
    const double *const *noise; /* k arrays of steps values; may be NULL when k == 0 */
    int k;
    int mant_bits; /* significand bits of the dtype (52 f64, 23 f32, 10 f16, 7 bf16, 3 or 2 fp8); 0: an integer */
} noise_in;

/* The band estimated from the replicas. `scale` and `usable` are arrays of `steps` elements the caller owns. */
typedef struct noise_band {
    double *scale;         /* s_t from all K replicas; 0 where the step is not usable */
    unsigned char *usable; /* 1 where the baseline and every replica are finite */
    size_t used;           /* usable steps */
    int k;
    double scores[NOISE_MAX_REPLICAS]; /* each replica's leave-one-out score */
    int quiet;                         /* every replica has the baseline's bits at every usable step */
    double log_mean, log_sd;           /* of the log-scores (sd as measured, before its floor); 0 when quiet */
} noise_band;

/* What the rule says of one candidate. Step positions are indices into the aligned steps. */
typedef struct noise_effect {
    noise_verdict verdict;
    double score;            /* S (+inf: not finite where the baseline is); 0 without replicas */
    double threshold;        /* the threshold it was judged against; 0 without replicas */
    long long first_differs; /* the first step whose bits differ from the baseline's, -1 when none */
    long long first_beyond;  /* the first usable step with |d_t| > threshold * s_t, -1 when none (or no replicas) */
    double max_abs;          /* the largest |d_t| over steps where both are finite */
    double max_rel;          /* the largest |d_t| / |b_t| there (b_t != 0) */
    int nonfinite;           /* the candidate is not finite at some step where the baseline is */
} noise_effect;

/* noise_band_fit - estimate the band of `in` (k >= NOISE_MIN_REPLICAS) into `b`, whose `scale` and `usable`
 * arrays (in->steps elements each) the caller provides. Returns 0, or -1 when in->k is out of
 * NOISE_MIN_REPLICAS .. NOISE_MAX_REPLICAS or in->steps is 0 (b is then untouched but for k). */
int noise_band_fit(const noise_in *in, noise_band *b);

/* noise_threshold - the upper prediction bound at level 1 - alpha (0 < alpha < 1) for the score of one more
 * replica, from the band's replica scores (step 4 above); 0 when the band is quiet. */
double noise_threshold(const noise_band *b, double alpha);

/* noise_judge - judge candidate `cand` (in->steps values) against band `b` (NULL: no replicas, then the
 * verdict is identical or differs and only the sizes are filled) and `threshold`. Never fails. */
void noise_judge(const noise_in *in, const noise_band *b, double threshold, const double *cand, noise_effect *out);

/* noise_verdict_name - "identical", "within-noise", "beyond-noise", "differs", "undetermined". */
const char *noise_verdict_name(noise_verdict v);

/* noise_t_tail - P(T > t) for Student's t with `df` > 0 degrees of freedom. */
double noise_t_tail(double t, double df);

/* noise_t_quantile - the t with P(T <= t) = p, for 0.5 <= p < 1 and df > 0 (relative error < 1e-10). */
double noise_t_quantile(double p, double df);

#endif /* SERVER_RULES_NOISE_H */
