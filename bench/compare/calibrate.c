/* calibrate.c - calibration of the effect-versus-noise rule (server/rules/noise.h) on real traces: how often one
 * more replica of the noise is judged beyond-noise (the promise: at most 1 in 100), and how often real changes are.
 *
 * Reads ROOT/base (a deterministic run), ROOT/noise-* (replicas with nondeterminism on) and ROOT/change-* (runs
 * with a change), each a trace directory; takes rank 0's scalar metrics (occurrence 0), aligned on the baseline's
 * steps. For each K it draws K replicas as the noise and one more as the candidate, many times, and judges every
 * metric at alpha / metrics exactly as GET /api/v1/compare does (the same object code); the candidate is
 * beyond-noise when any metric is. It also cuts the pool into disjoint groups of K + 1 (independent trials), and
 * judges each change against K replicas drawn the same way. One JSON line per (K, candidate kind).
 *
 * usage: calibrate ROOT [--k 2,3,4,8] [--trials N] [--alpha A] [--seed S]   (bench/compare/calibrate.sh makes ROOT)
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/tracedir.h"
#include "common/dtype.h"
#include "server/rules/noise.h"

#define MAX_METRICS 8
#define MAX_POOL 2048
#define MAX_CHANGES 32

/* One run's metrics, aligned on the baseline's steps. */
typedef struct series {
    char name[256];
    double *v[MAX_METRICS];
} series;

static char metric_names[MAX_METRICS][128];
static int n_metrics;
static int64_t *steps;
static size_t n_steps;

static uint64_t rng = 0x5eed;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* load - rank 0's metrics of the trace directory `path`; the first call (the baseline) fixes the names and
 * steps. Returns 0, or -1 with a message. */
static int load(const char *path, series *s)
{
    td_run run;
    char why[512];
    if (td_load(&run, path, why, sizeof(why)) < 0) {
        fprintf(stderr, "calibrate: %s: %s\n", path, why);
        return -1;
    }
    const td_rank *r = td_rank_find(&run, 0);
    if (!r) {
        fprintf(stderr, "calibrate: %s has no rank 0\n", path);
        td_release(&run);
        return -1;
    }
    int first = steps == NULL;
    if (first) {
        for (size_t i = 0; i < r->n; i++) {
            const rec_record *x = &r->recs[i];
            if (x->level != LS_LEVEL_METRIC || x->occurrence || !(x->flags & REC_HAS_VALUE))
                continue;
            int known = 0;
            for (int m = 0; m < n_metrics && !known; m++)
                known = strlen(metric_names[m]) == x->name_len && !memcmp(metric_names[m], x->name, x->name_len);
            if (!known && n_metrics < MAX_METRICS)
                snprintf(metric_names[n_metrics++], sizeof(metric_names[0]), "%.*s", (int)x->name_len, x->name);
            if (!n_steps || steps[n_steps - 1] != x->step) {
                steps = realloc(steps, (n_steps + 1) * sizeof(*steps));
                steps[n_steps++] = x->step;
            }
        }
    }
    snprintf(s->name, sizeof(s->name), "%s", path);
    for (int m = 0; m < n_metrics; m++) {
        s->v[m] = malloc(n_steps * sizeof(double));
        for (size_t t = 0; t < n_steps; t++)
            s->v[m][t] = NAN;
    }
    size_t t = 0;
    int got = 0;
    for (size_t i = 0; i < r->n; i++) {
        const rec_record *x = &r->recs[i];
        if (x->level != LS_LEVEL_METRIC || x->occurrence || !(x->flags & REC_HAS_VALUE))
            continue;
        while (t < n_steps && steps[t] < x->step)
            t++;
        if (t == n_steps || steps[t] != x->step)
            continue;
        for (int m = 0; m < n_metrics; m++)
            if (strlen(metric_names[m]) == x->name_len && !memcmp(metric_names[m], x->name, x->name_len)) {
                s->v[m][t] = dtype_value_to_double(x->dtype, x->value);
                got++;
            }
    }
    td_release(&run);
    if ((size_t)got != n_steps * (size_t)n_metrics) {
        fprintf(stderr, "calibrate: %s holds %d of the baseline's %zu metric values\n", path, got,
                n_steps * (size_t)n_metrics);
        return -1;
    }
    return 0;
}

/* beyond - 1 when `cand` is beyond the noise of replicas `idx[0..k-1]` of `pool` on any metric (alpha / metrics
 * each), as GET /api/v1/compare judges one changed run. */
static int beyond(const series *base, const series *pool, const int *idx, int k, const series *cand, double alpha,
                  double *scale, unsigned char *usable)
{
    int any = 0;
    for (int m = 0; m < n_metrics && !any; m++) {
        const double *noise[NOISE_MAX_REPLICAS];
        for (int j = 0; j < k; j++)
            noise[j] = pool[idx[j]].v[m];
        noise_in in = {.steps = n_steps, .base = base->v[m], .noise = noise, .k = k, .mant_bits = 52};
        noise_band b = {.scale = scale, .usable = usable};
        if (noise_band_fit(&in, &b) < 0)
            return 0;
        noise_effect e;
        noise_judge(&in, &b, noise_threshold(&b, alpha / n_metrics), cand->v[m], &e);
        any = e.verdict == NOISE_BEYOND;
    }
    return any;
}

/* wilson_upper - the upper end of the 95% Wilson interval of a rate x / n. */
static double wilson_upper(int x, int n)
{
    double z = 1.959963984540054, p = (double)x / n, z2 = z * z;
    return (p + z2 / (2 * n) + z * sqrt(p * (1 - p) / n + z2 / (4.0 * n * n))) / (1 + z2 / n);
}

static void draw(int *perm, int pool, int want)
{
    for (int i = 0; i < pool; i++)
        perm[i] = i;
    for (int i = 0; i < want; i++) {
        int j = i + (int)(rnd() % (uint64_t)(pool - i));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: calibrate ROOT [--k 2,3,4,8] [--trials N] [--alpha A] [--seed S]\n");
        return 2;
    }
    const char *root = argv[1], *ks = "2,3,4,6,8";
    int trials = 20000;
    double alpha = NOISE_ALPHA;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--k"))
            ks = argv[i + 1];
        else if (!strcmp(argv[i], "--trials"))
            trials = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--alpha"))
            alpha = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            rng = strtoull(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "calibrate: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    char path[4096];
    static series base, pool[MAX_POOL], changes[MAX_CHANGES];
    snprintf(path, sizeof(path), "%s/base", root);
    if (load(path, &base) < 0)
        return 1;
    DIR *d = opendir(root);
    if (!d)
        return 1;
    char *names[MAX_POOL + MAX_CHANGES];
    int nn = 0;
    for (struct dirent *e; (e = readdir(d)) && nn < MAX_POOL + MAX_CHANGES;)
        if (!strncmp(e->d_name, "noise-", 6) || !strncmp(e->d_name, "change-", 7))
            names[nn++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)nn, sizeof(char *), by_name);
    int np = 0, nc = 0;
    for (int i = 0; i < nn; i++) {
        snprintf(path, sizeof(path), "%s/%s", root, names[i]);
        int change = names[i][0] == 'c';
        series *s = change ? &changes[nc] : &pool[np];
        if (load(path, s) < 0)
            return 1;
        snprintf(s->name, sizeof(s->name), "%s", names[i] + (change ? 7 : 6));
        change ? nc++ : np++;
        free(names[i]);
    }
    double *scale = malloc(n_steps * sizeof(double));
    unsigned char *usable = malloc(n_steps);
    int perm[MAX_POOL];
    char kbuf[256];
    snprintf(kbuf, sizeof(kbuf), "%s", ks);
    for (char *save, *tok = strtok_r(kbuf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k = atoi(tok);
        if (k < NOISE_MIN_REPLICAS || k + 1 > np)
            continue;
        /* One more replica, resampled from the pool. */
        int fp = 0;
        for (int t = 0; t < trials; t++) {
            draw(perm, np, k + 1);
            fp += beyond(&base, pool, perm, k, &pool[perm[k]], alpha, scale, usable);
        }
        /* Disjoint groups of k + 1: independent trials. */
        int groups = np / (k + 1), dfp = 0;
        draw(perm, np, np);
        for (int g = 0; g < groups; g++)
            dfp += beyond(&base, pool, perm + g * (k + 1), k, &pool[perm[g * (k + 1) + k]], alpha, scale, usable);
        printf("{\"bench\": \"compare.calibration\", \"candidate\": \"one more replica\", \"k\": %d, \"alpha\": %g, "
               "\"steps\": %zu, \"metrics\": %d, \"pool\": %d, \"trials\": %d, \"beyond\": %d, \"within_rate\": %.4f, "
               "\"beyond_rate_ci95_upper\": %.4f, \"disjoint_trials\": %d, \"disjoint_beyond\": %d}\n",
               k, alpha, n_steps, n_metrics, np, trials, fp, 1 - (double)fp / trials, wilson_upper(fp, trials), groups,
               dfp);
        /* Each change against k replicas. */
        for (int c = 0; c < nc; c++) {
            int hits = 0, n = trials / 10 > 0 ? trials / 10 : 1;
            for (int t = 0; t < n; t++) {
                draw(perm, np, k);
                hits += beyond(&base, pool, perm, k, &changes[c], alpha, scale, usable);
            }
            printf(
                "{\"bench\": \"compare.calibration\", \"candidate\": \"%s\", \"k\": %d, \"alpha\": %g, \"steps\": %zu, "
                "\"trials\": %d, \"beyond\": %d, \"beyond_rate\": %.4f}\n",
                changes[c].name, k, alpha, n_steps, n, hits, (double)hits / n);
        }
        fflush(stdout);
    }
    return 0;
}
