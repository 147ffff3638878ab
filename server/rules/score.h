/* score.h - the suspect score: a Beta-Binomial posterior of a node's divergence-involvement rate against the rest of
 * the fleet's; and the fleet baseline. */
#ifndef SERVER_RULES_SCORE_H
#define SERVER_RULES_SCORE_H

#include <stddef.h>

/* The knobs of the score (lockstepd.conf: suspect_threshold, suspect_min_evidence,
 * suspect_ratio, suspect_prior). */
typedef struct score_params {
    double threshold;    /* score at or above which a node turns suspect (0.95) */
    double min_evidence; /* weighted involvements needed as well (2.0) */
    double ratio;        /* "elevated" means above ratio x the reference rate (2.0) */
    double prior;        /* prior strength in pseudo-runs, centred on the reference rate (2.0) */
} score_params;

/* One node's (or GPU's) evidence and its score. */
typedef struct score_result {
    double reference; /* the rest of the fleet's involvement rate (smoothed): what the score compares against */
    double rate;      /* k / n, 0 when n = 0 */
    double score;     /* P(rate > ratio x reference | evidence), 0..1 */
    int suspect;      /* score >= threshold and k >= min_evidence */
} score_result;

/* score_beta_cdf - the regularized incomplete beta function I_x(a, b), the
 * CDF of Beta(a, b) at x, for a, b > 0 (x clamped to [0, 1]). Accurate to
 * about 1e-10; never fails. */
double score_beta_cdf(double x, double a, double b);

/* score_compute - the score of a node with `k` weighted involvements in `n`
 * runs, when the whole fleet (the node included) has `fleet_k` in `fleet_n`.
 * The reference rate leaves the node out: (fleet_k - k + 0.5) / (fleet_n - n + 1).
 * The prior is Beta(prior x reference, prior x (1 - reference)); the posterior
 * adds k and n - k. Fills `out`; never fails. */
void score_compute(const score_params *p, double k, double n, double fleet_k, double fleet_n, score_result *out);

/* score_fleet_baseline - the fleet baseline: the whole fleet's weighted involvements over its twin-compared runs
 * (`fleet_k` / `fleet_n`, every node's since its last repair), 0 when the fleet has no run. The one number every
 * page, the API and the alerts call the fleet baseline (docs/suspects.md, "The fleet baseline"); a node's score
 * compares it with its reference rate instead, which leaves the node out. Never fails. */
double score_fleet_baseline(double fleet_k, double fleet_n);

/* score_format_rate - a rate (0..1) as people read it everywhere: a percentage with one decimal ("19.0%"), into
 * `out`. Never fails. */
void score_format_rate(double rate, char *out, size_t cap);

#endif /* SERVER_RULES_SCORE_H */
