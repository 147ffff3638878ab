/* consensus.c - bench/fleet's consensus digests of a simulated rank's step (consensus.h). */
#include "bench/fleet/consensus.h"

#include <stdlib.h>
#include <string.h>

#include "common/consensus.h"

/* comm_span - the first world rank and the size of communicator c of `rank`. */
static void comm_span(const fleet_cons *fc, uint32_t rank, int c, uint32_t *first, uint32_t *size)
{
    uint32_t block = c == 0 || c >= 20 ? fc->run_ranks : (uint32_t)4 << c;
    if (block >= fc->run_ranks) {
        *first = 0, *size = fc->run_ranks;
        return;
    }
    *first = rank / block * block;
    *size = *first + block <= fc->run_ranks ? block : fc->run_ranks - *first;
}

/* comm_key - the key of communicator c of `rank`, with its sorted world ranks into ranks[] when it lists them
 * (size <= REC_COMM_LIST_MAX); its size into *size. */
static uint64_t comm_key(const fleet_cons *fc, uint32_t rank, int c, uint32_t *ranks, uint32_t *size)
{
    uint32_t first;
    comm_span(fc, rank, c, &first, size);
    for (uint32_t i = 0; i < *size && *size <= REC_COMM_LIST_MAX; i++)
        ranks[i] = first + i;
    if (*size == fc->run_ranks)
        return fc->world_key;
    return cons_key(ranks, *size); /* listed: a block larger than the list is the whole run or not made */
}

void fleet_cons_init(fleet_cons *fc, int k, uint32_t run_ranks)
{
    memset(fc, 0, sizeof(*fc));
    fc->k = k;
    fc->run_ranks = run_ranks;
    if (k <= 0)
        return;
    uint32_t *all = malloc((size_t)run_ranks * sizeof(uint32_t));
    if (!all)
        abort();
    for (uint32_t i = 0; i < run_ranks; i++)
        all[i] = i;
    fc->world_key = cons_key(all, run_ranks);
    free(all);
}

void fleet_cons_place(const fleet_cons *fc, uint32_t rank, int j, rec_record *r, unsigned char *ext)
{
    uint32_t ranks[REC_COMM_LIST_MAX], size;
    rec_ext x;
    memset(&x, 0, sizeof(x));
    x.has_consensus = 1;
    x.consensus_key = comm_key(fc, rank, j % fc->k, ranks, &size);
    x.consensus_index = (uint32_t)(j / fc->k);
    r->ext_len = (uint16_t)rec_ext_encode(&x, ext);
    r->ext = ext;
}

int fleet_cons_add(const fleet_cons *fc, h_batch *b, uint32_t rank, const rec_record *colls, int n, uint64_t seq)
{
    int added = 0;
    for (int c = 0; c < fc->k && c < n; c++) {
        uint32_t ranks[REC_COMM_LIST_MAX], size;
        uint64_t key = comm_key(fc, rank, c, ranks, &size);
        int places = (n - c + fc->k - 1) / fc->k; /* records j = c, c + k, ... */
        for (int w = 0; w * CONS_WINDOW < places; w++) {
            uint64_t fold = 0;
            uint32_t folded = 0;
            for (int idx = w * CONS_WINDOW; idx < places && idx < (w + 1) * CONS_WINDOW; idx++, folded++)
                fold = cons_fold(fold, &colls[c + idx * fc->k], (uint32_t)idx);
            rec_ext x;
            memset(&x, 0, sizeof(x));
            x.has_comm = 1;
            x.comm_size = size;
            x.comm_nlisted = size <= REC_COMM_LIST_MAX ? size : 0;
            x.comm_id = key;
            memcpy(x.comm_ranks, ranks, x.comm_nlisted * sizeof(uint32_t));
            unsigned char ext[REC_EXT_ENCODED_MAX];
            rec_record d;
            memset(&d, 0, sizeof(d));
            d.seq = seq;
            d.step = colls[0].step;
            d.t_ns = colls[0].t_ns;
            d.nbytes = folded;
            d.fp = fold;
            d.value = key;
            d.occurrence = (uint32_t)w;
            d.flags = REC_CONSENSUS_DIGEST;
            d.dtype = LS_BYTES;
            d.name = REC_CONSENSUS_DIGEST_NAME;
            d.name_len = (uint16_t)strlen(REC_CONSENSUS_DIGEST_NAME);
            d.ext_len = (uint16_t)rec_ext_encode(&x, ext);
            d.ext = ext;
            h_batch_add(b, &d);
            added++;
        }
    }
    return added;
}
