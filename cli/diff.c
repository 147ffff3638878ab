/* diff.c - compare two runs' traces: per rank the first divergence, overall the first step.
 *
 * Records are matched on (step, name, occurrence) and judged by the one rule
 * every program uses (common/recmatch.h). Up to a rank's first
 * divergence both runs hold the same records in the same order, so the
 * earliest candidate, ordered by (step, position within the step), is the
 * first divergence: the first record of A that B lacks or holds differently,
 * or the first record of B that A lacks, whichever comes first.
 */
#include "cli/diff.h"

#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/recmatch.h"

const char *diff_kind_name(diff_kind k)
{
    static const char *const names[] = {"match", "content", "dtype", "shape", "missing", "extra", "only-a", "only-b"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static uint64_t key_hash(const rec_record *r)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)r->step * 0x9e3779b97f4a7c15ULL ^ r->occurrence;
    for (unsigned i = 0; i < r->name_len; i++)
        h = (h ^ (unsigned char)r->name[i]) * 0x100000001b3ULL;
    return h ^ (h >> 31);
}

static int same_key(const rec_record *x, const rec_record *y)
{
    return x->step == y->step && x->occurrence == y->occurrence && x->name_len == y->name_len &&
           memcmp(x->name, y->name, x->name_len) == 0;
}

/* A set of steps, for --overlap. */
typedef struct step_set {
    int64_t *v;
    size_t n;
} step_set;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int steps_of(const td_run *run, step_set *s)
{
    s->v = malloc((run->n_records + 1) * sizeof(int64_t));
    if (!s->v)
        return -1;
    s->n = 0;
    for (size_t i = 0; i < run->n_ranks; i++)
        for (size_t k = 0; k < run->ranks[i].n; k++)
            s->v[s->n++] = run->ranks[i].recs[k].step;
    qsort(s->v, s->n, sizeof(int64_t), cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < s->n; i++)
        if (u == 0 || s->v[u - 1] != s->v[i])
            s->v[u++] = s->v[i];
    s->n = u;
    return 0;
}

static int has_step(const step_set *s, int64_t step)
{
    return bsearch(&step, s->v, s->n, sizeof(int64_t), cmp_i64) != NULL;
}

/* The steps both runs hold (sa := sa ∩ sb). */
static void intersect(step_set *sa, const step_set *sb)
{
    size_t u = 0;
    for (size_t i = 0; i < sa->n; i++)
        if (has_step(sb, sa->v[i]))
            sa->v[u++] = sa->v[i];
    sa->n = u;
}

/* Position of a record in the divergence order. */
typedef struct pos {
    int64_t step;
    size_t idx; /* index within its step in its own run */
} pos;

static int pos_before(pos x, pos y)
{
    return x.step < y.step || (x.step == y.step && x.idx < y.idx);
}

static int64_t first_differing_chunk(const rec_record *a, const rec_record *b)
{
    if (!a->n_chunks || a->n_chunks != b->n_chunks)
        return -1;
    for (uint32_t i = 0; i < a->n_chunks; i++)
        if (a->chunks[i] != b->chunks[i])
            return i;
    return -1;
}

/* compare_rank - find rank `ra`/`rb`'s first divergence into `out`. */
static int compare_rank(const td_rank *ra, const td_rank *rb, const step_set *keep, diff_rank *out)
{
    size_t cap = 16;
    while (cap < 2 * rb->n)
        cap *= 2;
    uint32_t *table = calloc(cap, sizeof(uint32_t)); /* index+1 into rb->recs */
    unsigned char *matched = calloc(rb->n ? rb->n : 1, 1);
    if (!table || !matched) {
        free(table);
        free(matched);
        return -1;
    }
    for (size_t i = 0; i < rb->n; i++) {
        const rec_record *r = &rb->recs[i];
        if (keep && !has_step(keep, r->step))
            continue;
        size_t h = key_hash(r) & (cap - 1);
        while (table[h]) {
            if (same_key(&rb->recs[table[h] - 1], r))
                break; /* a duplicate key in B: the first one stands */
            h = (h + 1) & (cap - 1);
        }
        if (!table[h])
            table[h] = (uint32_t)i + 1;
    }

    int found_a = 0;
    pos pa = {0, 0};
    diff_rank cand = *out;
    int64_t cur = INT64_MIN;
    size_t idx = 0;
    for (size_t i = 0; i < ra->n; i++) {
        const rec_record *r = &ra->recs[i];
        if (keep && !has_step(keep, r->step))
            continue;
        if (r->step != cur) {
            cur = r->step;
            idx = 0;
        }
        out->compared++;
        size_t h = key_hash(r) & (cap - 1);
        const rec_record *m = NULL;
        while (table[h]) {
            if (same_key(&rb->recs[table[h] - 1], r)) {
                m = &rb->recs[table[h] - 1];
                matched[table[h] - 1] = 1;
                break;
            }
            h = (h + 1) & (cap - 1);
        }
        if (!found_a) {
            static const diff_kind kinds[] = {[REC_SAME] = DIFF_MATCH, [REC_DIFF_DTYPE] = DIFF_DTYPE,
                                              [REC_DIFF_SHAPE] = DIFF_SHAPE, [REC_DIFF_CONTENT] = DIFF_CONTENT};
            diff_kind k = m ? kinds[rec_compare(r, m)] : DIFF_MISSING;
            if (k != DIFF_MATCH) {
                found_a = 1;
                pa = (pos){r->step, idx};
                cand.kind = k;
                cand.step = r->step;
                cand.a = r;
                cand.b = m;
            }
        }
        idx++;
    }

    /* The first record of B that A lacks. */
    cur = INT64_MIN;
    idx = 0;
    for (size_t i = 0; i < rb->n; i++) {
        const rec_record *r = &rb->recs[i];
        if (keep && !has_step(keep, r->step))
            continue;
        if (r->step != cur) {
            cur = r->step;
            idx = 0;
        }
        if (!matched[i]) {
            pos pb = {r->step, idx};
            if (!found_a || pos_before(pb, pa)) {
                found_a = 1;
                cand.kind = DIFF_EXTRA;
                cand.step = r->step;
                cand.a = NULL;
                cand.b = r;
            }
            break;
        }
        idx++;
    }
    free(table);
    free(matched);

    if (found_a) {
        size_t compared = out->compared;
        *out = cand;
        out->compared = compared;
        if (cand.kind == DIFF_CONTENT) {
            out->first_chunk = first_differing_chunk(cand.a, cand.b);
            if ((cand.a->flags & REC_HAS_VALUE) && (cand.b->flags & REC_HAS_VALUE)) {
                out->has_ulp = 1;
                out->ulp = dtype_ulp_distance(cand.a->dtype, cand.a->value, cand.b->value);
            }
        }
    }
    return 0;
}

/* first_kept - the first record of `r` whose step is kept, or NULL. */
static const rec_record *first_kept(const td_rank *r, const step_set *keep)
{
    for (size_t i = 0; i < r->n; i++)
        if (!keep || has_step(keep, r->recs[i].step))
            return &r->recs[i];
    return NULL;
}

int diff_runs(const td_run *a, const td_run *b, int overlap, diff_result *out)
{
    step_set sa = {0}, sb = {0};
    int rc = -1;

    memset(out, 0, sizeof(*out));
    out->first_step = INT64_MAX;
    out->overlap = overlap;
    out->ranks = calloc(a->n_ranks + b->n_ranks + 1, sizeof(diff_rank));
    if (!out->ranks)
        return -1;
    if (overlap) {
        if (steps_of(a, &sa) < 0 || steps_of(b, &sb) < 0)
            goto out_free;
        intersect(&sa, &sb);
        out->overlap_lo = sa.n ? sa.v[0] : 0;
        out->overlap_hi = sa.n ? sa.v[sa.n - 1] : -1;
    }
    const step_set *keep = overlap ? &sa : NULL;

    size_t i = 0, k = 0;
    while (i < a->n_ranks || k < b->n_ranks) {
        const td_rank *ra = i < a->n_ranks ? &a->ranks[i] : NULL;
        const td_rank *rb = k < b->n_ranks ? &b->ranks[k] : NULL;
        diff_rank *d = &out->ranks[out->n_ranks++];
        d->first_chunk = -1;
        if (ra && (!rb || ra->hdr.rank < rb->hdr.rank)) {
            const rec_record *f = first_kept(ra, keep);
            d->rank = ra->hdr.rank;
            d->kind = DIFF_ONLY_A;
            d->step = f ? f->step : 0;
            d->a = f;
            i++;
        } else if (rb && (!ra || rb->hdr.rank < ra->hdr.rank)) {
            const rec_record *f = first_kept(rb, keep);
            d->rank = rb->hdr.rank;
            d->kind = DIFF_ONLY_B;
            d->step = f ? f->step : 0;
            d->b = f;
            k++;
        } else {
            d->rank = ra->hdr.rank;
            if (compare_rank(ra, rb, keep, d) < 0)
                goto out_free;
            i++;
            k++;
        }
        out->compared += d->compared;
        if (d->kind != DIFF_MATCH) {
            out->diverged = 1;
            if (d->step < out->first_step)
                out->first_step = d->step;
        }
    }
    rc = 0;

out_free:
    free(sa.v);
    free(sb.v);
    if (rc < 0)
        diff_release(out);
    return rc;
}

void diff_release(diff_result *r)
{
    free(r->ranks);
    free(r->cause_ranks);
    r->ranks = NULL;
    r->cause_ranks = NULL;
    r->n_ranks = 0;
}

const diff_rank *diff_rank_of(const diff_result *res, uint32_t rank)
{
    for (size_t i = 0; i < res->n_ranks; i++)
        if (res->ranks[i].rank == rank)
            return &res->ranks[i];
    return NULL;
}

int diff_cause(diff_result *res, int configuration)
{
    free(res->cause_ranks);
    res->cause_ranks = calloc(res->n_ranks + 1, sizeof(cause_rank));
    if (!res->cause_ranks)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < res->n_ranks; i++) {
        const diff_rank *d = &res->ranks[i];
        if (d->kind == DIFF_MATCH)
            continue;
        const rec_record *r = d->a ? d->a : d->b;
        cause_rank *c = &res->cause_ranks[n++];
        c->rank = (int)d->rank;
        c->step = d->step;
        c->seq = r ? (int64_t)r->seq : 0;
        c->name = r ? r->name : "";
        c->name_len = r ? r->name_len : 0;
        c->occurrence = r ? r->occurrence : 0;
        c->missing = !d->a || !d->b;
        if (d->a && d->b) {
            const uint64_t *lists[2] = {d->a->inputs, d->b->inputs};
            int counts[2] = {d->a->n_inputs, d->b->n_inputs};
            c->inputs = cause_inputs_of(lists, counts, 2);
        }
    }
    cause_facts f = {res->cause_ranks, n, (int)res->n_ranks, configuration};
    cause_judge(&f, &res->cause);
    return 0;
}
