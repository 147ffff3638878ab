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
            snprintf(why, cap, "its shards disagree on the dtype or the full shape (ranks %u and %u)",
                     pieces[0].rank, pieces[i].rank);
            return -1;
        }
    }
    qsort(pieces, n, sizeof(*pieces), by_offset);

    uint64_t total = x0.shard_total, at = 0, acc = 0;
    for (size_t i = 0; i < n; i++) {
        const shard_piece *p = &pieces[i];
        uint64_t end = p->offset + p->r->nbytes;
        if (p->offset > at) {
            snprintf(why, cap, "its shards leave a gap: bytes [%llu, %llu) are held by no rank (rank %u starts at %llu)",
                     (unsigned long long)at, (unsigned long long)p->offset, p->rank, (unsigned long long)p->offset);
            return -1;
        }
        if (p->offset < at) {
            snprintf(why, cap, "its shards overlap: rank %u holds [%llu, %llu) and rank %u starts at %llu", pieces[i - 1].rank,
                     (unsigned long long)pieces[i - 1].offset,
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
