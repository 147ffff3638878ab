/* logical.c - a run's logical tensors from its shard records (cli/logical.h), through common/shard.h. */
#include "cli/logical.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lg_release(lg_run *lr)
{
    shard_logical_release(&lr->lg);
    free(lr->run.ranks);
    memset(lr, 0, sizeof(*lr));
}

int lg_build(const td_run *src, lg_run *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->run.path, sizeof(out->run.path), "%s", src->path);
    out->n_ranks = src->n_ranks;
    size_t n = 0, m = 0;
    for (size_t k = 0; k < src->n_ranks; k++)
        n += src->ranks[k].n;
    shard_src *all = malloc((n + 1) * sizeof(*all));
    out->run.ranks = calloc(1, sizeof(td_rank));
    if (!all || !out->run.ranks) {
        free(all);
        lg_release(out);
        snprintf(why, cap, "out of memory assembling the logical tensors of %s", src->path);
        return -1;
    }
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
                all[m++] = (shard_src){r, rk->hdr.rank, pos};
            else
                out->n_plain++;
            pos++;
        }
    }
    int rc = shard_logical_build(all, m, &out->lg, why, cap);
    free(all);
    if (rc < 0) {
        if (rc == -2)
            snprintf(why, cap, "out of memory assembling the logical tensors of %s", src->path);
        lg_release(out);
        return -1;
    }
    out->run.n_ranks = 1;
    out->tensors = out->lg.tensors;
    td_rank *lr = &out->run.ranks[0];
    if (src->n_ranks)
        lr->hdr = src->ranks[0].hdr;
    lr->hdr.rank = 0;
    snprintf(lr->path, sizeof(lr->path), "%s", src->path);
    lr->recs = out->lg.recs;
    lr->n = out->lg.n;
    lr->status = REC_OK;
    out->run.n_records = out->lg.n;
    return 0;
}
