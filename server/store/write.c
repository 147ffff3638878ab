/* write.c - the write path of a record batch: one statement, so one transaction (batches row, frames, step digests,
 * rank progress), acknowledged only after COMMIT. */
#include "server/store/write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

#define N_PARAMS 23
#define P_LAST 22  /* f_last: the segments' last steps */
#define P_CONS 18  /* d_cons, then the groups' three arrays (group_lits) */
#define P_FRAMES 9 /* the bytea[] parameter, sent in binary */

void store_write_register(void)
{
    db_register("wanted_steps", "SELECT step FROM record_requests WHERE run_key = $1 AND rank = $2 AND NOT answered "
                                "ORDER BY step LIMIT $3");
    db_register("batch_store", "SELECT lockstep_store_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
                               "$14, $15, $16, $17, $18, $19, $20, $21, $22, $23)");
    db_register("batches_store", "SELECT i, duplicate, want FROM lockstep_store_batches($1, $2, $3, $4, $5, $6, $7, "
                                 "$8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, "
                                 "$24, $25, $26)");
}

typedef store_step step_sum;

static int cmp_step(const void *a, const void *b)
{
    int64_t x = ((const step_sum *)a)->step, y = ((const step_sum *)b)->step;
    return x < y ? -1 : x > y;
}

static void add_term(step_sum **s, size_t *n, size_t *cap, int64_t step, int64_t count, uint64_t term, uint64_t inputs,
                     int unknown)
{
    size_t k = *n;
    if (*n && (*s)[*n - 1].step == step)
        k = *n - 1;
    else
        for (k = 0; k < *n && (*s)[k].step != step; k++)
            ;
    if (k == *n) {
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 16;
            *s = xrealloc(*s, *cap * sizeof(**s));
        }
        (*s)[k] = (step_sum){.step = step};
        (*n)++;
    }
    (*s)[k].n += count;
    (*s)[k].digest ^= term;
    (*s)[k].inputs ^= inputs;
    (*s)[k].inputs_unknown |= unknown;
}

/* sum_steps - the batch's digests per step: its records' terms (common/recmatch.h) and the step digests it
 * carries for records held back, merged, sorted by step. */
static size_t sum_steps(const srv_batch *bt, step_sum **out)
{
    size_t n = 0, cap = 0;
    step_sum *s = NULL;
    for (size_t i = 0; i < bt->n; i++)
        if (rec_in_steps(&bt->recs[i])) /* an entry of a state block is no step record: no digest, no count */
            add_term(&s, &n, &cap, bt->recs[i].step, 1, rec_digest_term(&bt->recs[i]), rec_inputs_term(&bt->recs[i]),
                     0);
    for (size_t i = 0; i < bt->n_digests; i++)
        add_term(&s, &n, &cap, bt->digests[i].step, bt->digests[i].n, bt->digests[i].digest, 0, 1);
    if (n)
        qsort(s, n, sizeof(*s), cmp_step);
    *out = s;
    return n;
}

/* lit_add_or_null - v, or NULL when `null`. */
static void lit_add_or_null(db_lit *l, int64_t v, int null)
{
    if (!null) {
        db_lit_add(l, v);
        return;
    }
    if (l->len + 8 > l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->p = xrealloc(l->p, l->cap);
    }
    l->len += (size_t)sprintf(l->p + l->len, "%cNULL", l->len ? ',' : '{');
}

/* lit_add_ranks - the int[] literal of `n` ranks as one quoted element of a text[] literal. */
static void lit_add_ranks(db_lit *l, const uint32_t *ranks, uint32_t n)
{
    if (l->len + 16 + 11 * (size_t)n > l->cap) {
        while (l->len + 16 + 11 * (size_t)n > l->cap)
            l->cap = l->cap ? 2 * l->cap : 256;
        l->p = xrealloc(l->p, l->cap);
    }
    l->len += (size_t)sprintf(l->p + l->len, "%c\"{", l->len ? ',' : '{');
    for (uint32_t i = 0; i < n; i++)
        l->len += (size_t)sprintf(l->p + l->len, "%s%u", i ? "," : "", ranks[i]);
    l->len += (size_t)sprintf(l->p + l->len, "}\"");
}

/* lit_add_bytes - `n` bytes as one element of a bytea[] literal ("\\x" and their hex). */
static void lit_add_bytes(db_lit *l, const unsigned char *b, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (l->len + 2 * n + 8 > l->cap) {
        while (l->len + 2 * n + 8 > l->cap)
            l->cap = l->cap ? 2 * l->cap : 256;
        l->p = xrealloc(l->p, l->cap);
    }
    l->len += (size_t)sprintf(l->p + l->len, "%c\"\\\\x", l->len ? ',' : '{');
    for (size_t i = 0; i < n; i++) {
        l->p[l->len++] = hex[b[i] >> 4];
        l->p[l->len++] = hex[b[i] & 15];
    }
    l->p[l->len++] = '"';
}

/* step_lits - the batch's step rows into d[0..4] (step, records, digest, inputs digest, consensus digests) and, when
 * `bi` is given, its index `k` beside each: a row per summed step (`steps`, `n_steps`), carrying the batch's
 * consensus digests of that step packed as step_consensus.cons holds them (in the batch's order; NULL when none), then
 * a row of 0 records for each other step the consensus digests name (its step digest comes in another batch). */
static void step_lits(db_lit *d, db_lit *bi, int k, const step_sum *steps, size_t n_steps, const srv_batch *bt)
{
    unsigned char *packed = xmalloc(bt->n_cons * CONS_PACKED + 1);
    for (size_t i = 0; i < n_steps + bt->n_cons; i++) {
        int64_t step = i < n_steps ? steps[i].step : bt->cons[i - n_steps].step;
        int seen = 0;
        for (size_t j = 0; i >= n_steps && j < n_steps && !seen; j++)
            seen = steps[j].step == step;
        for (size_t j = n_steps; j < i && !seen; j++) /* a consensus-only step goes with its first digest */
            seen = bt->cons[j - n_steps].step == step;
        if (seen)
            continue;
        size_t len = 0;
        for (size_t j = 0; j < bt->n_cons; j++)
            if (bt->cons[j].step == step)
                cons_pack(packed + CONS_PACKED * len++, &bt->cons[j]);
        if (bi)
            db_lit_add(bi, k);
        db_lit_add(&d[0], step);
        db_lit_add(&d[1], i < n_steps ? steps[i].n : 0);
        db_lit_add(&d[2], i < n_steps ? (int64_t)steps[i].digest : 0);
        lit_add_or_null(&d[3], i < n_steps ? (int64_t)steps[i].inputs : 0, i < n_steps && steps[i].inputs_unknown);
        if (len)
            lit_add_bytes(&d[4], packed, len * CONS_PACKED);
        else
            lit_add_or_null(&d[4], 0, 1);
    }
    free(packed);
}

/* group_lits - the groups the batch's consensus digests name for the first time into g[0..2] (key, size, ranks: not
 * when lockstepd stored run `run_key`'s group before, cons_comms_known) and, when `bi` is given, `k` beside each. */
static void group_lits(db_lit *g, db_lit *bi, int k, int64_t run_key, const srv_batch *bt)
{
    for (size_t i = 0; i < bt->n_cons; i++) {
        const srv_cons_digest *d = &bt->cons[i];
        int first = !cons_comms_known(run_key, d->key);
        for (size_t j = 0; j < i && first; j++)
            first = bt->cons[j].key != d->key;
        if (!first)
            continue;
        if (bi)
            db_lit_add(bi, k);
        db_lit_add(&g[0], (int64_t)d->key);
        db_lit_add(&g[1], d->size);
        lit_add_ranks(&g[2], d->ranks, d->n_listed);
    }
}

/* The parameters of lockstep_store_batch for one batch. */
typedef struct batch_params {
    char text[N_PARAMS][32];
    db_lit arr[5];
    db_lit groups[3];
    char *seg_arr[FRAMES_SEG_ARRAYS];
    const char *v[N_PARAMS];
    int len[N_PARAMS], fmt[N_PARAMS];
    unsigned char *frames;
} batch_params;

/* What a batch adds to its rank's progress: the steps it covers (its step sums' and its state blocks', whose steps
 * count for progress: restore checks wait on them; 0..0 when none), its newest seq and how many records count. */
typedef struct batch_span {
    int64_t min_step, max_step, count;
    uint64_t max_seq;
} batch_span;

static batch_span span_of(const srv_batch *bt, const step_sum *steps, size_t n_steps)
{
    batch_span sp = {INT64_MAX, INT64_MIN, 0, 0};
    for (size_t i = 0; i < n_steps; i++) {
        sp.min_step = steps[i].step < sp.min_step ? steps[i].step : sp.min_step;
        sp.max_step = steps[i].step > sp.max_step ? steps[i].step : sp.max_step;
        sp.count += steps[i].n;
    }
    if (!bt->held) {
        for (size_t i = 0; i < bt->n; i++) {
            const rec_record *r = &bt->recs[i];
            sp.max_seq = r->seq > sp.max_seq ? r->seq : sp.max_seq;
            if (!rec_in_steps(r)) {
                sp.min_step = r->step < sp.min_step ? r->step : sp.min_step;
                sp.max_step = r->step > sp.max_step ? r->step : sp.max_step;
                sp.count++;
            }
        }
        for (size_t i = 0; i < bt->n_digests; i++)
            sp.max_seq = bt->digests[i].seq > sp.max_seq ? bt->digests[i].seq : sp.max_seq;
    }
    if (!sp.count)
        sp.min_step = sp.max_step = 0;
    return sp;
}

size_t store_step_sums(const srv_batch *b, store_step **out, int64_t *counted)
{
    *out = NULL;
    size_t n = b->held ? 0 : sum_steps(b, out);
    *counted = span_of(b, *out, n).count;
    return n;
}

static void params_build(batch_params *bp, const run_info *run, const srv_batch *bt)
{
    frames_out fo = {0};
    step_sum *steps = NULL;
    size_t n_steps = 0;
    memset(bp, 0, sizeof(*bp));
    frames_cut(bt, &fo);
    if (!bt->held)
        n_steps = sum_steps(bt, &steps);

    batch_span sp = span_of(bt, steps, n_steps);
    snprintf(bp->text[0], 32, "%" PRId64, run->key);
    snprintf(bp->text[1], 32, "%u", bt->rank);
    snprintf(bp->text[2], 32, "%" PRId64, (int64_t)bt->batch_seq);
    snprintf(bp->text[3], 32, "%zu", bt->n);
    snprintf(bp->text[4], 32, "%s", bt->held ? "t" : "f");
    frames_seg_arrays(&fo, bp->seg_arr);
    step_lits(bp->arr, NULL, 0, steps, n_steps, bt);
    snprintf(bp->text[13], 32, "%" PRId64, sp.min_step);
    snprintf(bp->text[14], 32, "%" PRId64, sp.max_step);
    snprintf(bp->text[15], 32, "%" PRIu64, sp.max_seq);
    snprintf(bp->text[16], 32, "%" PRId64, sp.count);
    for (int i = 0; i < N_PARAMS; i++)
        bp->v[i] = bp->text[i];
    for (int i = 0; i < 4; i++)
        bp->v[5 + i] = bp->seg_arr[i];
    bp->v[P_LAST] = bp->seg_arr[4];
    for (int i = 0; i < 3; i++)
        bp->v[10 + i] = db_lit_end(&bp->arr[i]);
    bp->v[17] = db_lit_end(&bp->arr[3]);
    bp->v[P_CONS] = db_lit_end(&bp->arr[4]);
    group_lits(bp->groups, NULL, 0, run->key, bt);
    for (int i = 0; i < 3; i++)
        bp->v[P_CONS + 1 + i] = db_lit_end(&bp->groups[i]);
    size_t flen;
    bp->frames = frames_bytea_array(&fo, &flen);
    bp->v[P_FRAMES] = (const char *)bp->frames;
    bp->len[P_FRAMES] = (int)flen;
    bp->fmt[P_FRAMES] = 1;
    frames_out_release(&fo);
    free(steps);
}

static void params_release(batch_params *bp)
{
    for (int i = 0; i < 5; i++)
        free(bp->arr[i].p);
    for (int i = 0; i < 3; i++)
        free(bp->groups[i].p);
    for (int i = 0; i < FRAMES_SEG_ARRAYS; i++)
        free(bp->seg_arr[i]);
    free(bp->frames);
}

/* parse_want - the steps lockstep_store_batch returned ("{3,7}") into `res`. */
static void parse_want(const char *text, store_result *res)
{
    res->n_want = db_int_array_parse(text, res->want, STORE_WANT_MAX);
}

/* take_result - what lockstep_store_batch answered, into `res`. 0, or -1 when it failed. */
static int take_result(PGresult *r, store_result *res)
{
    if (!db_ok(r) || PQntuples(r) != 1)
        return -1;
    res->duplicate = PQgetisnull(r, 0, 0);
    if (!res->duplicate)
        parse_want(PQgetvalue(r, 0, 0), res);
    return 0;
}

int store_batch(const run_info *run, const srv_batch *bt, store_result *res, srv_error *e)
{
    batch_params bp;
    char err[512] = "the database is unreachable";
    int rc = -1;

    memset(res, 0, sizeof(*res));
    params_build(&bp, run, bt);
    for (int attempt = 0; attempt < 2; attempt++) {
        PGconn *c = db_prepared("batch_store", err, sizeof(err));
        if (!c) { /* a broken connection is dropped, and the next attempt connects again */
            db_conn_broken();
            continue;
        }
        PGresult *r = PQexecPrepared(c, "batch_store", N_PARAMS, bp.v, bp.len, bp.fmt, 0);
        if (take_result(r, res) == 0) {
            res->commit_s = clock_wall_s();
            PQclear(r);
            rc = 0;
            break;
        }
        snprintf(err, sizeof(err), "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
        PQclear(r);
        int broken = PQstatus(c) != CONNECTION_OK;
        metrics_db_error();
        db_conn_broken();
        if (!broken)
            break;
    }
    if (rc < 0) {
        db_fail(e, "storing the batch", err);
        db_complain("batch %" PRIu64 " of run %s rank %u not stored: %s", bt->batch_seq, run->run_id, bt->rank, err);
    }
    params_release(&bp);
    return rc;
}

/* The order in which a group's batches take their locks. */
typedef struct order {
    int64_t key;
    uint32_t rank;
    uint64_t bseq;
    size_t i;
} order;

static int cmp_order(const void *pa, const void *pb)
{
    const order *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->bseq != b->bseq)
        return a->bseq < b->bseq ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

#define G_PARAMS 26
#define G_LAST 25   /* f_last */
#define G_STEPS 15  /* d_batch, then the step rows' five arrays (step_lits) */
#define G_GROUPS 21 /* k_batch, then the groups' three arrays (group_lits) */
#define G_FRAMES 14 /* the bytea[] parameter */

/* The parameters of lockstep_store_batches for a group, batch after batch in lock order. */
typedef struct group_params {
    db_lit arr[G_PARAMS];
    frames_out fo;
    unsigned char *frames;
    const char *v[G_PARAMS];
    int len[G_PARAMS], fmt[G_PARAMS];
} group_params;

/* group_add - batch `bt` of `run` as the k-th (from 1) of the group. */
static void group_add(group_params *gp, int k, const run_info *run, const srv_batch *bt)
{
    step_sum *steps = NULL;
    size_t n_steps = bt->held ? 0 : sum_steps(bt, &steps);
    batch_span sp = span_of(bt, steps, n_steps);
    db_lit_add(&gp->arr[0], run->key);
    db_lit_add(&gp->arr[1], bt->rank);
    db_lit_add(&gp->arr[2], (int64_t)bt->batch_seq);
    db_lit_add(&gp->arr[3], (int64_t)bt->n);
    db_lit_add(&gp->arr[4], bt->held); /* 0/1: cast to boolean[] by the statement */
    db_lit_add(&gp->arr[5], sp.min_step);
    db_lit_add(&gp->arr[6], sp.max_step);
    db_lit_add(&gp->arr[7], (int64_t)sp.max_seq);
    db_lit_add(&gp->arr[8], sp.count);
    size_t first = gp->fo.n_seg;
    frames_cut(bt, &gp->fo); /* appends this batch's segments */
    for (size_t i = first; i < gp->fo.n_seg; i++) {
        const frames_seg *g = &gp->fo.seg[i];
        db_lit_add(&gp->arr[9], k);
        db_lit_add(&gp->arr[10], g->step);
        db_lit_add(&gp->arr[11], (int64_t)g->seq_lo);
        db_lit_add(&gp->arr[12], g->n);
        db_lit_add(&gp->arr[13], g->kind);
        if (g->last != g->step)
            db_lit_add(&gp->arr[G_LAST], g->last);
        else
            db_lit_null(&gp->arr[G_LAST]);
    }
    step_lits(&gp->arr[G_STEPS + 1], &gp->arr[G_STEPS], k, steps, n_steps, bt);
    group_lits(&gp->arr[G_GROUPS + 1], &gp->arr[G_GROUPS], k, run->key, bt);
    free(steps);
}

static void group_finish(group_params *gp)
{
    for (int i = 0; i < G_PARAMS; i++)
        if (i != G_FRAMES)
            gp->v[i] = db_lit_end(&gp->arr[i]);
    size_t flen;
    gp->frames = frames_bytea_array(&gp->fo, &flen);
    gp->v[G_FRAMES] = (const char *)gp->frames;
    gp->len[G_FRAMES] = (int)flen;
    gp->fmt[G_FRAMES] = 1;
}

static void group_release(group_params *gp)
{
    for (int i = 0; i < G_PARAMS; i++)
        free(gp->arr[i].p);
    frames_out_release(&gp->fo);
    free(gp->frames);
}

/* group_txn - one attempt at the whole group in one statement, so one transaction. 0, or -1 with `err`. */
static int group_txn(PGconn *c, const group_params *gp, const order *o, size_t n, store_result *res, char *err,
                     size_t cap)
{
    PGresult *r = PQexecPrepared(c, "batches_store", G_PARAMS, gp->v, gp->len, gp->fmt, 0);
    int ok = db_ok(r) && (size_t)PQntuples(r) == n;
    if (!ok)
        snprintf(err, cap, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    for (int row = 0; ok && row < PQntuples(r); row++) {
        int k = atoi(PQgetvalue(r, row, 0));
        if (k < 1 || (size_t)k > n) {
            snprintf(err, cap, "lockstep_store_batches answered for batch %d of %zu", k, n);
            ok = 0;
            break;
        }
        store_result *x = &res[o[k - 1].i];
        x->duplicate = PQgetvalue(r, row, 1)[0] == 't';
        if (!x->duplicate)
            parse_want(PQgetvalue(r, row, 2), x);
    }
    PQclear(r);
    return ok ? 0 : -1;
}

int store_batches(const run_info *const *runs, const srv_batch *const *b, size_t n, store_result *res, int *rc,
                  srv_error *e)
{
    int failed = 0;
    if (n == 1) {
        rc[0] = store_batch(runs[0], b[0], &res[0], &e[0]);
        return rc[0] < 0;
    }
    order *o = xmalloc(n * sizeof(*o));
    for (size_t i = 0; i < n; i++) {
        memset(&res[i], 0, sizeof(res[i]));
        o[i] = (order){.key = runs[i]->key, .rank = b[i]->rank, .bseq = b[i]->batch_seq, .i = i};
    }
    qsort(o, n, sizeof(*o), cmp_order);
    group_params gp;
    memset(&gp, 0, sizeof(gp));
    for (size_t k = 0; k < n; k++)
        group_add(&gp, (int)k + 1, runs[o[k].i], b[o[k].i]);
    group_finish(&gp);
    char err[512] = "the database is unreachable";
    PGconn *c = db_prepared("batches_store", err, sizeof(err));
    if (c && group_txn(c, &gp, o, n, res, err, sizeof(err)) == 0) {
        double now = clock_wall_s();
        for (size_t i = 0; i < n; i++) {
            res[i].commit_s = now;
            rc[i] = 0;
        }
    } else {
        /* one by one: a batch that fails fails alone (store_batch retries a broken connection) */
        if (c) {
            metrics_db_error();
            db_conn_broken();
            log_warn("a group of %zu batches failed together (%s); storing them one by one", n, err);
        }
        for (size_t k = 0; k < n; k++) {
            size_t i = o[k].i;
            rc[i] = store_batch(runs[i], b[i], &res[i], &e[i]);
            failed += rc[i] < 0;
        }
    }
    group_release(&gp);
    free(o);
    return failed;
}

int store_wanted_steps(const run_info *run, int rank, int64_t *out, int cap, srv_error *e)
{
    char key[32], rk[16], lim[16], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run->key);
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(lim, sizeof(lim), "%d", cap);
    const char *p[] = {key, rk, lim};
    PGresult *r = db_exec("wanted_steps", 3, p, err, sizeof(err));
    if (!r)
        return db_fail(e, "reading the steps asked for", err);
    int n = PQntuples(r);
    for (int i = 0; i < n; i++)
        out[i] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
    PQclear(r);
    return n;
}
