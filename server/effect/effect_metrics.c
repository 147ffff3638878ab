/* effect_metrics.c - the scalar metrics GET /api/v1/compare judges, read chunk by chunk within a budget: the steps are
 * cut where it ends. */
#include "server/effect/effect_metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/recmatch.h"
#include "server/effect/effect_data.h"
#include "server/core/limits.h"
#include "server/core/xalloc.h"
#include "server/store/frames.h"

/* One metric of one run as its points stream in: steps and raw bits in step order (a step recorded twice keeps
 * its first record, as occurrence 0 of one run cannot otherwise be). */
typedef struct name_pts {
    char *name;
    size_t name_len;
    int dtype; /* its first point's */
    int64_t *step;
    uint64_t *bits;
    size_t n, cap;
} name_pts;

/* One run's metrics: at most COMPARE_MAX_NAMES, the first by name (bytewise), sorted. */
typedef struct run_pts {
    name_pts *v;
    int n;
    int dropped; /* names past the first COMPARE_MAX_NAMES, not read */
} run_pts;

/* names_cmp - two record names' order (bytewise, a prefix first). */
static int names_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* a metric's point: a scalar of the metric level (the series' other points are ops' and modules' scalars) */
static int metric_point(const rec_record *r)
{
    return r->level == 0 && r->occurrence == 0 && (r->flags & REC_HAS_VALUE) && rec_in_steps(r);
}

static void name_free(name_pts *p)
{
    free(p->name);
    free(p->step);
    free(p->bits);
}

static void run_release(run_pts *rp)
{
    for (int i = 0; i < rp->n; i++)
        name_free(&rp->v[i]);
    free(rp->v);
    memset(rp, 0, sizeof(*rp));
}

/* name_of - the entry of `r`'s name in `rp`, added when new and among the first COMPARE_MAX_NAMES by name (a
 * later name by name is counted as dropped; an earlier one takes the last one's place). NULL when dropped. */
static name_pts *name_of(run_pts *rp, const rec_record *r)
{
    int lo = 0, hi = rp->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2, c = names_cmp(rp->v[mid].name, rp->v[mid].name_len, r->name, r->name_len);
        if (c == 0)
            return &rp->v[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (rp->n == COMPARE_MAX_NAMES) {
        rp->dropped++;
        if (lo == rp->n)
            return NULL;
        name_free(&rp->v[--rp->n]); /* the last by name makes room */
    }
    if (!rp->v)
        rp->v = xcalloc(COMPARE_MAX_NAMES, sizeof(*rp->v));
    memmove(rp->v + lo + 1, rp->v + lo, (size_t)(rp->n - lo) * sizeof(*rp->v));
    name_pts *p = &rp->v[lo];
    *p = (name_pts){.name = xmalloc(r->name_len + 1), .name_len = r->name_len, .dtype = r->dtype};
    memcpy(p->name, r->name, r->name_len);
    p->name[r->name_len] = 0;
    rp->n++;
    return p;
}

/* add_point - keep metric point `r`; returns 1 when it was kept (a new step of its name), else 0. */
static int add_point(run_pts *rp, const rec_record *r)
{
    name_pts *p = name_of(rp, r);
    if (!p || (p->n && p->step[p->n - 1] == r->step))
        return 0;
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->step = xrealloc(p->step, p->cap * sizeof(*p->step));
        p->bits = xrealloc(p->bits, p->cap * sizeof(*p->bits));
    }
    p->step[p->n] = r->step;
    p->bits[p->n++] = r->value;
    return 1;
}

/* trim_after - drop every point after step `last`. */
static void trim_after(run_pts *rp, int64_t last)
{
    for (int i = 0; i < rp->n; i++)
        while (rp->v[i].n && rp->v[i].step[rp->v[i].n - 1] > last)
            rp->v[i].n--;
}

/* What reading one run found. */
typedef struct read_state {
    int64_t to;  /* the last step to read: lowered to the last whole step when a budget ends */
    int cut;     /* 1 when a budget ended the read before `to` */
    int too_big; /* 1 when the first step alone is past the budget */
    int64_t big_step;
    size_t kept, decoded;
} read_state;

/* read_run - stream the series points of run `key`, rank `rank`, steps from..st->to, keeping its metric points in
 * `rp`, within `keep_max` points kept and `decode_max` decoded: when one runs out, the read stops at the last
 * whole step before (st->to lowered, st->cut set; nothing whole: st->too_big). Returns 0, or -1 or FRAMES_DAMAGED
 * with `err`. */
static int read_run(int64_t key, int rank, int64_t from, size_t keep_max, size_t decode_max, run_pts *rp,
                    read_state *st, char *err, size_t cap)
{
    int64_t cur = from, step = 0, first = 0;
    int have_step = 0;
    for (;;) {
        frame_set set = {0};
        int got = frames_points_next(key, (uint32_t)rank, st->to, &cur, &set, err, cap);
        if (got < 0) {
            frame_set_release(&set);
            return got;
        }
        for (size_t i = 0; i < set.n; i++) {
            const rec_record *r = &set.recs[i];
            if (!have_step || r->step != step) { /* the step before is whole */
                if (!have_step)
                    first = r->step;
                have_step = 1;
                step = r->step;
            }
            st->decoded++;
            if (metric_point(r))
                st->kept += (size_t)add_point(rp, r);
            if (st->kept > keep_max || st->decoded > decode_max) {
                frame_set_release(&set);
                if (step == first) { /* not one whole step fits */
                    st->too_big = 1;
                    st->big_step = step;
                    return 0;
                }
                st->to = step - 1;
                st->cut = 1;
                trim_after(rp, st->to);
                return 0;
            }
        }
        frame_set_release(&set);
        if (got == 0)
            return 0;
    }
}

/* steps_text - "steps 1-100 (100)" of a run's points of one metric, into `out`. */
static void steps_text(const name_pts *p, char *out, size_t cap)
{
    if (!p->n)
        snprintf(out, cap, "no steps");
    else
        snprintf(out, cap, "steps %" PRId64 "-%" PRId64 " (%zu)", p->step[0], p->step[p->n - 1], p->n);
}

/* find_name - the entry of `name` in run `rp`, or NULL. */
static const name_pts *find_name(const run_pts *rp, const char *name, size_t len)
{
    for (int i = 0; i < rp->n; i++)
        if (!names_cmp(rp->v[i].name, rp->v[i].name_len, name, len))
            return &rp->v[i];
    return NULL;
}

/* add_metric - shared metric `b` (BASE's entry) with every run's points (by_run) into out->m. */
static void add_metric(effect_metrics *out, int n, const name_pts *const *by_run)
{
    const name_pts *b = by_run[0];
    effect_metric *m = &out->m[out->n++];
    snprintf(m->name, sizeof(m->name), "%.*s", (int)b->name_len, b->name);
    m->steps = b->n;
    m->step = xmalloc((m->steps + 1) * sizeof(int64_t));
    memcpy(m->step, b->step, m->steps * sizeof(int64_t));
    m->bits = xcalloc((size_t)n, sizeof(uint64_t *));
    m->vals = xcalloc((size_t)n, sizeof(double *));
    m->dtypes = xcalloc((size_t)n, sizeof(int));
    for (int k = 0; k < n; k++) {
        m->bits[k] = xmalloc((m->steps + 1) * sizeof(uint64_t));
        m->vals[k] = xmalloc((m->steps + 1) * sizeof(double));
        m->dtypes[k] = by_run[k]->dtype;
        for (size_t x = 0; x < m->steps; x++) {
            m->bits[k][x] = by_run[k]->bits[x];
            m->vals[k][x] = dtype_value_to_double((unsigned)by_run[k]->dtype, by_run[k]->bits[x]);
        }
    }
    m->dtype = m->dtypes[0];
}

/* build - the metrics every run records, aligned on BASE's steps, into `out` (BASE's names in order: the first
 * EFFECT_MAX_METRICS compared, the rest counted; names some runs lack listed). Returns 0, or -1 with why in `f`
 * (400) when a shared metric covers other steps in some run. */
static int build(effect_fail *f, int n, run_pts *rp, const char *const *names, const char *const *roles,
                 const int *running, int rank, effect_metrics *out)
{
    out->unshared = json_array();
    /* every name of every run, once: BASE's first, then the others' (unshared: listed) */
    for (int k = 0; k < n; k++)
        for (int i = 0; i < rp[k].n; i++) {
            const name_pts *p = &rp[k].v[i];
            int seen = 0;
            for (int j = 0; j < k && !seen; j++)
                seen = find_name(&rp[j], p->name, p->name_len) != NULL;
            if (seen)
                continue;
            const name_pts *by_run[EFFECT_MAX_SET * 3 + 1] = {p};
            int have = 1;
            for (int j = k + 1; j < n; j++)
                have += (by_run[j - k] = find_name(&rp[j], p->name, p->name_len)) != NULL;
            if (k > 0 || have < n) {
                if (json_array_size(out->unshared) < 64)
                    json_array_append_new(out->unshared, json_stringn(p->name, p->name_len));
                continue;
            }
            if (out->n == EFFECT_MAX_METRICS) {
                out->more++;
                continue;
            }
            for (int j = 1; j < n; j++) {
                const name_pts *q = by_run[j];
                if (q->n == p->n && !memcmp(q->step, p->step, p->n * sizeof(int64_t)))
                    continue;
                char sa[96], sb[96], detail[1200];
                steps_text(p, sa, sizeof(sa));
                steps_text(q, sb, sizeof(sb));
                snprintf(detail, sizeof(detail), "metric \"%.*s\" on rank %d: BASE run %s has %s, %s run %s has %s%s",
                         (int)(p->name_len < 200 ? p->name_len : 200), p->name, rank, names[0], sa, roles[j], names[j],
                         sb, running[j] || running[0] ? " (a run is still running)" : "");
                return effect_fail_set(f, 400, "the runs cover different steps", detail,
                                       "compare runs of the same length, wait until they have ended, or compare the "
                                       "steps they share with ?from=&to= (lockstep compare --from A --to B)");
            }
            add_metric(out, n, by_run);
        }
    for (int k = 0; k < n; k++)
        out->names_dropped = rp[k].dropped > out->names_dropped ? rp[k].dropped : out->names_dropped;
    return 0;
}

int effect_metrics_load(int n, const int64_t *keys, const char *const *names, const char *const *roles,
                        const int *running, int rank, int64_t from, int64_t to, effect_metrics *out, effect_fail *f)
{
    memset(out, 0, sizeof(*out));
    out->nruns = n;
    char err[512];
    run_pts *rp = xcalloc((size_t)n, sizeof(*rp));
    read_state st = {.to = to};
    int rc = 0;
    /* Each run in chunks, within its share of the budgets; a run that ends its share cuts the steps for all. */
    for (int k = 0; k < n && rc == 0; k++) {
        st.kept = st.decoded = 0;
        int got = read_run(keys[k], rank, from, COMPARE_MAX_POINTS / (size_t)n, COMPARE_MAX_DECODED / (size_t)n, &rp[k],
                           &st, err, sizeof(err));
        if (got < 0) {
            rc = effect_fail_read(f, got, err);
        } else if (st.too_big) {
            char detail[600];
            snprintf(detail, sizeof(detail),
                     "step %" PRId64 " of %s run %s, rank %d, holds more scalar records than one comparison reads "
                     "(%d metric points or %d scalar records, all runs together)",
                     st.big_step, roles[k], names[k], rank, COMPARE_MAX_POINTS, COMPARE_MAX_DECODED);
            rc = effect_fail_set(f, 413, "too many records in one step", detail,
                                 "compare fewer runs at once, another rank (?rank=), or the steps after it (?from=)");
        }
    }
    if (rc == 0 && st.cut) {
        for (int k = 0; k < n; k++)
            trim_after(&rp[k], st.to);
        out->cut = 1;
        out->next_from = st.to + 1;
    }
    if (rc == 0)
        rc = build(f, n, rp, names, roles, running, rank, out);
    if (rc == 0 && out->n == 0) {
        char detail[700];
        snprintf(detail, sizeof(detail),
                 "rank %d of the runs compared records no scalar metric (level metric, occurrence 0, a value) that "
                 "every run has%s",
                 rank, json_array_size(out->unshared) ? "; some runs record metrics the others lack" : "");
        rc = effect_fail_set(f, 400, "no shared metric", detail,
                             "compare runs of one program: each records its metrics with ls_metric(\"loss\", x) on "
                             "every rank (or choose the rank with ?rank=)");
    }
    for (int k = 0; k < n; k++)
        run_release(&rp[k]);
    free(rp);
    if (rc)
        effect_metrics_free(out);
    return rc;
}

void effect_metrics_free(effect_metrics *ms)
{
    for (int i = 0; i < ms->n; i++) {
        effect_metric *m = &ms->m[i];
        for (int k = 0; k < ms->nruns; k++) {
            free(m->bits ? m->bits[k] : NULL);
            free(m->vals ? m->vals[k] : NULL);
        }
        free(m->bits);
        free(m->vals);
        free(m->dtypes);
        free(m->step);
    }
    json_decref(ms->unshared);
    ms->unshared = NULL;
    ms->n = 0;
}
