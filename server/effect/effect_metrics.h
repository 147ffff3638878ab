/* effect_metrics.h - the scalar metrics GET /api/v1/compare judges, aligned on the baseline's steps and read within
 * a budget. */
#ifndef SERVER_EFFECT_EFFECT_METRICS_H
#define SERVER_EFFECT_EFFECT_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "server/effect/effect_data.h"

#define EFFECT_MAX_METRICS 32 /* scalar metrics compared (the first by name when more are shared) */

/* One scalar metric shared by the runs compared, aligned on the baseline's steps. Run 0 is the baseline's
 * reference run, then the changed runs, then the noise runs. */
typedef struct effect_metric {
    char name[256];
    int dtype;       /* the baseline's */
    size_t steps;    /* T */
    int64_t *step;   /* T step numbers */
    uint64_t **bits; /* [run][T] raw value bits */
    int *dtypes;     /* [run] each run's dtype for this metric */
    double **vals;   /* [run][T] values as doubles */
} effect_metric;

/* The metrics of the runs compared. */
typedef struct effect_metrics {
    int nruns;
    int n;
    effect_metric m[EFFECT_MAX_METRICS];
    int more;          /* shared metrics beyond EFFECT_MAX_METRICS, not compared */
    int names_dropped; /* metric names of a run past the first COMPARE_MAX_NAMES by name, not read (the most of any run)
                        */
    json_t *unshared;  /* names some runs record and others do not (new reference; at most 64) */
    int cut;           /* 1: the budget ended before `to`: the steps compared end at next_from - 1 */
    int64_t next_from; /* with cut: where the rest begins (?from=) */
} effect_metrics;

/* effect_metrics_load - the scalar metrics (level metric, occurrence 0, a value) of rank `rank` of the `n` runs
 * `keys` (the baseline's reference first) within steps from..to, aligned. Each run
 * is read chunk by chunk within its share of COMPARE_MAX_POINTS points kept and COMPARE_MAX_DECODED decoded
 * (server/core/limits.h), whatever it holds; where a share ends, the steps compared end for every run at the
 * last whole step before (out->cut, out->next_from). Returns 0 with `out` filled (free it with
 * effect_metrics_free), or -1 with why in `f`: 400 when no metric is shared ("no shared metric") or a run covers
 * other steps than the baseline ("the runs cover different steps"; `names` and `roles` name the runs in the
 * detail), 413 when not one whole step fits the budget, 500 when stored records are damaged, 503 on a
 * database error. */
int effect_metrics_load(int n, const int64_t *keys, const char *const *names, const char *const *roles,
                        const int *running, int rank, int64_t from, int64_t to, effect_metrics *out, effect_fail *f);

/* effect_metrics_free - release what effect_metrics_load allocated. */
void effect_metrics_free(effect_metrics *ms);

#endif /* SERVER_EFFECT_EFFECT_METRICS_H */
