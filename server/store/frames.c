/* frames.c - records as stored: a batch's CRC-checked frames cut per step into page-sized segments (record_frames), and
 * the reads that decode them. */
#include "server/store/frames.h"

#include <inttypes.h>
#include <limits.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/xalloc.h"
#include "server/store/db.h"

#define FETCH_SEGS 256 /* segments one query of a range reads */

static int compressed; /* record_frames compresses frames with lz4 (frames_configure) */

int frames_configure(void)
{
    char err[512];
    PGresult *r = db_exec("frames_lz4", 0, NULL, err, sizeof(err));
    if (!r)
        return -1;
    compressed = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return compressed;
}

size_t frames_lz4_cost(const rec_record *r)
{
    size_t words = 1 + (size_t)r->n_inputs + r->n_chunks + ((r->flags & REC_HAS_VALUE) ? 1 : 0);
    return 8 * words + 4 + rec_encoded_size(r) / 8;
}

void frames_register(void)
{
    db_register("frames_lz4", "SELECT a.attcompression = 'l' AND a.attstorage = 'm' FROM pg_attribute a "
                              "WHERE a.attrelid = 'record_frames'::regclass AND a.attname = 'frames'");
    db_register("frames_step", "SELECT run_key, step, seq_lo, n, frames FROM record_frames "
                               "WHERE run_key = ANY($1::bigint[]) AND rank = $2 AND step = $3");
    db_register("frames_range", "SELECT step, seq_lo, n, frames FROM record_frames WHERE run_key = $1 AND rank = $2 "
                                "AND step >= $3 AND step <= $4 AND (step, seq_lo) > ($3, $5) "
                                "ORDER BY step, seq_lo LIMIT $6");
    db_register("frames_series", "SELECT step, seq_lo, n, frames FROM record_frames WHERE run_key = $1 AND rank = $2 "
                                 "AND kind = 1 AND step >= $3 AND step <= $4 AND (step, seq_lo) > ($3, $5) "
                                 "ORDER BY step, seq_lo LIMIT $6");
}

int frames_kind(const rec_record *r)
{
    if (r->flags & REC_STATE_MASK)
        return (r->flags & REC_STATE_RESTORED) ? FRAMES_KIND_RESTORED : FRAMES_KIND_SAVED;
    if ((r->flags & REC_HAS_VALUE) && r->occurrence == 0)
        return FRAMES_KIND_SERIES;
    if (!r->ext_len)
        return FRAMES_KIND_RECORDS;
    /* a communicator alone (every MPI collective's) does not make a record a possible shard */
    rec_ext x;
    rec_ext_of(r, &x);
    return x.has_shard || x.has_scales || x.chunk_bytes ? FRAMES_KIND_EXT : FRAMES_KIND_RECORDS;
}

static unsigned char *out_grow(frames_out *o, size_t n)
{
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap : 1 << 16;
        while (cap < o->len + n)
            cap *= 2;
        o->buf = xrealloc(o->buf, cap);
        o->cap = cap;
    }
    unsigned char *at = o->buf + o->len;
    o->len += n;
    return at;
}

static size_t seg_new(frames_out *o, int64_t step, uint64_t seq, int kind)
{
    if (o->n_seg == o->cap_seg) {
        o->cap_seg = o->cap_seg ? 2 * o->cap_seg : 32;
        o->seg = xrealloc(o->seg, o->cap_seg * sizeof(*o->seg));
    }
    o->seg[o->n_seg] = (frames_seg){.step = step, .seq_lo = seq, .kind = kind, .off = o->len};
    return o->n_seg++;
}

void frames_cut(const srv_batch *b, frames_out *o)
{
    size_t i = 0;
    while (i < b->n) {
        /* a run of records of one step: its records segments, then its series segments */
        size_t j = i + 1;
        while (j < b->n && b->recs[j].step == b->recs[i].step)
            j++;
        for (int kind = 0; kind < FRAMES_KINDS; kind++) {
            size_t cur = SIZE_MAX, cost = 0;
            for (size_t k = i; k < j; k++) {
                const rec_record *r = &b->recs[k];
                if (frames_kind(r) != kind)
                    continue;
                size_t flen = rec_encoded_size(r), c = frames_lz4_cost(r);
                int full = cur == SIZE_MAX ||
                           (compressed ? o->seg[cur].len + flen > FRAMES_SEG_LZ4_MAX || cost + c > FRAMES_SEG_LZ4_BUDGET
                                       : o->seg[cur].len + flen > FRAMES_SEG_MAX);
                if (full) {
                    cur = seg_new(o, r->step, r->seq, kind);
                    cost = 0;
                }
                cost += c;
                unsigned char *p = out_grow(o, flen);
                if (b->body && !b->reframe)
                    memcpy(p, b->body + b->frame_off[k], flen); /* as it arrived, its CRC checked */
                else
                    rec_encode(r, p);
                o->seg[cur].n++;
                o->seg[cur].len += flen;
            }
        }
        i = j;
    }
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

unsigned char *frames_bytea_array(const frames_out *o, size_t *len)
{
    size_t n = 20 + 4 * o->n_seg + o->len;
    unsigned char *a = xmalloc(n), *p = a;
    put_be32(p, o->n_seg ? 1 : 0); /* ndim */
    put_be32(p + 4, 0);            /* no NULLs */
    put_be32(p + 8, 17);           /* element type: bytea */
    p += 12;
    if (o->n_seg) {
        put_be32(p, (uint32_t)o->n_seg);
        put_be32(p + 4, 1); /* lower bound */
        p += 8;
        for (size_t i = 0; i < o->n_seg; i++) {
            put_be32(p, (uint32_t)o->seg[i].len);
            memcpy(p + 4, o->buf + o->seg[i].off, o->seg[i].len);
            p += 4 + o->seg[i].len;
        }
    }
    *len = (size_t)(p - a);
    return a;
}

void frames_seg_arrays(const frames_out *o, char *out[4])
{
    for (int a = 0; a < 4; a++) {
        char *s = xmalloc(o->n_seg * 22 + 3);
        size_t len = 0;
        s[len++] = '{';
        for (size_t i = 0; i < o->n_seg; i++) {
            const frames_seg *g = &o->seg[i];
            int64_t v = a == 0 ? g->step : a == 1 ? (int64_t)g->seq_lo : a == 2 ? g->n : g->kind;
            len += (size_t)sprintf(s + len, "%s%" PRId64, i ? "," : "", v);
        }
        s[len++] = '}';
        s[len] = 0;
        out[a] = s;
    }
}

void frames_out_release(frames_out *o)
{
    free(o->seg);
    free(o->buf);
    memset(o, 0, sizeof(*o));
}

void frame_set_release(frame_set *s)
{
    for (size_t i = 0; i < s->n_results; i++)
        PQclear(s->results[i]);
    free(s->results);
    free(s->recs);
    free(s->run_key);
    free(s->words);
    free(s->word_off);
    memset(s, 0, sizeof(*s));
}

static void keep_result(frame_set *s, PGresult *r)
{
    if (s->n_results == s->cap_results) {
        s->cap_results = s->cap_results ? 2 * s->cap_results : 8;
        s->results = xrealloc(s->results, s->cap_results * sizeof(void *));
    }
    s->results[s->n_results++] = r;
}

static int64_t be64(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | u[i];
    return (int64_t)v;
}

static int32_t be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (int32_t)((uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3]);
}

/* add_rec - append a decoded record (its words copied into the set). */
static void add_rec(frame_set *s, int64_t run_key, const rec_record *r)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->recs = xrealloc(s->recs, s->cap * sizeof(*s->recs));
        s->run_key = xrealloc(s->run_key, s->cap * sizeof(int64_t));
        s->word_off = xrealloc(s->word_off, s->cap * sizeof(size_t));
    }
    size_t ew = ((size_t)r->ext_len + 7) / 8; /* the extension bytes sit in the reader's scratch too */
    size_t nw = (size_t)r->n_inputs + r->n_chunks + ew;
    if (s->n_words + nw > s->cap_words) {
        while (s->n_words + nw > s->cap_words)
            s->cap_words = s->cap_words ? 2 * s->cap_words : 1024;
        s->words = xrealloc(s->words, s->cap_words * sizeof(uint64_t));
    }
    if (r->n_inputs)
        memcpy(s->words + s->n_words, r->inputs, r->n_inputs * sizeof(uint64_t));
    if (r->n_chunks)
        memcpy(s->words + s->n_words + r->n_inputs, r->chunks, r->n_chunks * sizeof(uint64_t));
    if (r->ext_len)
        memcpy(s->words + s->n_words + r->n_inputs + r->n_chunks, r->ext, r->ext_len);
    s->recs[s->n] = *r;
    s->run_key[s->n] = run_key;
    s->word_off[s->n] = s->n_words;
    s->n_words += nw;
    s->n++;
}

/* Which records of a segment a read keeps. */
typedef struct rec_filter {
    const char *const *names; /* NULL: every record */
    int n_names;
} rec_filter;

static int keeps(const rec_filter *f, const rec_record *r)
{
    if (!f || !f->names)
        return 1;
    if (frames_kind(r) != FRAMES_KIND_SERIES)
        return 0;
    for (int i = 0; i < f->n_names; i++)
        if (strlen(f->names[i]) == r->name_len && memcmp(f->names[i], r->name, r->name_len) == 0)
            return 1;
    return 0;
}

/* decode_seg - append the records of one stored segment (kept by `f`). Returns 0, or -1 with `err` when a frame
 * fails its checks (bit rot: nothing stored is trusted unchecked). */
static int decode_seg(frame_set *s, int64_t run_key, uint32_t rank, int64_t step, const char *p, size_t len,
                      const rec_filter *f, char *err, size_t cap)
{
    rec_reader rd;
    rec_record r;
    int got;
    rec_reader_frames(&rd, p, len, rank);
    while ((got = rec_reader_next(&rd, &r)) == 1)
        if (keeps(f, &r))
            add_rec(s, run_key, &r);
    if (got < 0)
        abort(); /* out of memory: the server's policy (server/core/xalloc.h) */
    int rc = 0;
    if (rd.status != REC_OK) {
        snprintf(err, cap, "stored records of run %" PRId64 " rank %u step %" PRId64 " are damaged: %s at byte %zu: %s",
                 run_key, rank, step, rec_status_name(rd.status), rd.err_off, rd.err);
        rc = FRAMES_DAMAGED;
    }
    rec_reader_release(&rd);
    return rc;
}

/* finish - point every record's inputs and chunks into the final words array. */
static void finish(frame_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        rec_record *r = &s->recs[i];
        r->inputs = r->n_inputs ? s->words + s->word_off[i] : NULL;
        r->chunks = r->n_chunks ? s->words + s->word_off[i] + r->n_inputs : NULL;
        r->ext = r->ext_len ? (const unsigned char *)(s->words + s->word_off[i] + r->n_inputs + r->n_chunks) : NULL;
    }
}

typedef struct sort_key {
    int64_t a;
    uint64_t b;
    size_t i;
} sort_key;

static int cmp_key(const void *pa, const void *pb)
{
    const sort_key *x = pa, *y = pb;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* reorder - put records [from, s->n) in the order of `k` (their indices, sorted). */
static void reorder(frame_set *s, size_t from, sort_key *k)
{
    size_t n = s->n - from;
    if (n == 0)
        return;
    rec_record *r = xmalloc(n * sizeof(*r));
    int64_t *rk = xmalloc(n * sizeof(*rk));
    size_t *wo = xmalloc(n * sizeof(*wo));
    for (size_t i = 0; i < n; i++) {
        r[i] = s->recs[k[i].i];
        rk[i] = s->run_key[k[i].i];
        wo[i] = s->word_off[k[i].i];
    }
    memcpy(s->recs + from, r, n * sizeof(*r));
    memcpy(s->run_key + from, rk, n * sizeof(*rk));
    memcpy(s->word_off + from, wo, n * sizeof(*wo));
    free(r);
    free(rk);
    free(wo);
}

/* sort_tail - sort records [from, s->n) by (a, seq), a = the run's position in `keys` (NULL: 0 for all). */
static void sort_tail(frame_set *s, size_t from, const int64_t *keys, int nkeys)
{
    size_t n = s->n - from;
    if (n < 2)
        return;
    sort_key *k = xmalloc(n * sizeof(*k));
    int sorted = 1;
    for (size_t i = 0; i < n; i++) {
        int64_t a = 0;
        for (int j = 0; keys && j < nkeys; j++)
            if (keys[j] == s->run_key[from + i]) {
                a = j;
                break;
            }
        k[i] = (sort_key){.a = a, .b = s->recs[from + i].seq, .i = from + i};
        if (i && cmp_key(&k[i - 1], &k[i]) > 0)
            sorted = 0;
    }
    if (!sorted) {
        qsort(k, n, sizeof(*k), cmp_key);
        reorder(s, from, k);
    }
    free(k);
}

int64_t frames_be64(const char *p)
{
    return be64(p);
}

int32_t frames_be32(const char *p)
{
    return be32(p);
}

int16_t frames_be16(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (int16_t)((uint16_t)u[0] << 8 | u[1]);
}

int frames_step_result(frame_set *out, void *res, int sel, int key, int fr, const int64_t *keys, int nkeys,
                       uint32_t rank, int64_t step, char *err, size_t cap)
{
    PGresult *r = res;
    keep_result(out, r);
    size_t from = out->n;
    for (int i = 0; i < PQntuples(r); i++) {
        if (frames_be16(PQgetvalue(r, i, sel)) != 0)
            continue;
        int rc = decode_seg(out, be64(PQgetvalue(r, i, key)), rank, step, PQgetvalue(r, i, fr),
                            (size_t)PQgetlength(r, i, fr), NULL, err, cap);
        if (rc < 0)
            return rc;
    }
    sort_tail(out, from, keys, nkeys);
    finish(out);
    return 0;
}

int frames_read_step(const int64_t *keys, int nkeys, uint32_t rank, int64_t step, frame_set *out, char *err, size_t cap)
{
    char *arr = xmalloc((size_t)nkeys * 22 + 3), rk[16], st[32];
    size_t len = 0;
    arr[len++] = '{';
    for (int i = 0; i < nkeys; i++)
        len += (size_t)sprintf(arr + len, "%s%" PRId64, i ? "," : "", keys[i]);
    arr[len++] = '}';
    arr[len] = 0;
    snprintf(rk, sizeof(rk), "%u", rank);
    snprintf(st, sizeof(st), "%" PRId64, step);
    const char *p[] = {arr, rk, st};
    PGresult *r = db_exec_bin("frames_step", 3, p, err, cap);
    free(arr);
    if (!r)
        return -1;
    keep_result(out, r);
    size_t from = out->n;
    for (int i = 0; i < PQntuples(r); i++) {
        int rc = decode_seg(out, be64(PQgetvalue(r, i, 0)), rank, step, PQgetvalue(r, i, 4),
                            (size_t)PQgetlength(r, i, 4), NULL, err, cap);
        if (rc < 0)
            return rc;
    }
    sort_tail(out, from, keys, nkeys);
    finish(out);
    return 0;
}

/* One fetched segment, not decoded yet. */
typedef struct pending_seg {
    int64_t step;
    int n;
    const char *p;
    size_t len;
} pending_seg;

/* scan - read segments of (key, rank) in (step, seq_lo) order with statement `stmt` (frames_range or
 * frames_series), keep the records `f` keeps, in (step, seq) order, skipping `offset` and stopping at `limit`.
 * Whole steps are read, so that the order within a step is exact. */
static int scan(const char *stmt, int64_t key, uint32_t rank, int64_t from, int64_t to, long long offset,
                long long limit, const rec_filter *f, frame_set *out, char *err, size_t cap)
{
    char ks[32], rk[16], fs[32], ts[32], qs[32], ls[16];
    snprintf(ks, sizeof(ks), "%" PRId64, key);
    snprintf(rk, sizeof(rk), "%u", rank);
    snprintf(ls, sizeof(ls), "%d", FETCH_SEGS);
    int64_t last_step = from;
    long long last_seq = -1;
    long long skip = offset;
    pending_seg *segs = NULL;
    size_t n_segs = 0, cap_segs = 0;
    int rc = -1;
    for (;;) {
        snprintf(fs, sizeof(fs), "%" PRId64, last_step);
        snprintf(ts, sizeof(ts), "%" PRId64, to);
        snprintf(qs, sizeof(qs), "%lld", last_seq);
        const char *p[] = {ks, rk, fs, ts, qs, ls};
        PGresult *r = db_exec_bin(stmt, 6, p, err, cap);
        if (!r)
            goto out_free;
        keep_result(out, r);
        int rows = PQntuples(r);
        for (int i = 0; i < rows; i++) {
            if (n_segs == cap_segs) {
                cap_segs = cap_segs ? 2 * cap_segs : FETCH_SEGS;
                segs = xrealloc(segs, cap_segs * sizeof(*segs));
            }
            segs[n_segs++] = (pending_seg){.step = be64(PQgetvalue(r, i, 0)),
                                           .n = be32(PQgetvalue(r, i, 2)),
                                           .p = PQgetvalue(r, i, 3),
                                           .len = (size_t)PQgetlength(r, i, 3)};
        }
        if (rows > 0) {
            last_step = be64(PQgetvalue(r, rows - 1, 0));
            last_seq = be64(PQgetvalue(r, rows - 1, 1));
        }
        /* decode whole steps (all but the last step fetched, unless nothing more comes) */
        int done = rows < FETCH_SEGS;
        size_t upto = n_segs;
        if (!done)
            while (upto > 0 && segs[upto - 1].step == last_step)
                upto--;
        size_t i = 0;
        while (i < upto) {
            size_t j = i;
            long long cnt = 0;
            while (j < upto && segs[j].step == segs[i].step)
                cnt += segs[j++].n;
            if (!f && skip >= cnt) { /* a whole step before the page: not decoded */
                skip -= cnt;
                i = j;
                continue;
            }
            size_t first = out->n;
            for (size_t k = i; k < j; k++)
                if ((rc = decode_seg(out, key, rank, segs[k].step, segs[k].p, segs[k].len, f, err, cap)) < 0)
                    goto out_free;
            sort_tail(out, first, NULL, 0);
            if (skip > 0 && out->n > first) { /* drop the records before the page */
                size_t drop = (size_t)skip < out->n - first ? (size_t)skip : out->n - first;
                memmove(out->recs + first, out->recs + first + drop, (out->n - first - drop) * sizeof(*out->recs));
                memmove(out->run_key + first, out->run_key + first + drop, (out->n - first - drop) * sizeof(int64_t));
                memmove(out->word_off + first, out->word_off + first + drop, (out->n - first - drop) * sizeof(size_t));
                out->n -= drop;
                skip -= (long long)drop;
            }
            i = j;
            if ((long long)out->n >= limit)
                break;
        }
        if (upto < n_segs) /* keep the last step's segments for the next fetch (none: segs may be NULL) */
            memmove(segs, segs + upto, (n_segs - upto) * sizeof(*segs));
        n_segs -= upto;
        if (done || (long long)out->n >= limit)
            break;
    }
    if ((long long)out->n > limit)
        out->n = (size_t)limit;
    finish(out);
    rc = 0;
out_free:
    free(segs);
    return rc;
}

int frames_read_range(int64_t key, uint32_t rank, int64_t from, int64_t to, long long offset, long long limit,
                      frame_set *out, char *err, size_t cap)
{
    return scan("frames_range", key, rank, from, to, offset, limit, NULL, out, err, cap);
}

int frames_read_series(int64_t key, uint32_t rank, const char *const *names, int n_names, long long limit,
                       frame_set *out, char *err, size_t cap)
{
    rec_filter f = {.names = names, .n_names = n_names};
    return scan("frames_series", key, rank, INT64_MIN, INT64_MAX, 0, limit, &f, out, err, cap);
}

int frames_points_next(int64_t key, uint32_t rank, int64_t to, int64_t *step, long long *seq, frame_set *out, char *err,
                       size_t cap)
{
    char ks[32], rk[16], fs[32], ts[32], qs[32], ls[16];
    snprintf(ks, sizeof(ks), "%" PRId64, key);
    snprintf(rk, sizeof(rk), "%u", rank);
    snprintf(fs, sizeof(fs), "%" PRId64, *step);
    snprintf(ts, sizeof(ts), "%" PRId64, to);
    snprintf(qs, sizeof(qs), "%lld", *seq);
    snprintf(ls, sizeof(ls), "%d", FRAMES_POINTS_SEGS);
    const char *p[] = {ks, rk, fs, ts, qs, ls};
    PGresult *r = db_exec_bin("frames_series", 6, p, err, cap);
    if (!r)
        return -1;
    keep_result(out, r);
    int rows = PQntuples(r);
    for (int i = 0; i < rows; i++) { /* segments come in (step, seq_lo) order; a rank's seq only grows */
        int rc = decode_seg(out, key, rank, be64(PQgetvalue(r, i, 0)), PQgetvalue(r, i, 3),
                            (size_t)PQgetlength(r, i, 3), NULL, err, cap);
        if (rc < 0)
            return rc;
    }
    if (rows > 0) {
        *step = be64(PQgetvalue(r, rows - 1, 0));
        *seq = be64(PQgetvalue(r, rows - 1, 1));
    }
    finish(out);
    return rows;
}

int frames_rows(frame_set *out, void *res, int key, int rank_col, int step_col, int fr, int (*keep)(const rec_record *),
                char *err, size_t cap)
{
    PGresult *r = res;
    keep_result(out, r);
    for (int i = 0; i < PQntuples(r); i++) {
        size_t from = out->n;
        int rc = decode_seg(out, be64(PQgetvalue(r, i, key)), (uint32_t)be32(PQgetvalue(r, i, rank_col)),
                            be64(PQgetvalue(r, i, step_col)), PQgetvalue(r, i, fr), (size_t)PQgetlength(r, i, fr), NULL,
                            err, cap);
        if (rc < 0)
            return rc;
        if (keep) { /* drop what the caller does not want (the set is in decode order until finish) */
            size_t to = from;
            for (size_t k = from; k < out->n; k++)
                if (keep(&out->recs[k])) {
                    out->recs[to] = out->recs[k];
                    out->run_key[to] = out->run_key[k];
                    out->word_off[to] = out->word_off[k];
                    to++;
                }
            out->n = to;
        }
    }
    finish(out);
    return 0;
}
