/* noise.c - the effect-versus-noise rule (server/rules/noise.h): pure, tested from a table of cases. */
#include "server/rules/noise.h"

#include <math.h>
#include <string.h>

const char *noise_verdict_name(noise_verdict v)
{
    switch (v) {
    case NOISE_IDENTICAL: return "identical";
    case NOISE_WITHIN: return "within-noise";
    case NOISE_BEYOND: return "beyond-noise";
    case NOISE_DIFFERS: return "differs";
    case NOISE_UNDETERMINED: return "undetermined";
    }
    return "?";
}

/* ---- Student's t, through the regularized incomplete beta function ---- */

/* beta_cf - the continued fraction of the incomplete beta function (modified Lentz). */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double qab = a + b, qap = a + 1, qam = a - 1;
    double c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < tiny)
        d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 10000; m++) {
        int m2 = 2 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny)
            d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny)
            c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny)
            d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny)
            c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15)
            break;
    }
    return h;
}

/* ibeta - the regularized incomplete beta function I_x(a, b). lgamma_r: lockstepd calls this from several
 * threads, and lgamma writes the global signgam. */
static double ibeta(double a, double b, double x)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    int s;
    double front = lgamma_r(a + b, &s) - lgamma_r(a, &s) - lgamma_r(b, &s) + a * log(x) + b * log1p(-x);
    if (x < (a + 1) / (a + b + 2))
        return exp(front) * beta_cf(a, b, x) / a;
    return 1 - exp(front) * beta_cf(b, a, 1 - x) / b;
}

double noise_t_tail(double t, double df)
{
    double tail = 0.5 * ibeta(df / 2, 0.5, df / (df + t * t));
    return t >= 0 ? tail : 1 - tail;
}

double noise_t_quantile(double p, double df)
{
    if (p <= 0.5)
        return 0;
    double alpha = 1 - p, lo = 0, hi = 1;
    while (noise_t_tail(hi, df) > alpha && hi < 1e300)
        hi *= 2;
    for (int i = 0; i < 400 && hi - lo > 1e-12 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (noise_t_tail(mid, df) > alpha)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* ---- the band ---- */

/* ulp_floor - about one unit in the last place of `v` in a dtype with `mant_bits` significand bits (1 for
 * integers): the smallest scale a step's noise is given. */
static double ulp_floor(double v, int mant_bits)
{
    if (mant_bits <= 0)
        return 1;
    int e;
    frexp(v, &e); /* |v| = m 2^e, 0.5 <= m < 1 (e = 0 for 0) */
    double u = ldexp(1, e - 1 - mant_bits);
    return u > 0 ? u : 5e-324;
}

static size_t win_lo(size_t t)
{
    return t > NOISE_WINDOW ? t - NOISE_WINDOW : 0;
}

static size_t win_hi(size_t t, size_t n)
{
    return t + NOISE_WINDOW < n ? t + NOISE_WINDOW : n - 1;
}

/* own_sum - replica k's squared deviations over step t's window (usable steps only), and their count. */
static double own_sum(const noise_in *in, const unsigned char *usable, int k, size_t t, size_t *count)
{
    double s = 0;
    size_t c = 0;
    for (size_t j = win_lo(t); j <= win_hi(t, in->steps); j++) {
        if (!usable[j])
            continue;
        double e = in->noise[k][j] - in->base[j];
        s += e * e;
        c++;
    }
    *count = c;
    return s;
}

/* same_bits - two doubles with the same bits (so -0 differs from +0, and a NaN equals its own bits). */
static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof(double)) == 0;
}

int noise_band_fit(const noise_in *in, noise_band *b)
{
    b->k = in->k;
    if (in->k < NOISE_MIN_REPLICAS || in->k > NOISE_MAX_REPLICAS || in->steps == 0)
        return -1;
    size_t n = in->steps;
    int K = in->k;
    b->used = 0;
    b->quiet = 1;
    for (size_t t = 0; t < n; t++) {
        int ok = isfinite(in->base[t]);
        for (int k = 0; k < K && ok; k++)
            ok = isfinite(in->noise[k][t]);
        b->usable[t] = (unsigned char)ok;
        b->used += ok;
        for (int k = 0; k < K && ok && b->quiet; k++)
            b->quiet = same_bits(in->noise[k][t], in->base[t]);
    }

    /* s_t^2 = mean of every replica's squared deviation over the window; `scale` holds the sums meanwhile. */
    for (size_t t = 0; t < n; t++) {
        double tot = 0;
        size_t c;
        for (int k = 0; k < K; k++)
            tot += own_sum(in, b->usable, k, t, &c);
        b->scale[t] = tot; /* the sum; the scale below */
    }

    /* Each replica's score against the other K-1 (leave one out). */
    for (int k = 0; k < K; k++) {
        double acc = 0;
        for (size_t t = 0; t < n; t++) {
            if (!b->usable[t])
                continue;
            size_t c;
            double own = own_sum(in, b->usable, k, t, &c);
            double rest = b->scale[t] - own;
            if (rest <= 1e-9 * b->scale[t]) { /* own dominates: sum the others exactly */
                rest = 0;
                for (int j = 0; j < K; j++)
                    if (j != k)
                        rest += own_sum(in, b->usable, j, t, &c);
            }
            double floor = ulp_floor(in->base[t], in->mant_bits);
            double s2 = c ? rest / ((double)c * (K - 1)) : 0;
            if (s2 < floor * floor)
                s2 = floor * floor;
            double e = in->noise[k][t] - in->base[t];
            acc += e * e / s2;
        }
        b->scores[k] = b->used ? sqrt(acc / (double)b->used) : 0;
    }

    /* The sums become the scale from all K replicas. */
    for (size_t t = 0; t < n; t++) {
        if (!b->usable[t]) {
            b->scale[t] = 0;
            continue;
        }
        size_t c = 0;
        for (size_t j = win_lo(t); j <= win_hi(t, n); j++)
            c += b->usable[j];
        double floor = ulp_floor(in->base[t], in->mant_bits);
        double s2 = b->scale[t] / ((double)c * K);
        b->scale[t] = s2 > floor * floor ? sqrt(s2) : floor;
    }

    /* The replicas' log-scores; a zero counts as a tenth of the smallest non-zero score. */
    double minpos = INFINITY;
    for (int k = 0; k < K; k++)
        if (b->scores[k] > 0 && b->scores[k] < minpos)
            minpos = b->scores[k];
    b->log_mean = b->log_sd = 0;
    if (!isfinite(minpos))
        return 0; /* every score is 0 */
    double lg[NOISE_MAX_REPLICAS], m = 0, v = 0;
    for (int k = 0; k < K; k++) {
        lg[k] = log(b->scores[k] > 0 ? b->scores[k] : minpos / 10);
        m += lg[k];
    }
    m /= K;
    for (int k = 0; k < K; k++)
        v += (lg[k] - m) * (lg[k] - m);
    b->log_mean = m;
    b->log_sd = sqrt(v / (K - 1));
    return 0;
}

double noise_threshold(const noise_band *b, double alpha)
{
    int any = 0;
    for (int k = 0; k < b->k; k++)
        any |= b->scores[k] > 0;
    if (!any)
        return 0;
    double sd = b->log_sd > NOISE_MIN_LOG_SD ? b->log_sd : NOISE_MIN_LOG_SD;
    double q = noise_t_quantile(1 - alpha, b->k - 1 < NOISE_MAX_DF ? b->k - 1 : NOISE_MAX_DF);
    return exp(b->log_mean + q * sd * sqrt(1 + 1.0 / b->k));
}

void noise_judge(const noise_in *in, const noise_band *b, double threshold, const double *cand, noise_effect *out)
{
    memset(out, 0, sizeof(*out));
    out->first_differs = out->first_beyond = -1;
    out->threshold = b ? threshold : 0;
    double acc = 0;
    for (size_t t = 0; t < in->steps; t++) {
        double bv = in->base[t], cv = cand[t];
        if (out->first_differs < 0 && !same_bits(bv, cv))
            out->first_differs = (long long)t;
        if (isfinite(bv) && isfinite(cv)) {
            double d = fabs(cv - bv);
            if (d > out->max_abs)
                out->max_abs = d;
            if (bv != 0 && d / fabs(bv) > out->max_rel)
                out->max_rel = d / fabs(bv);
        } else if (isfinite(bv)) {
            out->nonfinite = 1;
        }
        if (!b || !b->usable[t])
            continue;
        if (!isfinite(cv)) {
            acc = INFINITY;
            if (out->first_beyond < 0)
                out->first_beyond = (long long)t;
            continue;
        }
        double u = (cv - bv) / b->scale[t];
        acc += u * u;
        if (out->first_beyond < 0 && fabs(cv - bv) > threshold * b->scale[t])
            out->first_beyond = (long long)t;
    }
    if (out->first_differs < 0) {
        out->verdict = NOISE_IDENTICAL;
        out->first_beyond = -1;
        return;
    }
    if (!b) {
        out->verdict = NOISE_DIFFERS;
        return;
    }
    if (b->used == 0) {
        out->verdict = NOISE_UNDETERMINED;
        return;
    }
    out->score = isinf(acc) ? INFINITY : sqrt(acc / (double)b->used);
    out->verdict = out->score > threshold ? NOISE_BEYOND : NOISE_WITHIN;
}
