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
#include "server/store/db_lit.h"
#include "server/store/frames.h"

/* The parameters of lockstep_store_batches (sql/functions/write.sql), by where each array begins. */
#define G_PARAMS 30
#define G_BATCH 0   /* the batches' ten arrays: run, rank, bseq, n, held, min_step, max_step, max_seq, count, lo */
#define G_SEGS 10   /* the segments': batch, step, seq, n, kind, frames, last */
#define G_FRAMES 15 /* the bytea[] parameter, sent in binary */
#define G_PACKS 17  /* the packs': batch, from, to, cons (step_lits) */
#define G_STEPS 21  /* the step rows': step, records, digest, inputs digest, consensus digests (step_lits) */
#define G_GROUPS 26 /* the groups': batch, key, size, ranks (group_lits) */

void store_write_register(void)
{
    db_register("wanted_steps", "SELECT step FROM record_requests WHERE run_key = $1 AND rank = $2 AND NOT answered "
                                "ORDER BY step LIMIT $3");
    db_register("batches_store", "SELECT i, duplicate, want FROM lockstep_store_batches($1, $2, $3, $4, $5, $6, $7, "
                                 "$8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, "
                                 "$24, $25, $26, $27, $28, $29, $30)");
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
    if (null)
        db_lit_null(l);
    else
        db_lit_add(l, v);
}

/* lit_add_ranks - the int[] literal of `n` ranks as one quoted element of a text[] literal. */
static void lit_add_ranks(db_lit *l, const uint32_t *ranks, uint32_t n)
{
    db_lit_room(l, 16 + 11 * (size_t)n);
    l->len += (size_t)sprintf(l->p + l->len, "%c\"{", l->len ? ',' : '{');
    for (uint32_t i = 0; i < n; i++)
        l->len += (size_t)sprintf(l->p + l->len, "%s%u", i ? "," : "", ranks[i]);
    l->len += (size_t)sprintf(l->p + l->len, "}\"");
}

/* lit_add_bytes - `n` bytes as one element of a bytea[] literal ("\\x" and their hex). */
static void lit_add_bytes(db_lit *l, const unsigned char *b, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    db_lit_room(l, 2 * n + 8);
    l->len += (size_t)sprintf(l->p + l->len, "%c\"\\\\x", l->len ? ',' : '{');
    for (size_t i = 0; i < n; i++) {
        l->p[l->len++] = hex[b[i] >> 4];
        l->p[l->len++] = hex[b[i] & 15];
    }
    l->p[l->len++] = '"';
}

/* The parameters of lockstep_store_batches for a group, batch after batch in lock order. */
typedef struct group_params {
    db_lit arr[G_PARAMS];
    size_t rows; /* the step rows so far */
    frames_out fo;
    unsigned char *frames;
    const char *v[G_PARAMS];
    int len[G_PARAMS], fmt[G_PARAMS];
} group_params;

/* One step row of a batch: summed step `i` (i < n_steps), or the step of its consensus digest i - n_steps that no
 * summed step and no earlier consensus digest has. */
typedef struct step_row {
    int64_t step;
    size_t i;
} step_row;

static int cmp_row(const void *a, const void *b)
{
    int64_t x = ((const step_row *)a)->step, y = ((const step_row *)b)->step;
    return x < y ? -1 : x > y;
}

/* step_lits - the batch's step rows, each step once and in step order, into the group's step arrays (step, records,
 * digest, inputs digest, consensus digests: those of the step, packed as step_consensus.cons holds them, in the
 * batch's order; NULL when none; a step with consensus digests only has 0 records), and a pack for each block of
 * steps they touch (k, the batch; the slice of the step arrays, from 1; whether it carries consensus digests).
 * Returns the smallest step with records (INT64_MAX: none). */
static int64_t step_lits(group_params *gp, int k, const step_sum *steps, size_t n_steps, const srv_batch *bt)
{
    db_lit *d = &gp->arr[G_STEPS], *pk = &gp->arr[G_PACKS];
    step_row *rows = xmalloc((n_steps + bt->n_cons + 1) * sizeof(*rows));
    size_t n = 0;
    for (size_t i = 0; i < n_steps; i++)
        rows[n++] = (step_row){steps[i].step, i};
    for (size_t i = 0; i < bt->n_cons; i++) {
        int64_t step = bt->cons[i].step;
        int seen = 0;
        for (size_t j = 0; j < n && !seen; j++)
            seen = rows[j].step == step;
        if (!seen)
            rows[n++] = (step_row){step, n_steps + i};
    }
    qsort(rows, n, sizeof(*rows), cmp_row);
    unsigned char *packed = xmalloc(bt->n_cons * CONS_PACKED + 1);
    int64_t lo = INT64_MAX;
    int cons = 0;
    for (size_t r = 0, first = 0; r < n; r++) {
        int64_t step = rows[r].step;
        const step_sum *s = rows[r].i < n_steps ? &steps[rows[r].i] : NULL;
        size_t len = 0;
        for (size_t j = 0; j < bt->n_cons; j++)
            if (bt->cons[j].step == step)
                cons_pack(packed + CONS_PACKED * len++, &bt->cons[j]);
        db_lit_add(&d[0], step);
        db_lit_add(&d[1], s ? s->n : 0);
        db_lit_add(&d[2], s ? (int64_t)s->digest : 0);
        lit_add_or_null(&d[3], s ? (int64_t)s->inputs : 0, s && s->inputs_unknown);
        if (len)
            lit_add_bytes(&d[4], packed, len * CONS_PACKED);
        else
            db_lit_null(&d[4]);
        lo = s && s->n > 0 && step < lo ? step : lo;
        cons |= len > 0;
        if (r + 1 == n || rows[r + 1].step >> FRAMES_BLOCK_SHIFT != step >> FRAMES_BLOCK_SHIFT) {
            db_lit_add(&pk[0], k); /* rows first..r: the pack of this block */
            db_lit_add(&pk[1], (int64_t)(gp->rows + first + 1));
            db_lit_add(&pk[2], (int64_t)(gp->rows + r + 1));
            db_lit_add(&pk[3], cons);
            first = r + 1;
            cons = 0;
        }
    }
    gp->rows += n;
    free(packed);
    free(rows);
    return lo;
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

void store_result_release(store_result *res)
{
    free(res->steps);
    res->steps = NULL;
    res->n_steps = 0;
}

/* group_add - batch `bt` of `run` as the k-th (from 1) of the group; its step sums go to `res`. */
static void group_add(group_params *gp, int k, const run_info *run, const srv_batch *bt, store_result *res)
{
    step_sum *steps = NULL;
    size_t n_steps = bt->held ? 0 : sum_steps(bt, &steps);
    batch_span sp = span_of(bt, steps, n_steps);
    db_lit *b = &gp->arr[G_BATCH], *f = &gp->arr[G_SEGS];
    db_lit_add(&b[0], run->key);
    db_lit_add(&b[1], bt->rank);
    db_lit_add(&b[2], (int64_t)bt->batch_seq);
    db_lit_add(&b[3], (int64_t)bt->n);
    db_lit_add(&b[4], bt->held); /* 0/1: boolean[] takes them */
    db_lit_add(&b[5], sp.min_step);
    db_lit_add(&b[6], sp.max_step);
    db_lit_add(&b[7], (int64_t)sp.max_seq);
    db_lit_add(&b[8], sp.count);
    /* the smallest step it brings records of: a late batch rewinds its rank's marks to the step before */
    int64_t lo = sp.count > 0 ? sp.min_step : INT64_MAX;
    size_t first = gp->fo.n_seg;
    frames_cut(bt, &gp->fo); /* appends this batch's segments */
    for (size_t i = first; i < gp->fo.n_seg; i++) {
        const frames_seg *g = &gp->fo.seg[i];
        db_lit_add(&f[0], k);
        db_lit_add(&f[1], g->step);
        db_lit_add(&f[2], (int64_t)g->seq_lo);
        db_lit_add(&f[3], g->n);
        db_lit_add(&f[4], g->kind);
        lit_add_or_null(&f[6], g->last, g->last == g->step);
        lo = g->step < lo ? g->step : lo;
    }
    int64_t dlo = step_lits(gp, k, steps, n_steps, bt);
    lo = dlo < lo ? dlo : lo;
    lit_add_or_null(&b[9], lo, lo == INT64_MAX);
    group_lits(&gp->arr[G_GROUPS + 1], &gp->arr[G_GROUPS], k, run->key, bt);
    res->steps = steps;
    res->n_steps = n_steps;
    res->counted = sp.count;
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

/* parse_want - the steps lockstep_store_batches returned for a batch ("{3,7}") into `res`. */
static void parse_want(const char *text, store_result *res)
{
    res->n_want = db_int_array_parse(text, res->want, STORE_WANT_MAX);
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

/* group_store - `n` batches (b[i] of runs[i]) in one statement, in lock order; `attempts` tries while the
 * connection breaks (a broken one is dropped, the next try connects again). 0, or -1 with `err`. */
static int group_store(const run_info *const *runs, const srv_batch *const *b, size_t n, store_result *res,
                       int attempts, char *err, size_t cap)
{
    order *o = xmalloc(n * sizeof(*o));
    for (size_t i = 0; i < n; i++) {
        store_result_release(&res[i]); /* a group that failed filled it */
        memset(&res[i], 0, sizeof(res[i]));
        o[i] = (order){.key = runs[i]->key, .rank = b[i]->rank, .bseq = b[i]->batch_seq, .i = i};
    }
    qsort(o, n, sizeof(*o), cmp_order);
    group_params gp;
    memset(&gp, 0, sizeof(gp));
    for (size_t k = 0; k < n; k++)
        group_add(&gp, (int)k + 1, runs[o[k].i], b[o[k].i], &res[o[k].i]);
    group_finish(&gp);
    int rc = -1;
    for (int attempt = 0; attempt < attempts && rc < 0; attempt++) {
        PGconn *c = db_prepared("batches_store", err, cap);
        if (!c) {
            db_conn_broken();
            continue;
        }
        if (group_txn(c, &gp, o, n, res, err, cap) == 0) {
            double now = clock_wall_s();
            for (size_t i = 0; i < n; i++)
                res[i].commit_s = now;
            rc = 0;
            break;
        }
        int broken = PQstatus(c) != CONNECTION_OK;
        metrics_db_error();
        db_conn_broken();
        if (!broken)
            break;
    }
    group_release(&gp);
    free(o);
    return rc;
}

/* store_batch - batch `bt` of `run` stored alone (store_batches, write.h). */
static int store_batch(const run_info *run, const srv_batch *bt, store_result *res, srv_error *e)
{
    char err[512] = "the database is unreachable";
    int rc = group_store(&run, &bt, 1, res, 2, err, sizeof(err));
    if (rc < 0) {
        db_fail(e, "storing the batch", err);
        db_complain("batch %" PRIu64 " of run %s rank %u not stored: %s", bt->batch_seq, run->run_id, bt->rank, err);
    }
    return rc;
}

int store_batches(const run_info *const *runs, const srv_batch *const *b, size_t n, store_result *res, int *rc,
                  srv_error *e)
{
    char err[512] = "the database is unreachable";
    if (n > 1 && group_store(runs, b, n, res, 1, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < n; i++)
            rc[i] = 0;
        return 0;
    }
    if (n > 1)
        log_warn("a group of %zu batches failed together (%s); storing them one by one", n, err);
    int failed = 0;
    for (size_t i = 0; i < n; i++) { /* a batch that fails fails alone */
        rc[i] = store_batch(runs[i], b[i], &res[i], &e[i]);
        failed += rc[i] < 0;
    }
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
