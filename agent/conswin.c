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

/* send - one window's digest to `emit` (nothing when it holds no record). */
static void send(const cw_table *t, uint64_t key, uint32_t window, uint32_t n, uint64_t fold, uint32_t size,
                 uint32_t n_listed, const uint32_t *ranks, cw_emit_fn emit, void *arg)
{
    if (!n)
        return;
    cw_digest d = {.step = t->step,
                   .key = key,
                   .window = window,
                   .n = n,
                   .fold = fold,
                   .size = size,
                   .n_listed = n_listed,
                   .ranks = ranks};
    emit(arg, &d);
}

/* emit_window - the open window of `e` (no reservation open in it) to `emit` unless voided, and empty it. */
static void emit_window(const cw_table *t, cw_entry *e, cw_emit_fn emit, void *arg)
{
    if (!e->voided)
        send(t, e->key, (e->next - 1) / CONS_WINDOW, e->n, e->fold, e->size, e->n_listed, e->ranks, emit, arg);
    e->n = 0;
    e->fold = 0;
    e->voided = 0;
}

/* close_window - `e`'s open window takes no more places: sent now when no reservation in it is open, else kept in
 * the late list until its last one is filled (voided when the list is full), and emptied. */
static void close_window(cw_table *t, cw_entry *e, cw_emit_fn emit, void *arg)
{
    if (!e->open) {
        emit_window(t, e, emit, arg);
        return;
    }
    if (!e->voided) {
        if (t->n_late < CW_LATE_MAX && (t->late || (t->late = calloc(CW_LATE_MAX, sizeof(cw_late))))) {
            cw_late *l = &t->late[t->n_late++];
            *l = (cw_late){.key = e->key,
                           .window = (e->next - 1) / CONS_WINDOW,
                           .n = e->n,
                           .open = e->open,
                           .size = e->size,
                           .n_listed = e->n_listed,
                           .fold = e->fold};
            memcpy(l->ranks, e->ranks, e->n_listed * sizeof(uint32_t));
        } else {
            t->n_voided++;
        }
    }
    e->n = 0;
    e->fold = 0;
    e->open = 0;
    e->voided = 0;
}

void cw_flush(cw_table *t, cw_emit_fn emit, void *arg)
{
    if (t->slots && t->nkeys) {
        for (size_t i = 0; i < CW_SLOTS; i++) {
            cw_entry *e = &t->slots[i];
            if (!e->used)
                continue;
            if (!e->open)
                emit_window(t, e, emit, arg);
            else if (!e->voided) /* a reservation still open: this rank's copy is absent */
                t->n_voided++;
        }
        memset(t->slots, 0, CW_SLOTS * sizeof(cw_entry));
        t->nkeys = 0;
    }
    t->n_voided += t->n_late;
    t->n_late = 0;
    t->has_step = 0;
}

static int place(cw_table *t, int64_t step, uint64_t key, uint32_t size, const uint32_t *ranks, size_t n_ranks,
                 uint32_t *index, cw_emit_fn emit, void *arg, int reserve)
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
    } else if (e->next % CONS_WINDOW == 0) { /* the first place of a new window: the last one is complete */
        close_window(t, e, emit, arg);
    }
    *index = e->next++;
    e->open += reserve != 0;
    return 0;
}

int cw_place(cw_table *t, int64_t step, uint64_t key, uint32_t size, const uint32_t *ranks, size_t n_ranks,
             uint32_t *index, cw_emit_fn emit, void *arg)
{
    return place(t, step, key, size, ranks, n_ranks, index, emit, arg, 0);
}

int cw_reserve(cw_table *t, int64_t step, uint64_t key, uint32_t size, const uint32_t *ranks, size_t n_ranks,
               uint32_t *index, cw_emit_fn emit, void *arg)
{
    return place(t, step, key, size, ranks, n_ranks, index, emit, arg, 1);
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
    if (index % CONS_WINDOW == CONS_WINDOW - 1 && !e->open)
        emit_window(t, e, emit, arg);
}

/* open_window - the entry whose open window holds `index` of `key`, or NULL. */
static cw_entry *open_window(cw_table *t, uint64_t key, uint32_t index)
{
    cw_entry *e = t->slots ? slot_of(t, key) : NULL;
    return e && e->used && e->next > index && (e->next - 1) / CONS_WINDOW == index / CONS_WINDOW ? e : NULL;
}

/* late_window - the late window that holds `index` of `key`, or NULL. */
static cw_late *late_window(cw_table *t, uint64_t key, uint32_t index)
{
    for (size_t i = 0; i < t->n_late; i++)
        if (t->late[i].key == key && t->late[i].window == index / CONS_WINDOW)
            return &t->late[i];
    return NULL;
}

static void late_drop(cw_table *t, cw_late *l)
{
    *l = t->late[--t->n_late];
}

void cw_fill(cw_table *t, uint64_t key, uint32_t index, const rec_record *r, cw_emit_fn emit, void *arg)
{
    cw_entry *e = open_window(t, key, index);
    if (e && e->open) {
        e->fold = cons_fold(e->fold, r, index);
        e->n++;
        if (!--e->open && e->next % CONS_WINDOW == 0) /* its last place given, its last reservation filled */
            emit_window(t, e, emit, arg);
        return;
    }
    cw_late *l = late_window(t, key, index);
    if (!l)
        return; /* voided */
    l->fold = cons_fold(l->fold, r, index);
    l->n++;
    if (!--l->open) {
        send(t, l->key, l->window, l->n, l->fold, l->size, l->n_listed, l->ranks, emit, arg);
        late_drop(t, l);
    }
}

void cw_void(cw_table *t, uint64_t key, uint32_t index)
{
    cw_entry *e = open_window(t, key, index);
    if (e && e->open) {
        if (!e->voided)
            t->n_voided++;
        e->voided = 1;
        if (!--e->open && e->next % CONS_WINDOW == 0)
            emit_window(t, e, NULL, NULL); /* voided: sends nothing, empties it */
        return;
    }
    cw_late *l = late_window(t, key, index);
    if (l) {
        t->n_voided++;
        late_drop(t, l);
    }
}

void cw_release(cw_table *t)
{
    free(t->slots);
    free(t->late);
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
