/* shard.c - logical tensors from shard records (common/shard.h): tile check, summed LSFP-1, summed chunk partials. */
#include "common/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lsfp1.h"

static int by_offset(const void *pa, const void *pb)
{
    const shard_piece *a = pa, *b = pb;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

void shard_tensor_release(shard_tensor *t)
{
    free(t->chunks);
    t->chunks = NULL;
    t->n_chunks = 0;
}

int shard_assemble(shard_piece *pieces, size_t n, shard_tensor *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    if (!n) {
        snprintf(why, cap, "no shards");
        return -1;
    }
    rec_ext x0;
    rec_ext_of(pieces[0].r, &x0);
    for (size_t i = 0; i < n; i++) {
        rec_ext x;
        rec_ext_of(pieces[i].r, &x);
        if (!x.has_shard) {
            snprintf(why, cap, "rank %u recorded it as a whole tensor, not as a shard", pieces[i].rank);
            return -1;
        }
        pieces[i].offset = x.shard_offset;
        if (x.shard_total != x0.shard_total) {
            snprintf(why, cap, "its shards disagree on the total: rank %u says %llu bytes, rank %u %llu bytes",
                     pieces[0].rank, (unsigned long long)x0.shard_total, pieces[i].rank,
                     (unsigned long long)x.shard_total);
            return -1;
        }
        if (pieces[i].r->dtype != pieces[0].r->dtype || !rec_same_shape(pieces[i].r, pieces[0].r)) {
            snprintf(why, cap, "its shards disagree on the dtype or the full shape (ranks %u and %u)", pieces[0].rank,
                     pieces[i].rank);
            return -1;
        }
    }
    qsort(pieces, n, sizeof(*pieces), by_offset);

    uint64_t total = x0.shard_total, at = 0, acc = 0;
    for (size_t i = 0; i < n; i++) {
        const shard_piece *p = &pieces[i];
        uint64_t end = p->offset + p->r->nbytes;
        if (p->offset > at) {
            snprintf(why, cap,
                     "its shards leave a gap: bytes [%llu, %llu) are held by no rank (rank %u starts at %llu)",
                     (unsigned long long)at, (unsigned long long)p->offset, p->rank, (unsigned long long)p->offset);
            return -1;
        }
        if (p->offset < at) {
            snprintf(why, cap, "its shards overlap: rank %u holds [%llu, %llu) and rank %u starts at %llu",
                     pieces[i - 1].rank, (unsigned long long)pieces[i - 1].offset,
                     (unsigned long long)(pieces[i - 1].offset + pieces[i - 1].r->nbytes), p->rank,
                     (unsigned long long)p->offset);
            return -1;
        }
        rec_ext x;
        rec_ext_of(p->r, &x);
        acc += x.shard_acc;
        at = end;
    }
    if (at != total) {
        snprintf(why, cap, "its shards leave a gap: bytes [%llu, %llu) at the end are held by no rank",
                 (unsigned long long)at, (unsigned long long)total);
        return -1;
    }

    out->acc = acc;
    out->nbytes = total;
    out->fp = fp_finish(acc, total);
    out->dtype = pieces[0].r->dtype;
    out->ndim = pieces[0].r->ndim;
    memcpy(out->shape, pieces[0].r->shape, sizeof(out->shape));
    out->pieces = pieces;
    out->n_pieces = n;

    /* The whole's chunk partials, when every shard carries those of its span. */
    size_t nc = fp_chunk_count(total);
    if (nc <= 1 || nc > REC_MAX_CHUNKS)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t first;
        size_t span = fp_chunk_span(pieces[i].offset, pieces[i].r->nbytes, FP_CHUNK_BYTES, &first);
        if (pieces[i].r->n_chunks != span || rec_chunk_bytes(pieces[i].r) != FP_CHUNK_BYTES)
            return 0; /* the fingerprint stands; only the chunk of a difference is unknown */
    }
    out->chunks = calloc(nc, sizeof(uint64_t));
    if (!out->chunks)
        return -2;
    out->n_chunks = (uint32_t)nc;
    for (size_t i = 0; i < n; i++) {
        uint64_t first;
        size_t span = fp_chunk_span(pieces[i].offset, pieces[i].r->nbytes, FP_CHUNK_BYTES, &first);
        for (size_t c = 0; c < span; c++)
            out->chunks[first + c] += pieces[i].r->chunks[c];
    }
    return 0;
}

size_t shard_holders(const shard_tensor *t, uint64_t lo, uint64_t hi, uint32_t *ranks, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_pieces && n < max; i++) {
        const shard_piece *p = &t->pieces[i];
        if (p->offset < hi && p->offset + p->r->nbytes > lo)
            ranks[n++] = p->rank;
    }
    return n;
}

void shard_as_record(const shard_tensor *t, rec_record *out)
{
    const rec_record *f = t->pieces[0].r;
    memset(out, 0, sizeof(*out));
    out->seq = f->seq;
    out->step = f->step;
    out->t_ns = f->t_ns;
    out->name = f->name;
    out->name_len = f->name_len;
    out->occurrence = f->occurrence;
    out->level = f->level;
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    memcpy(out->shape, t->shape, sizeof(out->shape));
    out->nbytes = t->nbytes;
    out->fp = t->fp;
    out->chunks = t->chunks;
    out->n_chunks = t->n_chunks;
    if (t->n_pieces == 1 && (f->flags & REC_HAS_VALUE)) { /* a one-element tensor kept its value bits */
        out->value = f->value;
        out->flags = REC_HAS_VALUE;
    }
}

static int key_cmp(const rec_record *a, const rec_record *b)
{
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    if (c)
        return c;
    if (a->name_len != b->name_len)
        return a->name_len < b->name_len ? -1 : 1;
    return a->occurrence < b->occurrence ? -1 : a->occurrence > b->occurrence;
}

static int src_by_key(const void *pa, const void *pb)
{
    const shard_src *a = pa, *b = pb;
    int c = key_cmp(a->r, b->r);
    if (c)
        return c;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* A tensor's place in the program order. */
typedef struct order {
    int64_t step;
    size_t pos;
    size_t idx; /* into the tensors in key order */
} order;

static int by_order(const void *pa, const void *pb)
{
    const order *a = pa, *b = pb;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

void shard_logical_release(shard_logical *l)
{
    for (size_t i = 0; l->tensors && i < l->n; i++)
        shard_tensor_release(&l->tensors[i]);
    free(l->tensors);
    free(l->recs);
    free(l->pieces);
    memset(l, 0, sizeof(*l));
}

int shard_logical_build(shard_src *in, size_t n, shard_logical *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    out->pieces = malloc((n + 1) * sizeof(*out->pieces));
    shard_tensor *tmp = calloc(n + 1, sizeof(*tmp));
    order *ord = malloc((n + 1) * sizeof(*ord));
    int rc = -2;
    size_t nt = 0;
    if (!out->pieces || !tmp || !ord)
        goto out_free;
    qsort(in, n, sizeof(*in), src_by_key);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && key_cmp(in[j].r, in[i].r) == 0)
            j++;
        shard_piece *ps = out->pieces + i;
        for (size_t k = i; k < j; k++)
            ps[k - i] = (shard_piece){.r = in[k].r, .rank = in[k].rank};
        char w[300];
        int got = shard_assemble(ps, j - i, &tmp[nt], w, sizeof(w));
        if (got == -2)
            goto out_free;
        if (got < 0) {
            snprintf(why, cap, "tensor \"%.*s\" (occurrence %u) at step %lld cannot be assembled: %s",
                     (int)in[i].r->name_len, in[i].r->name, in[i].r->occurrence, (long long)in[i].r->step, w);
            out->bad = in[i].r;
            rc = -1;
            goto out_free;
        }
        ord[nt] = (order){in[i].r->step, in[i].pos, nt}; /* in[i]: the lowest rank, by the sort */
        nt++;
        i = j;
    }
    qsort(ord, nt, sizeof(*ord), by_order);
    out->tensors = malloc((nt + 1) * sizeof(*out->tensors));
    out->recs = malloc((nt + 1) * sizeof(*out->recs));
    if (!out->tensors || !out->recs)
        goto out_free;
    for (size_t i = 0; i < nt; i++) {
        out->tensors[i] = tmp[ord[i].idx];
        shard_as_record(&out->tensors[i], &out->recs[i]);
    }
    out->n = nt;
    nt = 0; /* owned by `out` now */
    rc = 0;
out_free:
    for (size_t i = 0; tmp && i < nt; i++)
        shard_tensor_release(&tmp[i]);
    free(tmp);
    free(ord);
    return rc;
}
