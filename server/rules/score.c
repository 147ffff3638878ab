/* score.c - the suspect score: a Beta-Binomial posterior of a node's divergence-involvement rate against the rest of
 * the fleet's; and the fleet baseline. */
#include "server/rules/score.h"

#include <math.h>
#include <stdio.h>

/* beta_frac - the continued fraction of I_x(a, b), evaluated with the
 * modified Lentz method; converges fast for x < (a + 1) / (a + b + 2). */
static double beta_frac(double x, double a, double b)
{
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (fabs(d) < tiny)
        d = tiny;
    d = 1.0 / d;
    double f = d;
    for (int m = 1; m <= 500; m++) {
        /* even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)) */
        double num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 + num * d;
        c = 1.0 + num / c;
        if (fabs(d) < tiny)
            d = tiny;
        if (fabs(c) < tiny)
            c = tiny;
        d = 1.0 / d;
        f *= d * c;
        /* odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)) */
        num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 + num * d;
        c = 1.0 + num / c;
        if (fabs(d) < tiny)
            d = tiny;
        if (fabs(c) < tiny)
            c = tiny;
        d = 1.0 / d;
        double step = d * c;
        f *= step;
        if (fabs(step - 1.0) < 1e-14)
            break;
    }
    return f;
}

double score_beta_cdf(double x, double a, double b)
{
    if (x <= 0.0)
        return 0.0;
    if (x >= 1.0)
        return 1.0;
    /* x^a (1-x)^b / (a B(a, b)), in logs */
    double lfront = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0))
        return exp(lfront) * beta_frac(x, a, b) / a;
    return 1.0 - exp(lfront) * beta_frac(1.0 - x, b, a) / b;
}

void score_compute(const score_params *p, double k, double n, double fleet_k, double fleet_n, score_result *out)
{
    if (k < 0)
        k = 0;
    if (n < k)
        n = k;
    double rest_k = fleet_k - k, rest_n = fleet_n - n;
    if (rest_k < 0)
        rest_k = 0;
    if (rest_n < rest_k)
        rest_n = rest_k;
    double base = (rest_k + 0.5) / (rest_n + 1.0);
    double t = p->ratio * base;
    if (t > 0.999)
        t = 0.999;
    double prior = p->prior > 0 ? p->prior : 1e-3;
    double a = prior * base + k, b = prior * (1.0 - base) + (n - k);
    if (a < 1e-6)
        a = 1e-6;
    if (b < 1e-6)
        b = 1e-6;
    out->reference = base;
    out->rate = n > 0 ? k / n : 0.0;
    out->score = n > 0 ? 1.0 - score_beta_cdf(t, a, b) : 0.0;
    if (out->score < 0)
        out->score = 0;
    out->suspect = out->score >= p->threshold && k >= p->min_evidence;
}

double score_fleet_baseline(double fleet_k, double fleet_n)
{
    return fleet_n > 0 && fleet_k > 0 ? fleet_k / fleet_n : 0.0;
}

void score_format_rate(double rate, char *out, size_t cap)
{
    snprintf(out, cap, "%.1f%%", rate * 100.0);
}
