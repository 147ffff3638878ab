/* effect.c - GET /api/v1/compare: the impact of an intentional change against the run-to-run noise band, and the
 * records where it first shows. */
#include "server/api/effect.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "server/api/group.h"
#include "server/api/list.h"
#include "server/api/run_ref.h"
#include "server/api/twin_records.h"
#include "server/rules/noise.h"
#include "server/twins/absorbed.h"
#include "server/core/limits.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/effect/effect_data.h"
#include "server/effect/effect_metrics.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/http/slow.h"

#define MAX_RUNS (1 + 2 * EFFECT_MAX_SET) /* the baseline's reference, the changed runs, the noise runs */

/* What one request compares: run 0 is the baseline's reference run, then the changed runs, then the noise. */
typedef struct compare_req {
    effect_set base, changed, noise;
    int k; /* noise replicas (0: none) */
    long long rank;
    int64_t from, to;
    int ranged; /* ?from= or ?to= given */
    double alpha;
    int series;
    int n;
    int64_t keys[MAX_RUNS];
    const char *ids[MAX_RUNS];
    const char *roles[MAX_RUNS];
    int running[MAX_RUNS];
} compare_req;

/* mant_bits - significand bits of a floating dtype, 0 for the integers (their unit is 1). */
static int mant_bits(int dtype)
{
    switch (dtype) {
    case LS_F64: return 52;
    case LS_F32: return 23;
    case LS_F16: return 10;
    case LS_BF16: return 7;
    case LS_F8E4M3: return 3;
    case LS_F8E5M2: return 2;
    default: return 0;
    }
}

static json_t *real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *step_or_null(const effect_metric *m, long long i)
{
    return i < 0 ? json_null() : json_integer((json_int_t)m->step[i]);
}

static json_t *set_json(const effect_set *s)
{
    json_t *ids = json_array();
    for (int i = 0; i < s->n; i++)
        json_array_append_new(ids, json_string(s->ids[i]));
    return json_pack("{s:s, s:o}", "ref", s->spec, "runs", ids);
}

/* reply_fail - the answer to a read of the effect check that failed (`f`, server/effect/effect_data.h): the
 * database's 503, or the error it describes. */
static enum MHD_Result reply_fail(http_req *req, const effect_fail *f)
{
    if (f->status == 503)
        return http_reply_db_down(req, f->detail);
    return http_reply_error(req, f->status, f->error, f->detail, f->hint);
}

/* parse_args - the query into `c`. Returns 0, or -1 after replying 400 or 404. */
static int parse_args(http_req *req, compare_req *c)
{
    memset(c, 0, sizeof(*c));
    long long from, to;
    group_viewer user; /* who reads, decided before anything is looked up (server/api/group.h) */
    if (group_reader(req, &user) < 0)
        return -1;
    if (api_int_arg(req, "rank", 0, INT32_MAX, 0, &c->rank) < 0 ||
        api_int_arg(req, "from", INT64_MIN, INT64_MAX, INT64_MIN, &from) < 0 ||
        api_int_arg(req, "to", INT64_MIN, INT64_MAX, INT64_MAX, &to) < 0)
        return -1;
    c->from = from;
    c->to = to;
    c->ranged = http_query(req, "from") || http_query(req, "to");
    const char *a = http_query(req, "alpha"), *se = http_query(req, "series");
    char *end = NULL;
    c->alpha = a && *a ? strtod(a, &end) : NOISE_ALPHA;
    if ((a && *a && *end) || !(c->alpha > 0 && c->alpha <= 0.5)) {
        http_reply_error(req, 400, "bad query argument",
                         "?alpha= must be a number in (0, 0.5]: the false-alarm rate for one more noise replica",
                         "leave it out for 0.01, or e.g. ?alpha=0.001");
        return -1;
    }
    if (c->from > c->to) {
        http_reply_error(req, 400, "bad step range", "?from= is after ?to=", "e.g. ?from=1&to=1000");
        return -1;
    }
    c->series = !(se && !strcmp(se, "0"));
    effect_fail f;
    if (effect_set_open("BASE", http_query(req, "base"), &c->base, &f) < 0 ||
        effect_set_open("CHANGED", http_query(req, "changed"), &c->changed, &f) < 0) {
        reply_fail(req, &f);
        return -1;
    }
    const char *ns = http_query(req, "noise");
    if (ns && *ns) {
        if (effect_set_open("NOISE", ns, &c->noise, &f) < 0) {
            reply_fail(req, &f);
            return -1;
        }
        c->k = c->noise.n;
        if (c->k < NOISE_MIN_REPLICAS) {
            http_reply_error(req, 400, "too few noise replicas",
                             "NOISE names 1 run; a noise band needs at least 2 replicas to estimate its spread",
                             "launch 4 or more (lockstep twin --noise 4), or compare without NOISE");
            return -1;
        }
    }
    /* A job's token (read_access = admin, ?job=J) compares only runs its user may read (server/api/group.h). */
    const effect_set *own[] = {&c->base, &c->changed, &c->noise};
    for (int x = 0; x < 3; x++) {
        const char *ids[EFFECT_MAX_SET];
        for (int i = 0; i < own[x]->n; i++)
            ids[i] = own[x]->ids[i];
        if (!group_runs_readable(req, &user, ids, own[x]->n))
            return -1;
    }
    /* No run may play two parts. */
    const effect_set *sets[] = {&c->base, &c->changed, &c->noise};
    for (int x = 0; x < 3; x++)
        for (int y = x + 1; y < 3; y++)
            for (int i = 0; i < sets[x]->n; i++)
                for (int j = 0; j < sets[y]->n; j++)
                    if (sets[x]->keys[i] == sets[y]->keys[j]) {
                        char detail[300];
                        snprintf(detail, sizeof(detail), "run %s is in both %s and %s", sets[x]->ids[i], sets[x]->role,
                                 sets[y]->role);
                        http_reply_error(req, 400, "a run plays two parts", detail,
                                         "BASE, CHANGED and NOISE must name different runs");
                        return -1;
                    }
    c->keys[0] = c->base.keys[0];
    c->ids[0] = c->base.ids[0];
    c->roles[0] = "BASE";
    c->running[0] = c->base.running[0];
    c->n = 1;
    for (int i = 0; i < c->changed.n; i++, c->n++) {
        c->keys[c->n] = c->changed.keys[i];
        c->ids[c->n] = c->changed.ids[i];
        c->roles[c->n] = "CHANGED";
        c->running[c->n] = c->changed.running[i];
    }
    for (int i = 0; i < c->noise.n; i++, c->n++) {
        c->keys[c->n] = c->noise.keys[i];
        c->ids[c->n] = c->noise.ids[i];
        c->roles[c->n] = "NOISE";
        c->running[c->n] = c->noise.running[i];
    }
    return 0;
}

/* weight - how much a verdict weighs in a summary: beyond > differs > undetermined > within > identical. */
static int weight(noise_verdict v)
{
    static const int w[] = {
        [NOISE_IDENTICAL] = 0, [NOISE_WITHIN] = 1, [NOISE_UNDETERMINED] = 2, [NOISE_DIFFERS] = 3, [NOISE_BEYOND] = 4};
    return w[v];
}

static noise_verdict worse(noise_verdict a, noise_verdict b)
{
    return weight(b) > weight(a) ? b : a;
}

/* max_ulp - the largest ULP distance between the baseline's and run j's values of `m` (null when their dtypes
 * differ or no pair has one). */
static json_t *max_ulp(const effect_metric *m, int j)
{
    if (m->dtypes[j] != m->dtype || m->dtype == LS_BYTES)
        return json_null();
    uint64_t best = 0;
    int any = 0;
    for (size_t t = 0; t < m->steps; t++) {
        uint64_t u = dtype_ulp_distance((unsigned)m->dtype, m->bits[0][t], m->bits[j][t]);
        if (u != UINT64_MAX && (!any || u > best))
            best = u;
        any |= u != UINT64_MAX;
    }
    return any ? json_integer((json_int_t)(best > INT64_MAX ? INT64_MAX : best)) : json_null();
}

/* series_json - the curves of one metric: steps, the baseline, the band (threshold * scale) and the noise
 * replicas' range, each changed run's values and deviation; every `stride`-th step (the curves of a long run are
 * thinned to bound the answer; the verdicts use every step). */
static json_t *series_json(const compare_req *c, const effect_metric *m, const noise_band *b, double thr, size_t stride)
{
    json_t *steps = json_array(), *base = json_array(), *band = json_array(), *lo = json_array(), *hi = json_array();
    for (size_t t = 0; t < m->steps; t += stride) {
        json_array_append_new(steps, json_integer((json_int_t)m->step[t]));
        json_array_append_new(base, real_or_null(m->vals[0][t]));
        if (!c->k)
            continue;
        json_array_append_new(band, b->usable[t] ? json_real(thr * b->scale[t]) : json_null());
        double mn = INFINITY, mx = -INFINITY;
        for (int k = 0; k < c->k; k++) {
            double v = m->vals[1 + c->changed.n + k][t];
            if (isfinite(v)) {
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
        }
        json_array_append_new(lo, real_or_null(mn));
        json_array_append_new(hi, real_or_null(mx));
    }
    json_t *changed = json_array();
    for (int j = 1; j <= c->changed.n; j++) {
        json_t *vals = json_array(), *dev = json_array();
        for (size_t t = 0; t < m->steps; t += stride) {
            json_array_append_new(vals, real_or_null(m->vals[j][t]));
            json_array_append_new(dev, real_or_null(m->vals[j][t] - m->vals[0][t]));
        }
        json_array_append_new(changed,
                              json_pack("{s:s, s:o, s:o}", "run_id", c->ids[j], "values", vals, "deviation", dev));
    }
    if (!c->k) {
        json_decref(band);
        json_decref(lo);
        json_decref(hi);
        band = json_null();
        lo = json_null();
        hi = json_null();
    }
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "steps", steps, "base", base, "band", band, "noise_min", lo,
                     "noise_max", hi, "changed", changed, "stride", (json_int_t)stride);
}

/* series_stride - every how many steps the curves of a metric of `steps` steps keep, so that the curves of `nmetrics`
 * metrics hold at most COMPARE_SERIES_CELLS numbers in all (1: every step). */
static size_t series_stride(const compare_req *c, int nmetrics, size_t steps)
{
    size_t per_step =
        2 + 2 * (size_t)c->changed.n + (c->k ? 3 : 0); /* step, base, each run's value and deviation, band */
    size_t fit = COMPARE_SERIES_CELLS / (per_step * (size_t)(nmetrics > 0 ? nmetrics : 1));
    fit = fit ? fit : 1;
    return steps <= fit ? 1 : (steps + fit - 1) / fit;
}

/* metric_json - judge every changed run on metric `m` at `alpha` (per judgement); its verdict into *verdict; its
 * curves every `stride`-th step. */
static json_t *metric_json(const compare_req *c, const effect_metric *m, double alpha, noise_verdict *verdict,
                           json_t *notes, size_t stride)
{
    const double *noise[NOISE_MAX_REPLICAS];
    for (int k = 0; k < c->k; k++)
        noise[k] = m->vals[1 + c->changed.n + k];
    noise_in in = {.steps = m->steps, .base = m->vals[0], .noise = noise, .k = c->k, .mant_bits = mant_bits(m->dtype)};
    noise_band band = {.scale = xcalloc(m->steps + 1, sizeof(double)), .usable = xcalloc(m->steps + 1, 1)};
    int have_band = c->k && noise_band_fit(&in, &band) == 0;
    double thr = have_band ? noise_threshold(&band, alpha) : 0;
    *verdict = NOISE_IDENTICAL;
    json_t *runs = json_array();
    const noise_effect *worst = NULL;
    noise_effect effs[EFFECT_MAX_SET];
    for (int j = 1; j <= c->changed.n; j++) {
        noise_effect *e = &effs[j - 1];
        noise_judge(&in, have_band ? &band : NULL, thr, m->vals[j], e);
        *verdict = worse(*verdict, e->verdict);
        double ratio = thr > 0 ? e->score / thr : NAN;
        if (!worst || weight(e->verdict) > weight(worst->verdict) ||
            (e->verdict == worst->verdict && e->score > worst->score))
            worst = e;
        json_array_append_new(runs,
                              json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "run_id", c->ids[j],
                                        "verdict", noise_verdict_name(e->verdict), "score",
                                        have_band ? real_or_null(e->score) : json_null(), "ratio", real_or_null(ratio),
                                        "first_step_differs", step_or_null(m, e->first_differs), "first_step_beyond",
                                        e->verdict == NOISE_BEYOND ? step_or_null(m, e->first_beyond) : json_null(),
                                        "max_abs_deviation", json_real(e->max_abs), "max_rel_deviation",
                                        json_real(e->max_rel), "max_ulp", max_ulp(m, j), "nonfinite", e->nonfinite));
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:o}", "name", m->name, "dtype", dtype_name((unsigned)m->dtype),
                          "verdict", noise_verdict_name(*verdict), "steps", (json_int_t)m->steps, "changed", runs);
    json_object_set_new(o, "score", have_band ? real_or_null(worst->score) : json_null());
    json_object_set_new(o, "threshold", have_band ? json_real(thr) : json_null());
    json_object_set_new(o, "ratio", thr > 0 ? real_or_null(worst->score / thr) : json_null());
    json_object_set_new(o, "first_step_differs", step_or_null(m, worst->first_differs));
    /* Where a run beyond the noise first leaves the band; a run within it may cross it at single steps. */
    json_object_set_new(o, "first_step_beyond",
                        worst->verdict == NOISE_BEYOND ? step_or_null(m, worst->first_beyond) : json_null());
    json_object_set_new(o, "max_abs_deviation", json_real(worst->max_abs));
    json_object_set_new(o, "max_rel_deviation", json_real(worst->max_rel));
    json_t *scores = json_null();
    if (have_band) {
        scores = json_array();
        for (int k = 0; k < c->k; k++)
            json_array_append_new(scores, json_real(band.scores[k]));
        if (band.quiet) {
            char note[400];
            snprintf(note, sizeof(note),
                     "The noise replicas never differ from BASE on %.200s: they carry no noise there (is "
                     "nondeterminism on in them?), so any difference on it is beyond their noise.",
                     m->name);
            json_array_append_new(notes, json_string(note));
        }
    }
    json_object_set_new(o, "noise_scores", scores);
    json_object_set_new(o, "noise_quiet", have_band ? json_boolean(band.quiet) : json_null());
    if (c->series)
        json_object_set_new(o, "series", series_json(c, m, &band, thr, stride));
    free(band.scale);
    free(band.usable);
    return o;
}

/* distinct_changed - the changed runs that are not bit-identical, on every metric, to an earlier changed run:
 * each is one judgement per metric (twins of the change count once). */
static int distinct_changed(const compare_req *c, const effect_metrics *ms)
{
    int distinct = 0;
    for (int j = 1; j <= c->changed.n; j++) {
        int dup = 0;
        for (int i = 1; i < j && !dup; i++) {
            dup = 1;
            for (int x = 0; x < ms->n && dup; x++)
                dup = !memcmp(ms->m[x].bits[i], ms->m[x].bits[j], ms->m[x].steps * sizeof(uint64_t));
        }
        distinct += !dup;
    }
    return distinct;
}

static json_t *rule_json(const compare_req *c, int tests, double alpha_test)
{
    json_t *o = json_pack("{s:f, s:i, s:f, s:i}", "alpha", c->alpha, "judgements", tests, "alpha_per_judgement",
                          alpha_test, "replicas", c->k);
    json_object_set_new(o, "window", json_integer(NOISE_WINDOW));
    json_object_set_new(o, "min_log_sd", json_real(NOISE_MIN_LOG_SD));
    json_object_set_new(o, "docs", json_string("docs/compare.md"));
    return o;
}

static void note(json_t *notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(json_t *notes, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_array_append_new(notes, json_string(buf));
}

/* first_effects - where each changed run first departs from BASE, over every record of every rank, appended to
 * `firsts` (null for a run that does not); the earliest of them (by step, then rank) in *first (a new reference,
 * null when none) with its step and rank. 0, or -1 with why a read failed in `f`. */
static int first_effects(const compare_req *c, json_t *firsts, json_t **first, int64_t *best_step, int *best_rank,
                         effect_fail *f)
{
    json_t *earliest = NULL; /* borrowed from firsts */
    for (int j = 1; j <= c->changed.n; j++) {
        json_t *fe;
        if (effect_first(c->keys[0], c->ids[0], c->keys[j], c->ids[j], c->from, c->to, &fe, f) < 0)
            return -1;
        json_array_append_new(firsts, fe);
        if (json_is_object(fe)) {
            int64_t s = json_integer_value(json_object_get(fe, "step"));
            int r = (int)json_integer_value(json_object_get(fe, "rank"));
            if (!earliest || s < *best_step || (s == *best_step && r < *best_rank)) {
                earliest = fe;
                *best_step = s;
                *best_rank = r;
            }
        }
    }
    *first = earliest ? json_incref(earliest) : json_null();
    return 0;
}

/* What the metrics' judgements come to: the heaviest verdict, the steps they span and whether a curve was thinned. */
typedef struct metrics_span {
    noise_verdict mv;
    int64_t lo, hi; /* lo > hi when no metric has a step */
    size_t longest;
    int thinned;
} metrics_span;

/* judge_metrics - each metric of `ms` judged at `alpha_test` (notes appended to `notes`), as the answer's
 * "metrics" array (a new reference), with what they come to in `span`. */
static json_t *judge_metrics(const compare_req *c, const effect_metrics *ms, double alpha_test, json_t *notes,
                             metrics_span *span)
{
    json_t *metrics = json_array();
    *span = (metrics_span){NOISE_IDENTICAL, INT64_MAX, INT64_MIN, 0, 0};
    for (int i = 0; i < ms->n; i++) {
        noise_verdict v;
        size_t stride = series_stride(c, ms->n, ms->m[i].steps);
        span->thinned |= stride > 1;
        json_array_append_new(metrics, metric_json(c, &ms->m[i], alpha_test, &v, notes, stride));
        span->mv = worse(span->mv, v);
        const effect_metric *m = &ms->m[i];
        if (m->steps) {
            span->lo = m->step[0] < span->lo ? m->step[0] : span->lo;
            span->hi = m->step[m->steps - 1] > span->hi ? m->step[m->steps - 1] : span->hi;
            span->longest = m->steps > span->longest ? m->steps : span->longest;
        }
    }
    return metrics;
}

/* verdict_notes - what can and cannot be concluded from `verdict`: whether BASE is bit-identical, what the
 * verdict means without replicas or with few, whether runs still run. */
static void verdict_notes(const compare_req *c, const effect_base *eb, const char *verdict, noise_verdict mv,
                          int64_t best_step, int best_rank, json_t *notes)
{
    if (eb->first)
        note(notes,
             "BASE's runs are not bit-identical to each other (they part at step %" JSON_INTEGER_FORMAT
             ", rank %" JSON_INTEGER_FORMAT ", record %.200s; cause %s); run %s is the reference.",
             json_integer_value(json_object_get(eb->first, "step")),
             json_integer_value(json_object_get(eb->first, "rank")),
             json_string_value(json_object_get(eb->first, "name")),
             json_string_value(json_object_get(eb->first, "cause")) ?: "unknown", c->ids[0]);
    else if (eb->status && strcmp(eb->status, "match"))
        note(notes, "BASE's twin group is %s, so whether its runs are bit-identical is not established: %.600s",
             eb->status, eb->status_why);
    if (!strcmp(verdict, "identical"))
        note(notes, "CHANGED is bit-identical to BASE on every record of the steps compared: the change has no "
                    "numerical effect here.");
    else if (!c->k)
        note(notes,
             "Without noise replicas this says that CHANGED is not bit-identical to BASE (first at step %" PRId64
             ", rank %d) and how large its differences are, not whether they exceed run-to-run variation: launch "
             "noise replicas (lockstep twin --noise K) and pass them as NOISE.",
             best_step, best_rank);
    else if (mv == NOISE_IDENTICAL)
        note(notes, "CHANGED departs from BASE from step %" PRId64 " (rank %d), but none of the shared metrics moved.",
             best_step, best_rank);
    if (c->k && c->k < 4)
        note(notes,
             "With %d noise replicas the threshold is wide (Student's t with %d degrees of freedom); 4 or more "
             "give a useful band.",
             c->k, c->k - 1);
    for (int i = 0; i < c->n; i++)
        if (c->running[i]) {
            note(notes, "Some runs are still running: the comparison covers the steps recorded so far.");
            break;
        }
}

/* coverage_notes - what the comparison left out: metrics not shared or over the limits, steps past the cut, and
 * curves thinned. */
static void coverage_notes(const effect_metrics *ms, int thinned, json_t *notes)
{
    if (json_array_size(ms->unshared)) {
        char *names = json_dumps(ms->unshared, JSON_COMPACT);
        note(notes, "Not compared, recorded by some runs only: %.900s.", names);
        free(names);
    }
    if (ms->more)
        note(notes, "%d more shared metrics are not compared (the first %d by name are).", ms->more,
             EFFECT_MAX_METRICS);
    if (ms->names_dropped)
        note(notes, "A run records more than %d metric names on this rank: %d are not read (the first %d by name are).",
             COMPARE_MAX_NAMES, ms->names_dropped, COMPARE_MAX_NAMES);
    if (ms->cut)
        note(notes,
             "The metrics are compared over steps up to %" PRId64
             " only: one comparison reads at most %d metric points "
             "and %d scalar records, all runs together. The rest: the same request with from=%" PRId64
             " (lockstep compare --from %" PRId64 ").",
             ms->next_from - 1, COMPARE_MAX_POINTS, COMPARE_MAX_DECODED, ms->next_from, ms->next_from);
    if (thinned)
        note(notes, "The curves show every n-th step (series.stride) to keep the answer small; the verdicts use every "
                    "step.");
}

/* base_json - the answer's "base": BASE's runs, its reference run, and whether they are bit-identical: for one
 * twin group, as its status says (match: yes; a divergence: no; else not known). A new reference. */
static json_t *base_json(const compare_req *c, const effect_base *eb)
{
    json_t *base = set_json(&c->base);
    json_object_set_new(base, "reference_run", json_string(c->ids[0]));
    json_t *ident = c->base.n < 2                                 ? json_null()
                    : eb->first                                   ? json_false()
                    : !eb->status || !strcmp(eb->status, "match") ? json_true()
                                                                  : json_null();
    json_object_set_new(base, "identical", ident);
    json_object_set_new(base, "status", eb->status ? json_string(eb->status) : json_null());
    json_object_set_new(base, "status_why", eb->status ? json_string(eb->status_why) : json_null());
    json_object_set_new(base, "first_divergence", eb->first ? json_incref(eb->first) : json_null());
    /* BASE's twin group (its first run's): the collectives whose inputs differed while their outputs matched */
    json_t *absorbed = NULL;
    char err[256];
    if (c->base.n >= 2 && c->base.groups[0][0] && absorbed_load(c->base.groups[0], &absorbed, err, sizeof(err)) == 0)
        json_object_set_new(base, "absorbed", absorbed);
    return base;
}

/* compare_run - the comparison `arg` (a parsed compare_req) answered on `req`: on a slow thread
 * (server/http/slow.h), since it reads and judges many runs. */
static enum MHD_Result compare_run(http_req *req, void *arg)
{
    compare_req *c = arg;
    enum MHD_Result sent = MHD_YES;
    json_t *notes = json_array(), *firsts = json_array(), *first = NULL;
    effect_base eb = {0};
    effect_metrics ms;
    effect_fail f;
    memset(&ms, 0, sizeof(ms));

    /* Where each changed run first departs from BASE; and BASE itself. */
    int64_t best_step = 0;
    int best_rank = 0;
    if (first_effects(c, firsts, &first, &best_step, &best_rank, &f) < 0 || effect_base_departs(&c->base, &eb, &f) < 0)
        goto out_fail;

    /* The metrics, aligned; the verdicts. */
    if (effect_metrics_load(c->n, c->keys, c->ids, c->roles, c->running, (int)c->rank, c->from, c->to, &ms, &f) < 0)
        goto out_fail;
    int tests = ms.n * distinct_changed(c, &ms);
    if (tests < 1)
        tests = 1;
    double alpha_test = c->alpha / tests;
    metrics_span span;
    json_t *metrics = judge_metrics(c, &ms, alpha_test, notes, &span);
    noise_verdict mv = span.mv;
    /* Overall: identical when no record differs; without replicas, differs; else the heaviest metric verdict
     * (a change that touches records but no shared metric is within-noise). */
    const char *verdict = json_is_null(first) && mv == NOISE_IDENTICAL ? "identical"
                          : !c->k                                      ? "differs"
                          : mv == NOISE_BEYOND                         ? "beyond-noise"
                          : mv == NOISE_UNDETERMINED                   ? "undetermined"
                                                                       : "within-noise";
    verdict_notes(c, &eb, verdict, mv, best_step, best_rank, notes);
    coverage_notes(&ms, span.thinned, notes);

    int running = 0;
    for (int i = 0; i < c->n; i++)
        running |= c->running[i];
    int64_t lo = span.lo, hi = span.hi;
    json_t *o = json_pack("{s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:I, s:s, s:o, s:o, s:o, s:o}", "base",
                          base_json(c, &eb), "changed", set_json(&c->changed), "noise",
                          c->k ? set_json(&c->noise) : json_null(), "rank", (json_int_t)c->rank, "from",
                          lo <= hi ? json_integer(lo) : json_null(), "to", lo <= hi ? json_integer(hi) : json_null(),
                          "rule", rule_json(c, tests, alpha_test), "steps", (json_int_t)span.longest, "verdict",
                          verdict, "first_effect", first, "first_effects", firsts, "metrics", metrics, "notes", notes);
    json_object_set_new(o, "running", json_boolean(running));
    json_object_set_new(o, "cut", json_boolean(ms.cut));
    json_object_set_new(o, "next_from", ms.cut ? json_integer((json_int_t)ms.next_from) : json_null());
    first = firsts = notes = NULL;
    sent = http_reply_json(req, 200, o);
    goto out;
out_fail:
    sent = reply_fail(req, &f);
out:
    effect_metrics_free(&ms);
    json_decref(eb.first);
    json_decref(first);
    json_decref(firsts);
    json_decref(notes);
    return sent;
}

/* read_compare - GET /api/v1/compare: its arguments checked here (who reads, which runs: quick lookups), the
 * comparison itself on a slow thread, so that no HTTP thread computes one (at most COMPARE_WORKERS at once, each
 * within the budgets of server/core/limits.h; others wait their turn). */
static enum MHD_Result read_compare(http_req *req, char **args)
{
    (void)args;
    compare_req *c = xcalloc(1, sizeof(*c));
    if (parse_args(req, c) < 0) {
        free(c);
        return MHD_YES;
    }
    if (http_defer_slow(req, compare_run, free, c) == 0)
        return MHD_YES;
    enum MHD_Result sent = compare_run(req, c); /* the slow threads are stopping: answered here */
    free(c);
    return sent;
}

/* read_compare_records - GET /api/v1/compare/records?base=RUN&changed=RUN&rank=R&step=S: the two runs' records
 * at one step and rank, side by side (the first effect's records on the compare page). */
static enum MHD_Result read_compare_records(http_req *req, char **args)
{
    (void)args;
    long long rank, step, limit, offset;
    if (api_int_arg(req, "rank", 0, INT32_MAX, 0, &rank) < 0 ||
        api_int_arg(req, "step", INT64_MIN, INT64_MAX, 0, &step) < 0 ||
        api_page(req, 10000, 100000, NULL, 0, &limit, &offset) < 0)
        return MHD_YES;
    const char *b = http_query(req, "base"), *ch = http_query(req, "changed");
    if (!b || !ch || !http_query(req, "step"))
        return http_reply_error(req, 400, "missing argument", "?base=RUN&changed=RUN&step=S (and ?rank=R) are needed",
                                "e.g. /api/v1/compare/records?base=ID&changed=ID&rank=0&step=2");
    group_viewer user;
    if (group_reader(req, &user) < 0)
        return MHD_YES;
    run_info rb, rc;
    if (api_run_find(req, b, &rb, "BASE is a run id here") < 0 ||
        api_run_find(req, ch, &rc, "CHANGED is a run id here") < 0)
        return MHD_YES;
    const char *ids[] = {rb.run_id, rc.run_id};
    if (!group_runs_readable(req, &user, ids, 2))
        return MHD_YES;
    char keys[64];
    snprintf(keys, sizeof(keys), "{%" PRId64 ",%" PRId64 "}", rb.key, rc.key);
    group_runs g;
    enum MHD_Result sent;
    if (!group_open_runs(req, keys, &g, &sent))
        return sent;
    return api_records_side_by_side(req, &g, rank, step, limit, offset,
                                    json_pack("{s:s, s:s}", "base", rb.run_id, "changed", rc.run_id));
}

static const route ROUTES[] = {
    {"GET", "/api/v1/compare", MR_READ, AUTH_SELF, read_compare},
    {"GET", "/api/v1/compare/records", MR_READ, AUTH_SELF, read_compare_records},
};

void api_effect_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
