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
#include "server/store/db_lit.h"

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
    db_register("frames_lz4", "SELECT lockstep_frames_compressed()");
    db_register("frames_step", "SELECT run_key, step, seq_lo, n, frames FROM record_frames "
                               "WHERE run_key = ANY($1::bigint[]) AND rank = $2 AND step = $3 UNION ALL "
                               "SELECT run_key, step, seq_lo, n, frames FROM record_frames "
                               "WHERE run_key = ANY($1::bigint[]) AND rank = $2 AND " FRAMES_SPANNING("$3"));
    /* a run's rank from step $3 (after seq_lo $5 there) to $4, and when $6, the segments spanning $3 */
    db_register("frames_range",
                "SELECT step, seq_lo, n, frames, step_last IS NOT NULL FROM record_frames "
                "WHERE run_key = $1 AND rank = $2 "
                "AND step >= $3 AND step <= $4 AND (step, seq_lo) > ($3, $5) UNION ALL "
                "SELECT step, seq_lo, n, frames, true FROM record_frames WHERE run_key = $1 AND rank = $2 "
                "AND $6::boolean AND " FRAMES_SPANNING("$3") " ORDER BY step, seq_lo LIMIT $7");
    db_register("frames_series",
                "SELECT step, seq_lo, n, frames, step_last IS NOT NULL FROM record_frames "
                "WHERE run_key = $1 AND rank = $2 "
                "AND kind = 1 AND step >= $3 AND step <= $4 AND (step, seq_lo) > ($3, $5) UNION ALL "
                "SELECT step, seq_lo, n, frames, true FROM record_frames WHERE run_key = $1 AND rank = $2 "
                "AND $6::boolean AND " FRAMES_SPANNING("$3") " ORDER BY step, seq_lo LIMIT $7");
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
    o->seg[o->n_seg] = (frames_seg){.step = step, .last = step, .seq_lo = seq, .kind = kind, .off = o->len};
    return o->n_seg++;
}

/* joins - whether a series point at `step` may join the open series segment `g`: its last step or the next one,
 * in one block (FRAMES_BLOCK_SHIFT), so that every step a segment spans has points in it (a held batch's segment
 * answers the record requests of the steps it spans: sql/functions/write.sql) */
static int joins(const frames_seg *g, int64_t step)
{
    return (step == g->last || (g->last < INT64_MAX && step == g->last + 1)) &&
           (step >> FRAMES_BLOCK_SHIFT) == (g->step >> FRAMES_BLOCK_SHIFT);
}

void frames_cut(const srv_batch *b, frames_out *o)
{
    /* kind by kind, so that each segment's frames lie together in o->buf; a segment takes the records of a run of
     * one step (series points: of steps in order within one block) until it is full */
    for (int kind = 0; kind < FRAMES_KINDS; kind++) {
        size_t cur = SIZE_MAX, cost = 0;
        for (size_t k = 0; k < b->n; k++) {
            const rec_record *r = &b->recs[k];
            if (frames_kind(r) != kind)
                continue;
            size_t flen = rec_encoded_size(r), c = frames_lz4_cost(r);
            int full = cur == SIZE_MAX ||
                       (kind == FRAMES_KIND_SERIES ? !joins(&o->seg[cur], r->step) : r->step != o->seg[cur].step) ||
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
            o->seg[cur].last = r->step;
        }
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

void frames_seg_arrays(const frames_out *o, char *out[FRAMES_SEG_ARRAYS])
{
    for (int a = 0; a < FRAMES_SEG_ARRAYS; a++) {
        db_lit l = {0};
        for (size_t i = 0; i < o->n_seg; i++) {
            const frames_seg *g = &o->seg[i];
            if (a == 4 && g->last == g->step)
                db_lit_null(&l);
            else
                db_lit_add(&l, a == 0   ? g->step
                               : a == 1 ? (int64_t)g->seq_lo
                               : a == 2 ? g->n
                               : a == 3 ? g->kind
                                        : g->last);
        }
        out[a] = (char *)db_lit_end(&l);
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

/* decode_seg - append the records of one stored segment of steps lo..hi (kept by `f`; a segment of series points
 * may hold others). Returns 0, or -1 with `err` when a frame
 * fails its checks (bit rot: nothing stored is trusted unchecked). */
static int decode_seg(frame_set *s, int64_t run_key, uint32_t rank, int64_t step, const char *p, size_t len,
                      const rec_filter *f, int64_t lo, int64_t hi, char *err, size_t cap)
{
    rec_reader rd;
    rec_record r;
    int got;
    rec_reader_frames(&rd, p, len, rank);
    while ((got = rec_reader_next(&rd, &r)) == 1)
        if (r.step >= lo && r.step <= hi && keeps(f, &r))
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

/* A record's place in a sort: (a, run, rank, b), then where it was (i). */
typedef struct sort_key {
    int64_t a, run;
    uint32_t rank;
    uint64_t b;
    size_t i;
} sort_key;

static int cmp_key(const void *pa, const void *pb)
{
    const sort_key *x = pa, *y = pb;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
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

/* sort_steps - sort records [from, s->n) by (step, run, rank, seq). */
static void sort_steps(frame_set *s, size_t from)
{
    size_t n = s->n - from;
    if (n < 2)
        return;
    sort_key *k = xmalloc(n * sizeof(*k));
    for (size_t i = 0; i < n; i++) {
        const rec_record *r = &s->recs[from + i];
        k[i] = (sort_key){r->step, s->run_key[from + i], r->rank, r->seq, from + i};
    }
    qsort(k, n, sizeof(*k), cmp_key);
    reorder(s, from, k);
    free(k);
}

void frames_sort_steps(frame_set *s)
{
    sort_steps(s, 0);
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
                            (size_t)PQgetlength(r, i, fr), NULL, step, step, err, cap);
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
                            (size_t)PQgetlength(r, i, 4), NULL, step, step, err, cap);
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
    int n, spans; /* spans: it may hold records of later steps */
    const char *p;
    size_t len;
} pending_seg;

/* read_steps - the records of (key, rank) in whole steps from step `from` (at most `to`) with statement `stmt`
 * (frames_range or frames_series), kept by `f`, appended to `out` in (step, seq) order: about `max_segs` segments,
 * more when step `from` alone holds more. The segments that span `from` come first; a step is whole once every
 * segment that starts at it or before has been read, so a read ends before the step of its last segment unless
 * nothing came after. While nothing is decoded yet, whole steps within `*skip` records are passed over undecoded
 * (when no segment read spans them); the rest of *skip is dropped from what was decoded. Sets *next to the step
 * after those read (*done when none is left) and *n_read to the segments read. Returns 0, or -1 or
 * FRAMES_DAMAGED with `err`. */
static int read_steps(const char *stmt, int64_t key, uint32_t rank, int64_t from, int64_t to, int max_segs,
                      const rec_filter *f, long long *skip, frame_set *out, int64_t *next, int *done, int *n_read,
                      char *err, size_t cap)
{
    char ks[32], rk[16], fs[32], ts[32], qs[32], ls[16];
    snprintf(ks, sizeof(ks), "%" PRId64, key);
    snprintf(rk, sizeof(rk), "%u", rank);
    snprintf(fs, sizeof(fs), "%" PRId64, from);
    snprintf(ts, sizeof(ts), "%" PRId64, to);
    snprintf(ls, sizeof(ls), "%d", max_segs);
    pending_seg *segs = NULL;
    size_t n_segs = 0, cap_segs = 0;
    long long seq = -1;
    int64_t hi = to; /* the last whole step */
    int rc = -1;
    *done = 1;
    for (int first = 1;;) {
        snprintf(qs, sizeof(qs), "%lld", seq);
        const char *p[] = {ks, rk, fs, ts, qs, first ? "t" : "f", ls};
        PGresult *r = db_exec_bin(stmt, 7, p, err, cap);
        if (!r)
            goto out_free;
        keep_result(out, r);
        int rows = PQntuples(r);
        for (int i = 0; i < rows; i++) {
            if (n_segs == cap_segs) {
                cap_segs = cap_segs ? 2 * cap_segs : (size_t)max_segs;
                segs = xrealloc(segs, cap_segs * sizeof(*segs));
            }
            segs[n_segs++] = (pending_seg){.step = be64(PQgetvalue(r, i, 0)),
                                           .n = be32(PQgetvalue(r, i, 2)),
                                           .spans = PQgetvalue(r, i, 4)[0] != 0,
                                           .p = PQgetvalue(r, i, 3),
                                           .len = (size_t)PQgetlength(r, i, 3)};
        }
        if (rows < max_segs)
            break;
        int64_t last = segs[n_segs - 1].step;
        if (last > from) { /* steps before `last` are whole */
            hi = last - 1;
            *next = last;
            *done = 0;
            break;
        }
        if (last < from) { /* segments that span `from` alone filled the read: read them all at once */
            n_segs = 0;
            max_segs = max_segs > INT_MAX / 2 ? INT_MAX : 2 * max_segs;
            snprintf(ls, sizeof(ls), "%d", max_segs);
            continue;
        }
        seq = be64(PQgetvalue(r, rows - 1, 1)); /* step `from` goes on: read on within it */
        first = 0;
    }
    *n_read = (int)n_segs;
    size_t first = out->n, i = 0;
    /* whole steps before the page, while nothing is decoded; a segment that starts before `from`, or one that
     * spans on (series points), ends it: its records of later steps count there */
    while (!f && *skip > 0 && i < n_segs && segs[i].step >= from && segs[i].step <= hi) {
        size_t j = i;
        long long cnt = 0;
        while (j < n_segs && segs[j].step == segs[i].step)
            cnt += segs[j++].n;
        if (cnt > *skip)
            break;
        int spans = 0;
        for (size_t k = i; k < j; k++)
            spans |= segs[k].spans;
        if (spans)
            break;
        *skip -= cnt;
        i = j;
    }
    for (; i < n_segs && segs[i].step <= hi; i++) /* the segments after `hi` are read again with their step */
        if ((rc = decode_seg(out, key, rank, segs[i].step, segs[i].p, segs[i].len, f, from, hi, err, cap)) < 0)
            goto out_free;
    sort_steps(out, first);
    if (*skip > 0 && out->n > first) { /* drop the records before the page */
        size_t drop = (size_t)*skip < out->n - first ? (size_t)*skip : out->n - first;
        memmove(out->recs + first, out->recs + first + drop, (out->n - first - drop) * sizeof(*out->recs));
        memmove(out->run_key + first, out->run_key + first + drop, (out->n - first - drop) * sizeof(int64_t));
        memmove(out->word_off + first, out->word_off + first + drop, (out->n - first - drop) * sizeof(size_t));
        out->n -= drop;
        *skip -= (long long)drop;
    }
    rc = 0;
out_free:
    free(segs);
    return rc;
}

/* scan - the records of (key, rank) from..to that `f` keeps, in (step, seq) order, skipping `offset` and stopping
 * at `limit`, read whole steps at a time (read_steps) so that the order within a step is exact. */
static int scan(const char *stmt, int64_t key, uint32_t rank, int64_t from, int64_t to, long long offset,
                long long limit, const rec_filter *f, frame_set *out, char *err, size_t cap)
{
    long long skip = offset;
    for (int64_t cur = from;;) {
        int64_t next = cur;
        int done, n_read, rc;
        if ((rc = read_steps(stmt, key, rank, cur, to, FETCH_SEGS, f, &skip, out, &next, &done, &n_read, err, cap)) < 0)
            return rc;
        if (done || (long long)out->n >= limit)
            break;
        cur = next;
    }
    if ((long long)out->n > limit)
        out->n = (size_t)limit;
    finish(out);
    return 0;
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

int frames_points_next(int64_t key, uint32_t rank, int64_t to, int64_t *from, frame_set *out, char *err, size_t cap)
{
    if (*from > to)
        return 0;
    long long skip = 0;
    int64_t next = *from;
    int done, n_read;
    int rc = read_steps("frames_series", key, rank, *from, to, FRAMES_POINTS_SEGS, NULL, &skip, out, &next, &done,
                        &n_read, err, cap);
    if (rc < 0)
        return rc;
    finish(out);
    *from = next;
    return !done;
}

int frames_rows(frame_set *out, void *res, int key, int rank_col, int step_col, int fr, int64_t lo, int64_t hi,
                int (*keep)(const rec_record *), char *err, size_t cap)
{
    PGresult *r = res;
    keep_result(out, r);
    for (int i = 0; i < PQntuples(r); i++) {
        size_t from = out->n;
        int rc = decode_seg(out, be64(PQgetvalue(r, i, key)), (uint32_t)be32(PQgetvalue(r, i, rank_col)),
                            be64(PQgetvalue(r, i, step_col)), PQgetvalue(r, i, fr), (size_t)PQgetlength(r, i, fr), NULL,
                            lo, hi, err, cap);
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
