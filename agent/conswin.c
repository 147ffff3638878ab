/* conswin.c - a rank's consensus windows: places, folds and digests per (step, key) (agent/conswin.h). */
#include "agent/conswin.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void cw_init(cw_table *t)
{
    memset(t, 0, sizeof(*t));
}

/* slot_of - the entry of `key`, or the empty slot where it goes (NULL when the table is full). */
static cw_entry *slot_of(cw_table *t, uint64_t key)
{
    size_t i = (size_t)(key ^ key >> 29) & (CW_SLOTS - 1);
    for (size_t probe = 0; probe < CW_SLOTS; probe++, i = (i + 1) & (CW_SLOTS - 1))
        if (!t->slots[i].used || t->slots[i].key == key)
            return &t->slots[i];
    return NULL;
}

/* emit_window - the open window of `e` to `emit` (nothing when it holds no record). */
static void emit_window(const cw_table *t, cw_entry *e, cw_emit_fn emit, void *arg)
{
    if (!e->n)
        return;
    cw_digest d = {.step = t->step,
                   .key = e->key,
                   .window = (e->next - 1) / CONS_WINDOW,
                   .n = e->n,
                   .fold = e->fold,
                   .size = e->size,
                   .n_listed = e->n_listed,
                   .ranks = e->ranks};
    emit(arg, &d);
    e->n = 0;
    e->fold = 0;
}

void cw_flush(cw_table *t, cw_emit_fn emit, void *arg)
{
    if (t->slots && t->nkeys) {
        for (size_t i = 0; i < CW_SLOTS; i++)
            if (t->slots[i].used)
                emit_window(t, &t->slots[i], emit, arg);
        memset(t->slots, 0, CW_SLOTS * sizeof(cw_entry));
        t->nkeys = 0;
    }
    t->has_step = 0;
}

int cw_place(cw_table *t, int64_t step, uint64_t key, uint32_t size, const uint32_t *ranks, size_t n_ranks,
             uint32_t *index, cw_emit_fn emit, void *arg)
{
    if (t->has_step && t->step != step)
        cw_flush(t, emit, arg);
    t->step = step;
    t->has_step = 1;
    if (!t->slots && !(t->slots = calloc(CW_SLOTS, sizeof(cw_entry)))) {
        t->n_refused++;
        return -1;
    }
    cw_entry *e = slot_of(t, key);
    if (!e || (!e->used && t->nkeys == CW_KEYS_MAX)) {
        t->n_refused++;
        return -1;
    }
    if (!e->used) {
        e->used = 1;
        e->key = key;
        e->size = size;
        if (size <= REC_COMM_LIST_MAX && n_ranks == size && ranks) {
            memcpy(e->ranks, ranks, n_ranks * sizeof(uint32_t));
            qsort(e->ranks, n_ranks, sizeof(uint32_t), cmp_u32);
            e->n_listed = size;
        }
        t->nkeys++;
    }
    *index = e->next++;
    return 0;
}

void cw_fold(cw_table *t, uint64_t key, uint32_t index, const rec_record *r, cw_emit_fn emit, void *arg)
{
    if (!t->slots)
        return;
    cw_entry *e = slot_of(t, key);
    if (!e || !e->used)
        return;
    e->fold = cons_fold(e->fold, r, index);
    e->n++;
    if (index % CONS_WINDOW == CONS_WINDOW - 1)
        emit_window(t, e, emit, arg);
}

void cw_release(cw_table *t)
{
    free(t->slots);
    cw_init(t);
}

void cw_digest_record(const cw_digest *d, uint64_t seq, int64_t t_ns, rec_record *out, unsigned char *ext)
{
    memset(out, 0, sizeof(*out));
    out->seq = seq;
    out->step = d->step;
    out->t_ns = t_ns;
    out->nbytes = d->n;
    out->fp = d->fold;
    out->value = d->key;
    out->occurrence = d->window;
    out->flags = REC_CONSENSUS_DIGEST;
    out->dtype = LS_BYTES;
    out->name = REC_CONSENSUS_DIGEST_NAME;
    out->name_len = (uint16_t)strlen(REC_CONSENSUS_DIGEST_NAME);
    rec_ext x;
    memset(&x, 0, sizeof(x));
    x.has_comm = 1;
    x.comm_size = d->size;
    x.comm_nlisted = d->n_listed;
    x.comm_id = d->key;
    memcpy(x.comm_ranks, d->ranks, d->n_listed * sizeof(uint32_t));
    out->ext_len = (uint16_t)rec_ext_encode(&x, ext);
    out->ext = out->ext_len ? ext : NULL;
}
