/* write.c - the write path of a record batch: one transaction (batches row, binary COPY of the records, step digests, rank progress), acknowledged only after COMMIT. */
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

void store_write_register(void)
{
    db_register("batch_ins", "INSERT INTO batches (run_key, rank, batch_seq, n_records) VALUES ($1, $2, $3, $4) "
                             "ON CONFLICT DO NOTHING RETURNING 1");
    db_register("digest_add",
                "INSERT INTO step_digests (run_key, rank, step, n, digest) SELECT $1, $2, s, n, d "
                "FROM unnest($3::bigint[], $4::int[], $5::bigint[]) AS u(s, n, d) ORDER BY s "
                "ON CONFLICT (run_key, rank, step) DO UPDATE SET n = step_digests.n + excluded.n, "
                "digest = step_digests.digest # excluded.digest");
    db_register("progress_add",
                "INSERT INTO rank_progress (run_key, rank, min_step, max_step, max_seq, n_records) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_key, rank) DO UPDATE SET "
                "min_step = least(rank_progress.min_step, excluded.min_step), "
                "max_step = greatest(rank_progress.max_step, excluded.max_step), "
                "max_seq = greatest(rank_progress.max_seq, excluded.max_seq), "
                "n_records = rank_progress.n_records + excluded.n_records, updated_at = clock_timestamp()");
    /* A grouped batch commits under the shared lock of its group's rank (lockstep_check_key), taken last:
     * a comparison of that rank (which holds it exclusively) is either over, and then a batch that brings
     * records of a step it already compared re-opens it from there (late data is compared), or starts
     * after this commit and sees the batch. The progress row's time is taken under the lock, so the
     * comparison's mark (checked_at) is later than the progress it saw and earlier than any it did not. */
    db_register("batch_lock", "SELECT pg_advisory_xact_lock_shared(lockstep_check_key($1, $2::int))");
    /* (and the group's logical mark, rank -1, when its runs have different rank counts: server/compare/logical.c) */
    db_register("batch_rewind", "UPDATE group_checks SET checked_upto = $3::bigint - 1 WHERE twin_group = $1 "
                                "AND rank IN ($2::int, -1) AND checked_upto >= $3::bigint");
}

/* A growable buffer for the binary COPY stream. */
typedef struct cbuf {
    unsigned char *p;
    size_t len, cap;
} cbuf;

static unsigned char *grow(cbuf *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 20;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *p = xrealloc(b->p, cap);
        b->p = p;
        b->cap = cap;
    }
    unsigned char *at = b->p + b->len;
    b->len += n;
    return at;
}

static void be16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void be32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static void be64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (56 - 8 * i));
}

static void f_int(cbuf *b, uint64_t v, int size)
{
    unsigned char *p = grow(b, 4 + (size_t)size);
    be32(p, (uint32_t)size);
    if (size == 8)
        be64(p + 4, v);
    else if (size == 4)
        be32(p + 4, (uint32_t)v);
    else
        be16(p + 4, (uint16_t)v);
}

static void f_null(cbuf *b)
{
    be32(grow(b, 4), 0xffffffffu);
}

/* f_text - a text field (`len` bytes, no NUL; the framing guarantees it). */
static void f_text(cbuf *b, const char *s, size_t len)
{
    unsigned char *p = grow(b, 4 + len);
    be32(p, (uint32_t)len);
    if (len)
        memcpy(p + 4, s, len);
}

/* f_int8_array - a one-dimensional int8[] in PostgreSQL's binary array form. */
static void f_int8_array(cbuf *b, const uint64_t *v, size_t n)
{
    size_t body = n ? 20 + 12 * n : 12;
    unsigned char *p = grow(b, 4 + body);
    be32(p, (uint32_t)body);
    be32(p + 4, n ? 1 : 0); /* ndim */
    be32(p + 8, 0);         /* no NULLs */
    be32(p + 12, 20);       /* element type: int8 */
    if (!n)
        return;
    be32(p + 16, (uint32_t)n);
    be32(p + 20, 1); /* lower bound */
    p += 24;
    for (size_t i = 0; i < n; i++, p += 12) {
        be32(p, 8);
        be64(p + 4, v[i]);
    }
}

static void copy_rows(cbuf *b, int64_t run_key, const srv_batch *bt)
{
    static const unsigned char sig[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};
    unsigned char *p = grow(b, 19);
    memcpy(p, sig, 11);
    be32(p + 11, 0);
    be32(p + 15, 0);
    for (size_t i = 0; i < bt->n; i++) {
        const rec_record *r = &bt->recs[i];
        be16(grow(b, 2), 22);
        f_int(b, (uint64_t)run_key, 8);
        f_int(b, bt->rank, 4);
        f_int(b, r->seq, 8);
        f_int(b, (uint64_t)r->step, 8);
        p = grow(b, 4 + r->name_len);
        be32(p, r->name_len);
        memcpy(p + 4, r->name, r->name_len);
        f_int(b, r->occurrence, 4);
        f_int(b, r->level, 2);
        f_int(b, r->dtype, 2);
        f_int(b, r->flags, 2);
        f_int(b, (uint64_t)r->t_ns, 8);
        f_int(b, r->nbytes, 8);
        f_int(b, r->fp, 8);
        if (r->flags & REC_HAS_VALUE)
            f_int(b, r->value, 8);
        else
            f_null(b);
        uint64_t shape[LS_MAX_DIMS];
        for (unsigned k = 0; k < r->ndim; k++)
            shape[k] = (uint64_t)r->shape[k];
        f_int8_array(b, shape, r->ndim);
        if (r->n_inputs)
            f_int8_array(b, r->inputs, r->n_inputs);
        else
            f_null(b);
        if (r->n_chunks)
            f_int8_array(b, r->chunks, r->n_chunks);
        else
            f_null(b);
        if (rec_has_site(r)) {
            const rec_site *st = &r->site;
            f_text(b, st->module, st->module_len);
            f_int(b, st->offset, 8);
            f_text(b, st->function, st->function_len);
            f_int(b, st->function_offset, 8);
            f_text(b, st->caller, st->caller_len);
        } else {
            for (int k = 0; k < 5; k++)
                f_null(b);
        }
        if (r->ext_len) { /* bytea: the other extension fields as encoded (common/record.h); the site is above */
            p = grow(b, 4 + r->ext_len);
            be32(p, r->ext_len);
            memcpy(p + 4, r->ext, r->ext_len);
        } else {
            f_null(b);
        }
    }
    be16(grow(b, 2), 0xffff);
}

/* Per-step digests of one batch, as PostgreSQL array literals. */
typedef struct step_sum {
    int64_t step;
    int n;
    uint64_t digest;
} step_sum;

static int cmp_step(const void *a, const void *b)
{
    int64_t x = ((const step_sum *)a)->step, y = ((const step_sum *)b)->step;
    return x < y ? -1 : x > y;
}

static size_t sum_steps(const srv_batch *bt, step_sum **out)
{
    size_t n = 0, cap = 16;
    step_sum *s = xmalloc(cap * sizeof(*s));
    for (size_t i = 0; i < bt->n; i++) {
        const rec_record *r = &bt->recs[i];
        if (!rec_in_steps(r))
            continue; /* an entry of a state block is no step record: no digest, no count */
        size_t k = n;
        if (n && s[n - 1].step == r->step)
            k = n - 1;
        else
            for (k = 0; k < n && s[k].step != r->step; k++)
                ;
        if (k == n) {
            if (n == cap) {
                cap *= 2;
                s = xrealloc(s, cap * sizeof(*s));
            }
            s[n].step = r->step;
            s[n].n = 0;
            s[n].digest = 0;
            n++;
        }
        s[k].n++;
        s[k].digest ^= rec_digest_term(r);
    }
    qsort(s, n, sizeof(*s), cmp_step);
    *out = s;
    return n;
}

static char *array_literal(const step_sum *s, size_t n, int which)
{
    char *out = xmalloc(n * 24 + 3);
    size_t len = 0;
    out[len++] = '{';
    for (size_t i = 0; i < n; i++) {
        if (i)
            out[len++] = ',';
        if (which == 0)
            len += (size_t)sprintf(out + len, "%" PRId64, s[i].step);
        else if (which == 1)
            len += (size_t)sprintf(out + len, "%d", s[i].n);
        else
            len += (size_t)sprintf(out + len, "%" PRId64, (int64_t)s[i].digest);
    }
    out[len++] = '}';
    out[len] = 0;
    return out;
}

/* batch_txn - one attempt at the batch transaction on connection `c`.
 * Returns 0 stored, 1 duplicate, -1 failed (`err` says why). */
static int batch_txn(PGconn *c, const run_info *run, const srv_batch *bt, const cbuf *copy, const step_sum *steps,
                     size_t n_steps, char *err, size_t cap)
{
    char key[32], rank[16], bseq[32], nrec[32], min_step[32], max_step[32], max_seq[32];
    PGresult *r = PQexec(c, "BEGIN");
    int ok = db_ok(r);
    PQclear(r);
    if (!ok)
        goto out_fail;
    snprintf(key, sizeof(key), "%" PRId64, run->key);
    snprintf(rank, sizeof(rank), "%u", bt->rank);
    snprintf(bseq, sizeof(bseq), "%" PRId64, (int64_t)bt->batch_seq);
    snprintf(nrec, sizeof(nrec), "%zu", bt->n);
    const char *p1[] = {key, rank, bseq, nrec};
    r = PQexecPrepared(c, "batch_ins", 4, p1, NULL, NULL, 0);
    if (!db_ok(r))
        goto out_clear;
    if (PQntuples(r) == 0) {
        PQclear(r);
        r = PQexec(c, "ROLLBACK");
        PQclear(r);
        return 1;
    }
    PQclear(r);
    if (bt->n) {
        r = PQexec(c, "COPY records (run_key, rank, seq, step, name, occ, level, dtype, flags, t_ns, nbytes, fp, "
                      "value, shape, inputs, chunks, site_module, site_offset, site_function, site_function_offset, "
                      "site_caller, ext) FROM STDIN (FORMAT binary)");
        if (PQresultStatus(r) != PGRES_COPY_IN)
            goto out_clear;
        PQclear(r);
        if (PQputCopyData(c, (const char *)copy->p, (int)copy->len) != 1 || PQputCopyEnd(c, NULL) != 1)
            goto out_fail;
        r = PQgetResult(c);
        if (!db_ok(r))
            goto out_clear;
        PQclear(r);
        while ((r = PQgetResult(c)))
            PQclear(r);

        char *a_step = array_literal(steps, n_steps, 0), *a_n = array_literal(steps, n_steps, 1),
             *a_d = array_literal(steps, n_steps, 2);
        const char *p2[] = {key, rank, a_step, a_n, a_d};
        r = PQexecPrepared(c, "digest_add", 5, p2, NULL, NULL, 0);
        free(a_step);
        free(a_n);
        free(a_d);
        if (!db_ok(r))
            goto out_clear;
        PQclear(r);
        int64_t lo = bt->recs[0].step, hi = lo; /* every record's step, state blocks' included */
        for (size_t i = 1; i < bt->n; i++) {
            lo = bt->recs[i].step < lo ? bt->recs[i].step : lo;
            hi = bt->recs[i].step > hi ? bt->recs[i].step : hi;
        }
        snprintf(min_step, sizeof(min_step), "%" PRId64, lo);
        if (run->group[0]) {
            const char *pl[] = {run->group, rank, min_step};
            r = PQexecPrepared(c, "batch_lock", 2, pl, NULL, NULL, 0);
            if (!db_ok(r))
                goto out_clear;
            PQclear(r);
            r = PQexecPrepared(c, "batch_rewind", 3, pl, NULL, NULL, 0);
            if (!db_ok(r))
                goto out_clear;
            PQclear(r);
        }
        snprintf(max_step, sizeof(max_step), "%" PRId64, hi);
        snprintf(max_seq, sizeof(max_seq), "%" PRIu64, bt->recs[bt->n - 1].seq);
        const char *p3[] = {key, rank, min_step, max_step, max_seq, nrec};
        r = PQexecPrepared(c, "progress_add", 6, p3, NULL, NULL, 0);
        if (!db_ok(r))
            goto out_clear;
        PQclear(r);
    }
    r = PQexec(c, "COMMIT");
    if (!db_ok(r))
        goto out_clear;
    PQclear(r);
    return 0;
out_clear:
    snprintf(err, cap, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    PQclear(r);
    return -1;
out_fail:
    snprintf(err, cap, "%s", PQerrorMessage(c));
    return -1;
}

int store_batch(const run_info *run, const srv_batch *bt, int *duplicate, double *commit_s, srv_error *e)
{
    cbuf copy = {0};
    step_sum *steps = NULL;
    size_t n_steps = 0;
    char err[512] = "the database is unreachable";
    int rc = -1;

    *duplicate = 0;
    if (bt->n) {
        copy_rows(&copy, run->key, bt);
        n_steps = sum_steps(bt, &steps);
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        PGconn *c = db_conn();
        if (!c)
            break;
        int got = batch_txn(c, run, bt, &copy, steps, n_steps, err, sizeof(err));
        if (got >= 0) {
            *duplicate = got == 1;
            *commit_s = clock_wall_s();
            rc = 0;
            break;
        }
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
    free(copy.p);
    free(steps);
    return rc;
}
