/* effect_data.h - what GET /api/v1/compare reads: the runs its arguments name, their scalar metrics aligned step by
 * step, and the first record where a changed run departs from the baseline. */
#ifndef SERVER_API_EFFECT_DATA_H
#define SERVER_API_EFFECT_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <microhttpd.h>

#include "server/core/limits.h"
#include "server/http/request.h"

#define EFFECT_MAX_SET GROUP_MAX_RUNS /* runs one argument (base, changed or noise) may name */
#define EFFECT_MAX_METRICS 32         /* scalar metrics compared (the first by name when more are shared) */

/* The runs one argument names: comma-separated twin groups and run ids, in that order, each run once. */
typedef struct effect_set {
    const char *role; /* "BASE", "CHANGED", "NOISE" */
    const char *spec; /* as given (borrowed) */
    int n;
    int64_t keys[EFFECT_MAX_SET];
    char ids[EFFECT_MAX_SET][40];
    char groups[EFFECT_MAX_SET][256]; /* each run's twin group ("" for none) */
    int running[EFFECT_MAX_SET];      /* 1 while the run has not ended */
} effect_set;

/* effect_set_open - resolve `spec` (role names it in errors) into `s`. A part is a twin group when runs carry
 * it, else a run id. Returns 0, or -1 after replying: 400 (empty, too many runs), 404 (no such group or
 * run), 503 (database). */
int effect_set_open(http_req *req, const char *role, const char *spec, effect_set *s);

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
    int names_dropped; /* metric names of a run past the first COMPARE_MAX_NAMES by name, not read (the most of any run) */
    json_t *unshared;  /* names some runs record and others do not (new reference; at most 64) */
    int cut;           /* 1: the budget ended before `to`: the steps compared end at next_from - 1 */
    int64_t next_from; /* with cut: where the rest begins (?from=) */
} effect_metrics;

/* effect_metrics_load - the scalar metrics (level metric, occurrence 0, a value) of rank `rank` of the `n` runs
 * `keys` (the baseline's reference first) within steps from..to, aligned (server/api/effect_metrics.c). Each run
 * is read chunk by chunk within its share of COMPARE_MAX_POINTS points kept and COMPARE_MAX_DECODED decoded
 * (server/core/limits.h), whatever it holds; where a share ends, the steps compared end for every run at the
 * last whole step before (out->cut, out->next_from). Returns 0 with `out` filled (free it with
 * effect_metrics_free), or -1 after replying: 400 when no metric is shared ("no shared metric") or a run covers
 * other steps than the baseline ("the runs cover different steps"; `names` and `roles` name the runs in the
 * detail), 413 when not one whole step fits the budget, 503 on a database error. */
int effect_metrics_load(http_req *req, int n, const int64_t *keys, const char *const *names, const char *const *roles,
                        const int *running, int rank, int64_t from, int64_t to, effect_metrics *out);

/* effect_metrics_free - release what effect_metrics_load allocated. */
void effect_metrics_free(effect_metrics *ms);

/* effect_first - the first record of steps from..to where run `changed` departs from run `base` (digests
 * first, then the first-divergence rule on the records of the first differing step), as a new JSON object
 * {"run_id", "step", "rank", "name", "occurrence", "seq", "level", "dtype", "kind", "base", "changed", "ulp",
 * "site", "cause", "cause_detail", "origin_ranks", "thin_evidence", "configuration", "ranks"}, or json_null()
 * when every record agrees. Of the ranks departing at the first step ("ranks"), the cause rule
 * (common/cause.h, with the manifest diff of the two runs) picks the one that stands for them and names the
 * cause; "site" is the record's call site (null when the program records none). Returns 0, or -1 after
 * replying 503. */
int effect_first(http_req *req, int64_t base, const char *base_id, int64_t changed, const char *changed_id,
                 int64_t from, int64_t to, json_t **out);

/* What BASE's own runs say of each other. */
typedef struct effect_base {
    const char *status; /* BASE is one twin group: its status (twin_status, server/rules/status.h); else NULL */
    char status_why[512];
    json_t *first; /* where BASE's runs part (the group's first divergence, or effect_first's departure of a
                      run from the first), or NULL when they do not (so far) */
} effect_base;

/* effect_base_departs - what BASE's runs say of each other into *out (release out->first with json_decref).
 * When BASE is one twin group, lockstepd's findings of it (server/twins/findings.h) answers: its status and
 * first divergence; else each run is searched against the first as effect_first does (no status). Returns 0,
 * or -1 after replying 503. */
int effect_base_departs(http_req *req, const effect_set *base, effect_base *out);

/* effect_data_register - prepare this module's statements. */
void effect_data_register(void);

#endif /* SERVER_API_EFFECT_DATA_H */
