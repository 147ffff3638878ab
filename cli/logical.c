/* logical.c - a run's logical tensors from its shard records (cli/logical.h). */
#include "cli/logical.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One shard record of the source run, with where it sits in its rank's step. */
typedef struct src_shard {
    const rec_record *r;
    uint32_t rank;
    size_t pos; /* index among its rank's records of its step */
} src_shard;

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

static int by_key(const void *pa, const void *pb)
{
    const src_shard *a = pa, *b = pb;
    int c = key_cmp(a->r, b->r);
    if (c)
        return c;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* A tensor's place in the program order. */
typedef struct order {
    int64_t step;
    uint32_t rank; /* the lowest rank holding a shard */
    size_t pos;
    size_t idx; /* into the unsorted tensors */
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

void lg_release(lg_run *lr)
{
    if (lr->tensors && lr->run.n_ranks)
        for (size_t i = 0; i < lr->run.ranks[0].n; i++)
            shard_tensor_release(&lr->tensors[i]);
    if (lr->run.ranks)
        free(lr->run.ranks[0].recs);
    free(lr->run.ranks);
    free(lr->tensors);
    free(lr->pieces);
    memset(lr, 0, sizeof(*lr));
}

int lg_build(const td_run *src, lg_run *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->run.path, sizeof(out->run.path), "%s", src->path);
    out->n_ranks = src->n_ranks;
    size_t n = 0;
    for (size_t k = 0; k < src->n_ranks; k++)
        n += src->ranks[k].n;
    src_shard *all = malloc((n + 1) * sizeof(*all));
    out->pieces = malloc((n + 1) * sizeof(*out->pieces));
    out->tensors = calloc(n + 1, sizeof(*out->tensors));
    order *ord = malloc((n + 1) * sizeof(*ord));
    shard_tensor *tmp = calloc(n + 1, sizeof(*tmp));
    out->run.ranks = calloc(1, sizeof(td_rank));
    rec_record *recs = NULL;
    size_t m = 0, nt = 0;
    if (!all || !out->pieces || !out->tensors || !ord || !tmp || !out->run.ranks)
        goto out_oom;
    out->run.n_ranks = 1;

    for (size_t k = 0; k < src->n_ranks; k++) {
        const td_rank *rk = &src->ranks[k];
        int64_t cur = INT64_MIN;
        size_t pos = 0;
        for (size_t i = 0; i < rk->n; i++) {
            const rec_record *r = &rk->recs[i];
            if (rec_is_state(r)) {
                out->n_state++;
                continue;
            }
            if (r->step != cur) {
                cur = r->step;
                pos = 0;
            }
            rec_ext x;
            rec_ext_of(r, &x);
            if (x.has_shard)
                all[m++] = (src_shard){r, rk->hdr.rank, pos};
            else
                out->n_plain++;
            pos++;
        }
    }
    qsort(all, m, sizeof(*all), by_key);

    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && key_cmp(all[j].r, all[i].r) == 0)
            j++;
        shard_piece *ps = out->pieces + i;
        for (size_t k = i; k < j; k++)
            ps[k - i] = (shard_piece){.r = all[k].r, .rank = all[k].rank};
        char w[300];
        int rc = shard_assemble(ps, j - i, &tmp[nt], w, sizeof(w));
        if (rc == -2)
            goto out_oom;
        if (rc < 0) {
            snprintf(why, cap, "tensor \"%.*s\" (occurrence %u) at step %lld cannot be assembled: %s",
                     (int)all[i].r->name_len, all[i].r->name, all[i].r->occurrence, (long long)all[i].r->step, w);
            nt++;
            goto out_fail;
        }
        ord[nt] = (order){all[i].r->step, all[i].rank, all[i].pos, nt}; /* all[i]: the lowest rank, by sort */
        nt++;
        i = j;
    }
    qsort(ord, nt, sizeof(*ord), by_order);
    recs = malloc((nt + 1) * sizeof(*recs));
    if (!recs)
        goto out_oom;
    for (size_t i = 0; i < nt; i++) {
        out->tensors[i] = tmp[ord[i].idx];
        shard_as_record(&out->tensors[i], &recs[i]);
    }
    td_rank *lr = &out->run.ranks[0];
    if (src->n_ranks)
        lr->hdr = src->ranks[0].hdr;
    lr->hdr.rank = 0;
    snprintf(lr->path, sizeof(lr->path), "%s", src->path);
    lr->recs = recs;
    lr->n = nt;
    lr->status = REC_OK;
    out->run.n_records = nt;
    free(all);
    free(ord);
    free(tmp);
    return 0;

out_oom:
    snprintf(why, cap, "out of memory assembling the logical tensors of %s", src->path);
out_fail:
    for (size_t i = 0; tmp && i < nt; i++)
        shard_tensor_release(&tmp[i]);
    free(all);
    free(ord);
    free(tmp);
    free(recs);
    out->run.n_ranks = 0;
    lg_release(out);
    return -1;
}
