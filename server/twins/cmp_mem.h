/* cmp_mem.h - the comparison's memory: the recent step digests of every twin group's ranks, as this lockstepd's
 * batches commit, compared here; the steps found equal are marked in PostgreSQL in one statement a group, so that a
 * batch costs no look through the database (docs/server.md, "Twin comparison"). What memory cannot vouch for is
 * handed to the look (lockstep_cmp_ranks), which stays the authority. */
#ifndef SERVER_TWINS_CMP_MEM_H
#define SERVER_TWINS_CMP_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "server/store/batch.h"
#include "server/store/write.h"

/* cmp_mem_register - register this module's prepared statements. */
void cmp_mem_register(void);

/* cmp_mem_absorb - a batch of the run `run_key` of twin group `group`, rank `rank`, committed (stored here, or by
 * another lockstepd that forwarded it: forward.h): add its step sums (store_result's: `n` steps, `counted` records
 * added to the rank's progress) to the rank's step digests. Returns 1 when the look must see the rank now (a step
 * differs: its records are asked for while the agent runs; or memory cannot compare it: state blocks, too many
 * runs, memory full), else 0: the next cmp_mem_flush marks it or hands it
 * to the look (a run alone on the rank is compared with the twins that ended there, read from the database). */
int cmp_mem_absorb(const char *group, int64_t run_key, int rank, const store_step *steps, size_t n, int64_t counted);

/* cmp_mem_look_fn - told a rank the look must compare (memory found a differing step, could not vouch for the
 * database's state, or holds too little). */
typedef void (*cmp_mem_look_fn)(const char *group, int rank);

/* cmp_mem_flush - read the ended twins of ranks one run streams to (one statement a group), compare every rank
 * batches changed since the last flush over its runs' steps that all of them completed, mark those found equal (one
 * statement a group, under the ranks' locks, only where the database holds what memory counted), tell `look` the
 * others; forget groups idle for two minutes. Blocks on PostgreSQL: one thread calls it. */
void cmp_mem_flush(cmp_mem_look_fn look);

/* cmp_mem_counted - 1 when memory holds rank `rank` of group `group` and counted there every record the database
 * holds: the runs `keys` (n of them) with `counts` records each, no other; its flush then marks the rank or hands it
 * to the look, so the sweep for lost notices leaves it alone. 0 otherwise (also for a rank only the look compares). */
int cmp_mem_counted(const char *group, int rank, const int64_t *keys, const int64_t *counts, size_t n);

/* cmp_mem_clear - forget everything (lockstepd stops). */
void cmp_mem_clear(void);

#endif /* SERVER_TWINS_CMP_MEM_H */
