/* cons_mem.c - consensus windows held in memory until their group has reported (cons_mem.h). */
#include "server/consensus/cons_mem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/xalloc.h"

#define BUCKETS_MIN 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static consmem_win **bucket; /* chains of held windows; all below under `lock` */
static size_t n_bucket, n_held, n_copies, copies_max = 4194304, windows_max = 262144;
static uint64_t dropped;
static consmem_win *ready_head, *ready_tail;

static size_t slot_of(int64_t run, const cons_place *at, size_t nb)
{
    uint64_t h = (uint64_t)run * 0x9E3779B97F4A7C15ULL;
    h ^= (uint64_t)at->step + 0x632BE59BD9B4E019ULL + (h << 6) + (h >> 2);
    h ^= at->key + (h << 6) + (h >> 2);
    h ^= (uint64_t)at->win * 0xD6E8FEB86659FD93ULL;
    h ^= h >> 29;
    return (size_t)(h & (nb - 1));
}

static int same_place(const consmem_win *w, int64_t run, const cons_place *at)
{
    return w->run == run && w->at.step == at->step && w->at.key == at->key && w->at.win == at->win;
}

/* grow - twice the buckets once the chains average more than 4 windows. */
static void grow(void)
{
    size_t nb = n_bucket ? 2 * n_bucket : BUCKETS_MIN;
    consmem_win **b = xcalloc(nb, sizeof(*b));
    for (size_t i = 0; i < n_bucket; i++)
        for (consmem_win *w = bucket[i], *next; w; w = next) {
            next = w->next;
            size_t s = slot_of(w->run, &w->at, nb);
            w->next = b[s];
            b[s] = w;
        }
    free(bucket);
    bucket = b;
    n_bucket = nb;
}

static int by_rank_then_seq(const void *pa, const void *pb)
{
    const consmem_copy *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* distinct - sort `w`'s members by rank and keep each rank's first digest; how many remain. */
static uint32_t distinct(consmem_win *w)
{
    qsort(w->m, w->n, sizeof(*w->m), by_rank_then_seq);
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->n; i++)
        if (!k || w->m[k - 1].rank != w->m[i].rank)
            w->m[k++] = w->m[i];
    n_copies -= w->n - k;
    w->n = k;
    return k;
}

/* unlink_win - take `w` (in chain `s`) out of the table. */
static void unlink_win(size_t s, consmem_win *w)
{
    consmem_win **p = &bucket[s];
    while (*p != w)
        p = &(*p)->next;
    *p = w->next;
    w->next = NULL;
    n_held--;
    n_copies -= w->n;
}

/* find_or_make - the window of `d` in run `run` (made when new and room is left); NULL when the table is full. */
static consmem_win *find_or_make(int64_t run, const srv_cons_digest *d, size_t *slot)
{
    cons_place at = {d->step, d->key, d->win};
    if (n_bucket == 0 || n_held > 4 * n_bucket)
        grow();
    size_t s = slot_of(run, &at, n_bucket);
    *slot = s;
    for (consmem_win *w = bucket[s]; w; w = w->next)
        if (same_place(w, run, &at))
            return w;
    if (n_copies >= copies_max || n_held >= windows_max)
        return NULL;
    consmem_win *w = xcalloc(1, sizeof(*w));
    w->run = run;
    w->at = at;
    w->size = d->size;
    w->n_listed = d->n_listed;
    memcpy(w->listed, d->ranks, d->n_listed * sizeof(uint32_t));
    w->born_s = clock_mono_s();
    w->next = bucket[s];
    bucket[s] = w;
    n_held++;
    return w;
}

/* same_group - `d` names the group `w` was made for. */
static int same_group(const consmem_win *w, const srv_cons_digest *d)
{
    return d->size == w->size && d->n_listed == w->n_listed &&
           memcmp(d->ranks, w->listed, d->n_listed * sizeof(uint32_t)) == 0;
}

size_t consmem_add(int64_t run, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s)
{
    size_t became = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n; i++) {
        if (d[i].size < 1 || d[i].size > CONSMEM_GROUP_MAX)
            continue;
        size_t s;
        consmem_win *w = find_or_make(run, &d[i], &s);
        if (!w || (n_copies >= copies_max && !w->mixed)) {
            dropped++;
            continue;
        }
        if (w->mixed)
            continue;
        if (!same_group(w, &d[i])) {
            w->mixed = 1; /* the database's look judges it as its consensus_comms row says */
            n_copies -= w->n;
            free(w->m);
            w->m = NULL;
            w->n = w->cap = 0;
            continue;
        }
        if (w->n == w->cap) {
            w->cap = w->cap ? 2 * w->cap : (w->size < 8 ? w->size : 8);
            w->m = xrealloc(w->m, w->cap * sizeof(*w->m));
        }
        w->m[w->n++] = (consmem_copy){.rank = rank, .n = d[i].n, .seq = w->seq++, .fold = d[i].fold};
        n_copies++;
        if (w->n >= w->size && distinct(w) >= w->size) {
            w->commit_s = commit_s;
            unlink_win(s, w);
            if (ready_tail)
                ready_tail->next = w;
            else
                ready_head = w;
            ready_tail = w;
            became++;
        }
    }
    pthread_mutex_unlock(&lock);
    return became;
}

consmem_win *consmem_take(void)
{
    pthread_mutex_lock(&lock);
    consmem_win *w = ready_head;
    ready_head = ready_tail = NULL;
    pthread_mutex_unlock(&lock);
    return w;
}

void consmem_free(consmem_win *w)
{
    if (w) {
        free(w->m);
        free(w);
    }
}

size_t consmem_expire(double age_s)
{
    size_t gone = 0;
    double before = clock_mono_s() - age_s;
    pthread_mutex_lock(&lock);
    for (size_t s = 0; s < n_bucket; s++)
        for (consmem_win *w = bucket[s], *next; w; w = next) {
            next = w->next;
            if (w->born_s <= before) {
                unlink_win(s, w);
                consmem_free(w);
                gone++;
            }
        }
    pthread_mutex_unlock(&lock);
    return gone;
}

void consmem_stats(size_t *windows, size_t *copies, uint64_t *dropped_out)
{
    pthread_mutex_lock(&lock);
    *windows = n_held;
    *copies = n_copies;
    *dropped_out = dropped;
    pthread_mutex_unlock(&lock);
}

void consmem_reset(void)
{
    pthread_mutex_lock(&lock);
    for (size_t s = 0; s < n_bucket; s++)
        for (consmem_win *w = bucket[s], *next; w; w = next) {
            next = w->next;
            consmem_free(w);
        }
    for (consmem_win *w = ready_head, *next; w; w = next) {
        next = w->next;
        consmem_free(w);
    }
    ready_head = ready_tail = NULL;
    free(bucket);
    bucket = NULL;
    n_bucket = n_held = n_copies = 0;
    dropped = 0;
    pthread_mutex_unlock(&lock);
}

void consmem_limit(size_t copies, size_t windows)
{
    pthread_mutex_lock(&lock);
    copies_max = copies;
    windows_max = windows;
    pthread_mutex_unlock(&lock);
}
