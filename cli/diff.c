/* diff.c - compare two runs' traces: per rank the first divergence, overall the first step.
 *
 * Each rank's first divergence is the one rule lockstepd applies (common/first.h), step by step: records matched
 * on (step, name, occurrence), judged by common/recmatch.h, the first diverging record by its place in the step.
 *
 * Entries of state blocks (ls_state_begin) take no part in that: a restored
 * block is paired with the other run's saved block of its step (or its
 * records of that step) by rec_restore_check, and a difference there comes
 * before every step after the block's.
 */
#include "cli/diff.h"

#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/first.h"
#include "common/recmatch.h"

const char *diff_kind_name(diff_kind k)
{
    static const char *const names[] = {"match", "content", "dtype",  "shape",   "missing",
                                        "extra", "only-a",  "only-b", "restore", "scales"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
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
            if (rec_in_steps(&run->ranks[i].recs[k]))
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

/* The steps both runs hold from `lo` on (sa := sa ∩ sb, steps before lo dropped). */
static void intersect(step_set *sa, const step_set *sb, int64_t lo)
{
    size_t u = 0;
    for (size_t i = 0; i < sa->n; i++)
        if (sa->v[i] >= lo && has_step(sb, sa->v[i]))
            sa->v[u++] = sa->v[i];
    sa->n = u;
}

/* run_start - where `run` is compared from (common/recmatch.h's rec_resume_start, the rule lockstepd applies): the
 * step after its earliest restored state block, unless it has step records before that step; else 0. */
static int64_t run_start(const td_run *run)
{
    int64_t restored = -1;
    for (size_t i = 0; i < run->n_ranks; i++)
        for (size_t k = 0; k < run->ranks[i].n; k++) {
            const rec_record *r = &run->ranks[i].recs[k];
            if ((r->flags & REC_STATE_MASK) == REC_STATE_RESTORED && (restored < 0 || r->step < restored))
                restored = r->step;
        }
    int before = 0;
    for (size_t i = 0; i < run->n_ranks && restored >= 0 && !before; i++)
        for (size_t k = 0; k < run->ranks[i].n && !before; k++)
            before = rec_in_steps(&run->ranks[i].recs[k]) && run->ranks[i].recs[k].step < restored;
    return rec_resume_start(0, restored, before);
}

static int64_t first_differing_chunk(const rec_record *a, const rec_record *b)
{
    if (!a->n_chunks || a->n_chunks != b->n_chunks || rec_chunk_bytes(a) != rec_chunk_bytes(b))
        return -1;
    for (uint32_t i = 0; i < a->n_chunks; i++)
        if (a->chunks[i] != b->chunks[i])
            return i;
    return -1;
}

/* by_step_seq - records by step, then seq. */
static int by_step_seq(const void *pa, const void *pb)
{
    const rec_record *a = *(const rec_record *const *)pa, *b = *(const rec_record *const *)pb;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return a < b ? -1 : a > b; /* a trace's own order */
}

/* kept_steps - the step records of `r` whose step is kept, ordered by step, then seq (a new array of *n pointers
 * into `r`; NULL when out of memory). */
static const rec_record **kept_steps(const td_rank *r, const step_set *keep, size_t *n)
{
    const rec_record **v = malloc((r->n + 1) * sizeof(*v));
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < r->n; i++)
        if (rec_in_steps(&r->recs[i]) && (!keep || has_step(keep, r->recs[i].step)))
            v[(*n)++] = &r->recs[i];
    qsort(v, *n, sizeof(*v), by_step_seq);
    return v;
}

/* set_verdict - a rank's verdict from the rule's first divergence of one step (run 0 is A, 1 is B). */
static void set_verdict(const first_div *f, const rec_record *const *va, const rec_record *const *vb, diff_rank *out)
{
    static const diff_kind kinds[] = {[REC_SAME] = DIFF_MATCH,
                                      [REC_DIFF_DTYPE] = DIFF_DTYPE,
                                      [REC_DIFF_SHAPE] = DIFF_SHAPE,
                                      [REC_DIFF_CONTENT] = DIFF_CONTENT,
                                      [REC_DIFF_SCALES] = DIFF_SCALES};
    const rec_record *a = f->by_run[0] ? va[f->by_run[0]->row] : NULL, *b = f->by_run[1] ? vb[f->by_run[1]->row] : NULL;
    out->kind = a && b ? kinds[rec_compare(a, b)] : a ? DIFF_MISSING : DIFF_EXTRA;
    out->step = f->step;
    out->a = a;
    out->b = b;
    if (out->kind == DIFF_CONTENT || out->kind == DIFF_SCALES) {
        out->first_chunk = first_differing_chunk(a, b);
        if ((a->flags & REC_HAS_VALUE) && (b->flags & REC_HAS_VALUE)) {
            out->has_ulp = 1;
            out->ulp = dtype_ulp_distance(a->dtype, a->value, b->value);
        }
    }
}

/* compare_rank - rank `ra`/`rb`'s first divergence into `out`: the first-divergence rule (common/first.h) over
 * each step both runs' traces hold, in step order, until one diverges. Returns 0, or -1 when out of memory. */
static int compare_rank(const td_rank *ra, const td_rank *rb, const step_set *keep, diff_rank *out)
{
    size_t na, nb, i = 0, k = 0, cap = 0;
    const rec_record **va = kept_steps(ra, keep, &na), **vb = kept_steps(rb, keep, &nb);
    first_rec *step = NULL; /* one step's records of both runs at a time */
    int rc = -1;
    if (!va || !vb)
        goto out_free;
    out->compared += na;
    while (i < na || k < nb) {
        int64_t s = i < na && (k >= nb || va[i]->step <= vb[k]->step) ? va[i]->step : vb[k]->step;
        size_t ea = i, eb = k, n = 0;
        while (ea < na && va[ea]->step == s)
            ea++;
        while (eb < nb && vb[eb]->step == s)
            eb++;
        if (ea - i + eb - k > cap) {
            cap = 2 * (ea - i + eb - k);
            free(step);
            if (!(step = malloc(cap * sizeof(*step))))
                goto out_free;
        }
        for (; i < ea; i++)
            step[n++] = (first_rec){.run = 0, .rec = *va[i], .row = (int)i};
        for (; k < eb; k++)
            step[n++] = (first_rec){.run = 1, .rec = *vb[k], .row = (int)k};
        first_div f;
        first_find(step, n, 2, &f);
        if (f.found) {
            set_verdict(&f, va, vb, out);
            break;
        }
    }
    rc = 0;
out_free:
    free(va);
    free(vb);
    free(step);
    return rc;
}

/* first_kept - the first record of `r` whose step is kept, or NULL. */
static const rec_record *first_kept(const td_rank *r, const step_set *keep)
{
    for (size_t i = 0; i < r->n; i++)
        if (rec_in_steps(&r->recs[i]) && (!keep || has_step(keep, r->recs[i].step)))
            return &r->recs[i];
    return NULL;
}

/* block_of - the entries of `r` with state flag `flag` at `step` (into out[], at most r->n), in record order. */
static size_t block_of(const td_rank *r, int flag, int64_t step, const rec_record **out)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if ((r->recs[i].flags & REC_STATE_MASK) == flag && r->recs[i].step == step)
            out[n++] = &r->recs[i];
    return n;
}

/* step_records - the step records of `r` at `step`, in record order. */
static size_t step_records(const td_rank *r, int64_t step, const rec_record **out)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (rec_in_steps(&r->recs[i]) && r->recs[i].step == step)
            out[n++] = &r->recs[i];
    return n;
}

/* check_restores - every restored block of `mine` (side `side`: 0 A, 1 B) against `other`; the earliest
 * difference goes into `best` when it precedes what `best` holds. Returns 0, or -1 when out of memory. */
static int check_restores(const td_rank *mine, const td_rank *other, int side, diff_rank *d, diff_rank *best,
                          int *found)
{
    const rec_record **blk = malloc((mine->n + 1) * sizeof(*blk)), **ref = malloc((other->n + 1) * sizeof(*ref));
    int rc = -1;
    if (!blk || !ref)
        goto out_free;
    int64_t last = INT64_MIN;
    int have_last = 0;
    for (size_t i = 0; i < mine->n; i++) {
        const rec_record *e = &mine->recs[i];
        if (!(e->flags & REC_STATE_RESTORED) || (have_last && e->step == last))
            continue;
        int64_t k = e->step;
        int seen = 0; /* a block of this step was checked already (its entries need not be contiguous) */
        for (size_t j = 0; j < i && !seen; j++)
            seen = (mine->recs[j].flags & REC_STATE_RESTORED) && mine->recs[j].step == k;
        last = k;
        have_last = 1;
        if (seen)
            continue;
        size_t n = block_of(mine, REC_STATE_RESTORED, k, blk);
        size_t m = block_of(other, REC_STATE_SAVED, k, ref);
        int saved = m > 0;
        if (!saved)
            m = step_records(other, k, ref);
        rec_restore_result v;
        if (rec_restore_check(blk, n, ref, m, saved, &v) < 0)
            goto out_free;
        d->restores++;
        d->restore_compared += v.compared;
        if (v.status == REC_RESTORE_SAME)
            d->restores_same++;
        else if (v.status == REC_RESTORE_UNVERIFIED)
            d->restores_unverified++;
        else if (!*found || k < best->step) {
            *found = 1;
            best->kind = DIFF_RESTORE;
            best->step = k;
            best->restored_by = side;
            best->restore = v;
            best->restore_ref_saved = saved;
            best->a = side == 0 ? v.restored : v.ref;
            best->b = side == 0 ? v.ref : v.restored;
        }
    }
    rc = 0;
out_free:
    free(blk);
    free(ref);
    return rc;
}

/* compare_restores - the restore checks of one rank; a difference becomes the rank's result when no step
 * at or before its block's step diverged. */
static int compare_restores(const td_rank *ra, const td_rank *rb, diff_rank *d)
{
    diff_rank best;
    memset(&best, 0, sizeof(best));
    int found = 0;
    if (check_restores(ra, rb, 0, d, &best, &found) < 0 || check_restores(rb, ra, 1, d, &best, &found) < 0)
        return -1;
    if (found && (d->kind == DIFF_MATCH || best.step < d->step)) {
        d->kind = DIFF_RESTORE;
        d->step = best.step;
        d->a = best.a;
        d->b = best.b;
        d->restored_by = best.restored_by;
        d->restore = best.restore;
        d->restore_ref_saved = best.restore_ref_saved;
        d->first_chunk = -1;
        d->has_ulp = 0;
        if (d->a && d->b && best.restore.status == REC_RESTORE_DIFFERS) {
            d->first_chunk = first_differing_chunk(d->a, d->b);
            if ((d->a->flags & REC_HAS_VALUE) && (d->b->flags & REC_HAS_VALUE)) {
                d->has_ulp = 1;
                d->ulp = dtype_ulp_distance(d->a->dtype, d->a->value, d->b->value);
            }
        }
    }
    return 0;
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
        int64_t sa0 = run_start(a), sb0 = run_start(b);
        intersect(&sa, &sb, sa0 > sb0 ? sa0 : sb0);
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
            if (compare_rank(ra, rb, keep, d) < 0 || compare_restores(ra, rb, d) < 0)
                goto out_free;
            i++;
            k++;
        }
        out->compared += d->compared + d->restore_compared; /* restored state entries checked count too */
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
    free(r->comm_ranks);
    r->ranks = NULL;
    r->cause_ranks = NULL;
    r->comm_ranks = NULL;
    r->n_ranks = 0;
}

const diff_rank *diff_rank_of(const diff_result *res, uint32_t rank)
{
    for (size_t i = 0; i < res->n_ranks; i++)
        if (res->ranks[i].rank == rank)
            return &res->ranks[i];
    return NULL;
}

int diff_cause(diff_result *res, int configuration, int logical)
{
    free(res->cause_ranks);
    free(res->comm_ranks);
    res->cause_ranks = calloc(res->n_ranks + 1, sizeof(cause_rank));
    res->comm_ranks = calloc((res->n_ranks + 1) * REC_COMM_LIST_MAX, sizeof(uint32_t));
    if (!res->cause_ranks || !res->comm_ranks)
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
        c->restore = d->kind == DIFF_RESTORE;
        c->logical = logical;
        c->missing = !c->restore && (!d->a || !d->b);
        if (d->a && d->b && !c->restore) {
            const uint64_t *lists[2] = {d->a->inputs, d->b->inputs};
            int counts[2] = {d->a->n_inputs, d->b->n_inputs};
            c->inputs = cause_inputs_of(lists, counts, 2);
        }
        if (r) { /* the collective's communicator: its comm field, else the size its shape states */
            rec_ext x;
            rec_ext_of(r, &x);
            c->comm_size = x.has_comm ? (int)x.comm_size : cause_comm_size(r->name, r->name_len, r->ndim, r->shape);
            if (x.has_comm && x.comm_nlisted == x.comm_size) {
                uint32_t *w = res->comm_ranks + (n - 1) * REC_COMM_LIST_MAX;
                memcpy(w, x.comm_ranks, x.comm_nlisted * sizeof(uint32_t));
                c->comm_ranks = w;
                c->comm_nlisted = (int)x.comm_nlisted;
            }
        }
    }
    cause_facts f = {res->cause_ranks, n, (int)res->n_ranks, configuration};
    cause_judge(&f, &res->cause);
    return 0;
}
