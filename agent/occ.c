/* occ.c - per-step occurrence counters in an open-addressing table reset by generation. */
#include "agent/occ.h"

#include <stdlib.h>
#include <string.h>

#include "include/lockstep.h"

struct occ_slot {
    uint32_t gen;
    uint32_t count;
    uint64_t hash;
    uint16_t len;
    char name[LS_NAME_MAX];
};

static uint64_t hash_name(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

int occ_init(occ_table *t)
{
    memset(t, 0, sizeof(*t));
    t->cap = 64;
    t->gen = 1;
    t->slots = calloc(t->cap, sizeof(*t->slots));
    return t->slots ? 0 : -1;
}

static struct occ_slot *find(struct occ_slot *slots, size_t cap, uint32_t gen, uint64_t h, const char *name, size_t len)
{
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        struct occ_slot *s = &slots[i];
        if (s->gen != gen)
            return s;
        if (s->hash == h && s->len == len && memcmp(s->name, name, len) == 0)
            return s;
    }
}

static int grow(occ_table *t)
{
    size_t ncap = t->cap * 2;
    struct occ_slot *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        struct occ_slot *s = &t->slots[i];
        if (s->gen != t->gen)
            continue;
        *find(ns, ncap, t->gen, s->hash, s->name, s->len) = *s;
    }
    free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

int64_t occ_next(occ_table *t, const char *name, size_t len)
{
    if (!t->slots || len > LS_NAME_MAX)
        return -1;
    uint64_t h = hash_name(name, len);
    struct occ_slot *s = find(t->slots, t->cap, t->gen, h, name, len);
    if (s->gen == t->gen)
        return s->count++;
    if ((t->used + 1) * 4 > t->cap * 3) {
        if (grow(t) < 0)
            return -1;
        s = find(t->slots, t->cap, t->gen, h, name, len);
    }
    s->gen = t->gen;
    s->hash = h;
    s->len = (uint16_t)len;
    memcpy(s->name, name, len);
    s->count = 1;
    t->used++;
    return 0;
}

void occ_reset(occ_table *t)
{
    t->used = 0;
    if (++t->gen == 0) { /* wrapped: clear for real so no stale slot matches */
        memset(t->slots, 0, t->cap * sizeof(*t->slots));
        t->gen = 1;
    }
}

void occ_release(occ_table *t)
{
    free(t->slots);
    memset(t, 0, sizeof(*t));
}
