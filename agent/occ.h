/* occ.h - per-step occurrence counters: how often each record name was seen in the current step. */
#ifndef AGENT_OCC_H
#define AGENT_OCC_H

#include <stddef.h>
#include <stdint.h>

typedef struct occ_table {
    struct occ_slot *slots;
    size_t cap;   /* power of two */
    size_t used;  /* slots used in the current generation */
    uint32_t gen; /* bumped at each step; slots of older generations are free */
} occ_table;

/* occ_init - an empty table. Returns 0, or -1 when out of memory. */
int occ_init(occ_table *t);

/* occ_next - the occurrence number of `name` (len bytes) in the current step
 * (0 for its first record), counting this call. Returns -1 when out of
 * memory; the table is then unchanged. */
int64_t occ_next(occ_table *t, const char *name, size_t len);

/* occ_reset - forget every count: a new step begins. O(1). */
void occ_reset(occ_table *t);

/* occ_release - free the table. */
void occ_release(occ_table *t);

#endif /* AGENT_OCC_H */
