/* hold.c - digest streaming's ring: the records of recent steps this rank holds back, in memory, then in the spool,
 * sent when lockstepd asks for a step. */
#include "agent/hold.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned long long step_key(int64_t step)
{
    return (unsigned long long)step ^ (1ULL << 63); /* sorts like the signed step */
}

void hold_init(hold_ring *h, const rec_header *tmpl, size_t mem_cap, size_t disk_cap)
{
    memset(h, 0, sizeof(*h));
    h->hdr = *tmpl;
    h->hdr.kind = REC_KIND_BATCH;
    h->hdr.flags |= REC_HDR_HELD;
    h->hdr_len = rec_header_size(&h->hdr);
    h->mem_cap = mem_cap;
    h->disk_cap = disk_cap;
}

static void block_free(hold_block *b)
{
    if (b) {
        free(b->buf);
        free(b);
    }
}

/* blocks_file - write the `n` blocks from `first` on (a list) to the spool as one file. 0 or -1. */
static int blocks_file(const hold_block *first, size_t n, const spool *sp, size_t *written)
{
    size_t len = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    const hold_block *b = first;
    for (size_t i = 0; i < n; i++, b = b->next) {
        len += 12 + b->len;
        lo = b->step < lo ? b->step : lo;
        hi = b->step > hi ? b->step : hi;
    }
    unsigned char *buf = malloc(len ? len : 1), *p = buf;
    if (!buf)
        return -1;
    b = first;
    for (size_t i = 0; i < n; i++, b = b->next) {
        uint32_t l = (uint32_t)b->len;
        uint64_t st = (uint64_t)b->step;
        for (int k = 0; k < 4; k++)
            p[k] = (unsigned char)(l >> (8 * k));
        for (int k = 0; k < 8; k++)
            p[4 + k] = (unsigned char)(st >> (8 * k));
        memcpy(p + 12, b->buf, b->len);
        p += 12 + b->len;
    }
    char name[128], why[512];
    snprintf(name, sizeof(name), SPOOL_HELD_FMT, step_key(lo), step_key(hi), (unsigned long long)first->seq_lo);
    int rc = spool_put(sp, name, buf, len, why, sizeof(why));
    free(buf);
    if (rc == 0)
        *written = len;
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* trim_disk - the held files hold more than disk_cap bytes: delete the oldest steps' until they fit. */
static void trim_disk(hold_ring *h, const spool *sp)
{
    DIR *d = spool_list(sp);
    if (!d)
        return;
    char **names = NULL;
    size_t n = 0, cap = 0, total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, SPOOL_HELD_PREFIX, strlen(SPOOL_HELD_PREFIX)) != 0)
            continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            char **nn = realloc(names, nc * sizeof(*nn));
            if (!nn)
                break;
            names = nn;
            cap = nc;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    size_t *sizes = calloc(n + 1, sizeof(size_t));
    if (sizes) {
        qsort(names, n, sizeof(*names), cmp_name);
        for (size_t i = 0; i < n; i++) {
            long long size = spool_size(sp, names[i]);
            sizes[i] = size > 0 ? (size_t)size : 0;
            total += sizes[i];
        }
        for (size_t i = 0; i < n && total > h->disk_cap; i++) {
            spool_remove(sp, names[i]);
            total -= sizes[i];
        }
        h->disk = total;
    }
    free(sizes);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* take_oldest - detach blocks from the head until memory holds at most `keep` bytes (all of them: keep = 0);
 * returns how many, the first in *first (still linked to each other). */
static size_t take_oldest(hold_ring *h, size_t keep, hold_block **first)
{
    size_t n = 0;
    hold_block *last = NULL;
    *first = h->head;
    while (h->head && (keep == 0 || h->mem > keep)) {
        last = h->head;
        h->head = last->next;
        h->mem -= last->cap;
        n++;
    }
    if (last)
        last->next = NULL;
    if (!h->head)
        h->tail = NULL;
    return n;
}

/* spill - write `n` detached blocks to the spool as one file and free them (without a spool, or when the write
 * fails, their records are lost). Returns 0 or -1. */
static int spill(hold_ring *h, hold_block *first, size_t n, const spool *sp)
{
    size_t written = 0;
    int rc = n && sp && blocks_file(first, n, sp, &written) == 0 ? 0 : -1;
    if (rc == 0)
        h->disk += written;
    while (first) {
        hold_block *next = first->next;
        if (rc < 0)
            h->n_lost += first->count;
        block_free(first);
        first = next;
    }
    if (sp && h->disk > h->disk_cap)
        trim_disk(h, sp);
    return n ? rc : 0;
}

/* evict - memory holds more than mem_cap: the oldest closed blocks, down to half of it, go to the spool. */
static void evict(hold_ring *h, const spool *sp)
{
    if (h->mem <= h->mem_cap || !h->head)
        return;
    hold_block *first;
    size_t n = take_oldest(h, h->mem_cap / 2 ? h->mem_cap / 2 : 1, &first);
    spill(h, first, n, sp);
}

void hold_close(hold_ring *h, const spool *sp)
{
    hold_seal(h, sp, -1);
}

void hold_seal(hold_ring *h, const spool *sp, int64_t cover)
{
    hold_block *b = h->open;
    if (!b)
        return;
    h->open = NULL;
    b->cover = cover;
    rec_header hd = h->hdr;
    hd.batch_seq = HOLD_SEQ_BASE + b->seq_lo;
    rec_header_encode(&hd, b->buf);
    if (h->tail)
        h->tail->next = b;
    else
        h->head = b;
    h->tail = b;
    evict(h, sp);
}

int hold_add(hold_ring *h, const rec_record *r, const spool *sp)
{
    if (h->open && h->open->step != r->step)
        hold_close(h, sp);
    size_t need = rec_encoded_size(r);
    hold_block *b = h->open;
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b)
            goto out_lost;
        b->step = r->step;
        b->seq_lo = r->seq;
        b->cap = h->hdr_len + (need > 4096 ? need : 4096);
        b->buf = malloc(b->cap);
        if (!b->buf) {
            free(b);
            goto out_lost;
        }
        b->len = h->hdr_len;
        h->mem += b->cap;
        h->open = b;
    }
    if (b->len + need > b->cap) {
        size_t cap = b->cap * 2;
        while (cap < b->len + need)
            cap *= 2;
        unsigned char *nb = realloc(b->buf, cap);
        if (!nb)
            goto out_lost;
        h->mem += cap - b->cap;
        b->buf = nb;
        b->cap = cap;
    }
    rec_encode(r, b->buf + b->len);
    b->len += need;
    b->count++;
    h->n_held++;
    if (h->mem > h->mem_cap && h->head)
        evict(h, sp);
    return 0;
out_lost:
    h->n_lost++;
    return -1;
}

static int push_copy(hold_copy **v, long *n, const unsigned char *buf, size_t len)
{
    hold_copy *nv = realloc(*v, (size_t)(*n + 1) * sizeof(**v));
    if (!nv)
        return -1;
    *v = nv;
    unsigned char *c = malloc(len ? len : 1);
    if (!c)
        return -1;
    memcpy(c, buf, len);
    nv[*n].buf = c;
    nv[*n].len = len;
    (*n)++;
    return 0;
}

long hold_copy_step(hold_ring *h, int64_t step, int64_t posted, hold_copy **out)
{
    long n = 0;
    *out = NULL;
    for (hold_block *b = h->head; b; b = b->next)
        if (b->step == step && b->cover <= posted && push_copy(out, &n, b->buf, b->len) < 0) {
            hold_copies_free(*out, n);
            *out = NULL;
            return -1;
        }
    return n;
}

long hold_spool_step(const spool *sp, int64_t step, hold_copy **out, char *why, size_t cap)
{
    unsigned long long key = step_key(step);
    *out = NULL;
    DIR *d = spool_list(sp);
    if (!d) {
        snprintf(why, cap, "cannot list spool %s", sp->dir);
        return -1;
    }
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        unsigned long long lo, hi, seq;
        char tail[16];
        if (sscanf(e->d_name, SPOOL_HELD_PREFIX "%20llu-%20llu-%20llu.%15s", &lo, &hi, &seq, tail) != 4 ||
            strcmp(tail, "lsheld") != 0 || key < lo || key > hi)
            continue;
        unsigned char *buf;
        size_t len;
        if (spool_get(sp, e->d_name, &buf, &len, why, cap) <= 0)
            continue;
        for (size_t off = 0; off + 12 <= len;) {
            uint32_t l = 0;
            uint64_t st = 0;
            for (int k = 0; k < 4; k++)
                l |= (uint32_t)buf[off + k] << (8 * k);
            for (int k = 0; k < 8; k++)
                st |= (uint64_t)buf[off + 4 + k] << (8 * k);
            if (l > len - off - 12)
                break; /* torn: what came before is whole */
            if ((int64_t)st == step && push_copy(out, &n, buf + off + 12, l) < 0)
                break;
            off += 12 + (size_t)l;
        }
        free(buf);
    }
    closedir(d);
    return n;
}

long hold_spill_all(hold_ring *h, const spool *sp)
{
    hold_close(h, sp);
    hold_block *first;
    size_t n = take_oldest(h, 0, &first);
    return spill(h, first, n, sp) < 0 ? -1 : (long)n;
}

void hold_release(hold_ring *h)
{
    block_free(h->open);
    h->open = NULL;
    while (h->head) {
        hold_block *b = h->head;
        h->head = b->next;
        block_free(b);
    }
    h->tail = NULL;
    h->mem = 0;
}

void hold_copies_free(hold_copy *c, long n)
{
    for (long i = 0; i < n; i++)
        free(c[i].buf);
    free(c);
}
