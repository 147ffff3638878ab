/* step.h - one step of one rank compared record by record (server/compare/step.c), for the comparison's threads (compare.c). */
#ifndef SERVER_COMPARE_STEP_H
#define SERVER_COMPARE_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "server/compare/compare.h"
#include "server/core/limits.h"

/* A rank a look found a differing step on, waiting for any thread to compare its records. */
typedef struct found_item {
    struct found_item *next;
    char group[256];
    int rank, nruns;
    int64_t keys[GROUP_MAX_RUNS];
    char ids[GROUP_MAX_RUNS][40];
    int64_t hi, upto, newest, step;
    double commit_s;
} found_item;

/* cmp_step_register - the prepared statements of this module. */
void cmp_step_register(void);

/* cmp_step_on_divergence - whom to tell about a stored divergence (cmp_on_divergence). */
void cmp_step_on_divergence(cmp_divergence_fn fn);

/* cmp_rank - compare rank `rank` of `group` (runs `keys`, their ids) from `first_step` on (the first step a look
 * found differing) up to `upto`, and mark the rank compared up to `hi` (or to the step before one whose records
 * agents hold back), unless a run newer than `newest` joined. Returns 1 when a divergence was stored or made
 * earlier, 0 when none, -1 on a database error. */
int cmp_rank(const char *group, int rank, int nruns, const int64_t *keys, char ids[][40], int64_t hi, int64_t upto,
             int64_t newest, int64_t first_step, double commit_s);

/* cmp_found_run - cmp_rank for a found item; on a database error the rank is queued again. */
int cmp_found_run(const found_item *f);

/* cmp_found_batch - the differing ranks `f` (n >= 2 of them, one look's: one group and one set of runs) compared
 * together in two round trips: their steps' segments and digests, then every divergence and mark. Ranks that need
 * more (an agent holds records back, or the step's records all match) are compared on their own after. The items
 * stay the caller's. */
void cmp_found_batch(found_item **f, size_t n);

#endif /* SERVER_COMPARE_STEP_H */
