/* store.c - lockstepd's writes to PostgreSQL: runs, manifests, rank ends, and record batches (COPY, one transaction each). */
#include "server/store.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/lsfp1.h"
#include "server/db.h"
#include "server/log.h"

#define CACHE_SLOTS 4096

static run_info cache[CACHE_SLOTS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

void store_register(void)
{
    db_register("run_get", "SELECT run_key, run_id, job_id, coalesce(twin_group, ''), ranks, start_step "
                           "FROM runs WHERE run_id = $1::uuid");
    /* A repeated client_id returns the run it registered (the no-op update makes RETURNING see the row);
     * xmax = 0 only on a row this statement inserted. */
    db_register("run_ins", "INSERT INTO runs (run_id, job_id, step_id, twin_group, ranks, start_step, user_name, "
                           "nodes, command, mode, client_id) VALUES (gen_random_uuid(), $1, $2, nullif($3, ''), $4, "
                           "$5, $6, $7, $8, $9, nullif($10, '')) ON CONFLICT (job_id, client_id) WHERE client_id IS "
                           "NOT NULL DO UPDATE SET client_id = excluded.client_id RETURNING run_key, run_id, "
                           "coalesce(twin_group, ''), ranks, start_step, xmax = 0");
    db_register("group_reset", "DELETE FROM group_checks WHERE twin_group = $1");
    db_register("manifest_put", "INSERT INTO manifests (run_key, rank, manifest) VALUES ($1, $2, $3::jsonb) "
                                "ON CONFLICT (run_key, rank) DO UPDATE SET manifest = excluded.manifest, "
                                "received_at = now()");
    db_register("rank_end", "INSERT INTO rank_ends (run_key, rank, exit_code) VALUES ($1, $2, $3) "
                            "ON CONFLICT (run_key, rank) DO UPDATE SET exit_code = excluded.exit_code");
    db_register("run_finish",
                "UPDATE runs SET status = CASE WHEN e.bad > 0 THEN 'failed' ELSE 'ended' END, "
                "ended_at = coalesce(ended_at, now()) FROM (SELECT count(*) AS n, count(*) FILTER "
                "(WHERE exit_code <> 0) AS bad FROM rank_ends WHERE run_key = $1) e "
                "WHERE runs.run_key = $1 AND e.n >= runs.ranks RETURNING runs.status");
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
                "n_records = rank_progress.n_records + excluded.n_records, updated_at = now()");
}

int store_uuid_valid(const char *s)
{
    if (strlen(s) != 36)
        return 0;
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return 0;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return 0;
    }
    return 1;
}

static unsigned slot_of(const char *run_id)
{
    return (unsigned)(fp_lsfp1(run_id, strlen(run_id)) % CACHE_SLOTS);
}

static void cache_put(const run_info *r)
{
    pthread_mutex_lock(&cache_lock);
    cache[slot_of(r->run_id)] = *r;
    pthread_mutex_unlock(&cache_lock);
}

static void db_fail(srv_error *e, const char *what, const char *msg)
{
    snprintf(e->error, sizeof(e->error), "database error");
    snprintf(e->detail, sizeof(e->detail), "%s: %s", what, msg);
    snprintf(e->hint, sizeof(e->hint), "retry later; if it persists, check PostgreSQL and the lockstepd log");
    size_t n = strlen(e->detail);
    while (n && e->detail[n - 1] == '\n')
        e->detail[--n] = 0;
}

static void fill_run(PGresult *r, run_info *out)
{
    memset(out, 0, sizeof(*out));
    out->key = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(out->run_id, sizeof(out->run_id), "%s", PQgetvalue(r, 0, 1));
    snprintf(out->job_id, sizeof(out->job_id), "%s", PQgetvalue(r, 0, 2));
    snprintf(out->group, sizeof(out->group), "%s", PQgetvalue(r, 0, 3));
    out->ranks = atoi(PQgetvalue(r, 0, 4));
    out->start_step = strtoll(PQgetvalue(r, 0, 5), NULL, 10);
}

int store_run_lookup(const char *run_id, run_info *out, srv_error *e)
{
    char lower[40];
    if (!store_uuid_valid(run_id))
        return 0;
    for (int i = 0; i < 37; i++)
        lower[i] = (char)((run_id[i] >= 'A' && run_id[i] <= 'F') ? run_id[i] + 32 : run_id[i]);
    pthread_mutex_lock(&cache_lock);
    const run_info *c = &cache[slot_of(lower)];
    int hit = c->key && strcmp(c->run_id, lower) == 0;
    if (hit)
        *out = *c;
    pthread_mutex_unlock(&cache_lock);
    if (hit)
        return 1;
    char err[512];
    const char *p[] = {lower};
    PGresult *r = db_exec("run_get", 1, p, err, sizeof(err));
    if (!r) {
        db_fail(e, "looking up the run", err);
        return -1;
    }
    int found = PQntuples(r) == 1;
    if (found) {
        fill_run(r, out);
        cache_put(out);
    }
    PQclear(r);
    return found;
}

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

int store_run_create(const json_t *o, run_info *out, int *created, srv_error *e)
{
    char ranks[32], start[32], err[512];
    snprintf(ranks, sizeof(ranks), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(o, "ranks")));
    snprintf(start, sizeof(start), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(o, "start_step")));
    const char *p[] = {str_or(o, "job_id", ""), str_or(o, "step_id", ""), str_or(o, "twin_group", ""), ranks, start,
                       str_or(o, "user", ""),   str_or(o, "nodes", ""),   str_or(o, "command", ""),    str_or(o, "mode", ""),
                       str_or(o, "client_id", "")};
    PGresult *r = db_exec("run_ins", 10, p, err, sizeof(err));
    if (!r) {
        db_fail(e, "registering the run", err);
        return -1;
    }
    memset(out, 0, sizeof(*out));
    /* What the database holds: on a repeated registration, the first attempt's fields. */
    out->key = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(out->run_id, sizeof(out->run_id), "%s", PQgetvalue(r, 0, 1));
    snprintf(out->job_id, sizeof(out->job_id), "%s", p[0]);
    snprintf(out->group, sizeof(out->group), "%s", PQgetvalue(r, 0, 2));
    out->ranks = atoi(PQgetvalue(r, 0, 3));
    out->start_step = strtoll(PQgetvalue(r, 0, 4), NULL, 10);
    *created = PQgetvalue(r, 0, 5)[0] == 't';
    PQclear(r);
    cache_put(out);
    if (*created && out->group[0]) {
        /* A new twin changes what the group's runs share: compare from the start again. */
        const char *g[] = {out->group};
        r = db_exec("group_reset", 1, g, err, sizeof(err));
        if (!r)
            log_warn("cannot reset the comparison of group %s: %s", out->group, err);
        PQclear(r);
    }
    return 0;
}

int store_manifest(const run_info *run, int rank, const char *json_text, srv_error *e)
{
    char key[32], rk[16], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run->key);
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {key, rk, json_text};
    PGresult *r = db_exec("manifest_put", 3, p, err, sizeof(err));
    if (!r) {
        db_fail(e, "storing the manifest", err);
        return -1;
    }
    PQclear(r);
    return 0;
}

int store_rank_end(const run_info *run, int rank, int exit_code, int *run_done, srv_error *e)
{
    char key[32], rk[16], code[16], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run->key);
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(code, sizeof(code), "%d", exit_code);
    const char *p[] = {key, rk, code};
    PGresult *r = db_exec("rank_end", 3, p, err, sizeof(err));
    if (!r) {
        db_fail(e, "recording the rank's end", err);
        return -1;
    }
    PQclear(r);
    r = db_exec("run_finish", 1, p, err, sizeof(err));
    if (!r) {
        db_fail(e, "updating the run's status", err);
        return -1;
    }
    *run_done = PQntuples(r) > 0;
    PQclear(r);
    return 0;
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
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            abort();
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
        be16(grow(b, 2), 16);
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
    step_sum *s = malloc(cap * sizeof(*s));
    if (!s)
        abort();
    for (size_t i = 0; i < bt->n; i++) {
        const rec_record *r = &bt->recs[i];
        size_t k = n;
        if (n && s[n - 1].step == r->step)
            k = n - 1;
        else
            for (k = 0; k < n && s[k].step != r->step; k++)
                ;
        if (k == n) {
            if (n == cap) {
                cap *= 2;
                s = realloc(s, cap * sizeof(*s));
                if (!s)
                    abort();
            }
            s[n].step = r->step;
            s[n].n = 0;
            s[n].digest = 0;
            n++;
        }
        s[k].n++;
        s[k].digest ^= batch_record_hash(r);
    }
    qsort(s, n, sizeof(*s), cmp_step);
    *out = s;
    return n;
}

static char *array_literal(const step_sum *s, size_t n, int which)
{
    char *out = malloc(n * 24 + 3);
    if (!out)
        abort();
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

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
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
                      "value, shape, inputs, chunks) FROM STDIN (FORMAT binary)");
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
        snprintf(min_step, sizeof(min_step), "%" PRId64, steps[0].step);
        snprintf(max_step, sizeof(max_step), "%" PRId64, steps[n_steps - 1].step);
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
            *commit_s = wall_s();
            rc = 0;
            break;
        }
        int broken = PQstatus(c) != CONNECTION_OK;
        db_count_error();
        db_conn_broken();
        if (!broken)
            break;
    }
    if (rc < 0) {
        db_fail(e, "storing the batch", err);
        log_warn("batch %" PRIu64 " of run %s rank %u not stored: %s", bt->batch_seq, run->run_id, bt->rank, err);
    }
    free(copy.p);
    free(steps);
    return rc;
}
