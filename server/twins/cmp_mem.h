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

/* cmp_mem_configure - how long a group no batch came for is kept: `idle_s` (lockstepd's memory_idle_s, 120 s by
 * default) once every run memory holds of it ended on its ranks (cmp_mem_end_seen), or once memory was short of room
 * (a batch found it full since the last flush); otherwise up to MEM_KEEP_S (30 minutes), or idle_s if longer. A job
 * that pauses (a checkpoint written, an evaluation) or whose ranks end long after their last batch (a large job's
 * ends take minutes) finds its ranks still held, so their marks and ends need no look; a rerun after its reference
 * ended and was forgotten has that reference read from the database (cmp_mem_flush), as before. */
void cmp_mem_configure(double idle_s);

/* cmp_mem_end_seen - the end of run `run_key` on rank `rank` of group `group` came (stored): memory no longer waits
 * for it before it may forget the group. */
void cmp_mem_end_seen(const char *group, int rank, int64_t run_key);

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
 * others; forget the idle groups (cmp_mem_configure).
 * Blocks on PostgreSQL: one thread calls it. */
void cmp_mem_flush(cmp_mem_look_fn look);

/* cmp_mem_counted - 1 when memory holds rank `rank` of group `group` and counted there every record the database
 * holds: the runs `keys` (n of them) with `counts` records each, no other; its flush then marks the rank or hands it
 * to the look, so the sweep for lost notices leaves it alone. 0 otherwise (also for a rank only the look compares). */
int cmp_mem_counted(const char *group, int rank, const int64_t *keys, const int64_t *counts, size_t n);

/* cmp_mem_end_quiet - 1 when memory vouches that the end of run `run_key` on rank `rank` of group `group` completes
 * no step that differs, so that the look the end asks for need not run before its reply (it could ask the rank for
 * no record): `keys`, `counts` and `ended` are every run of the group (n of them), the records the database counts
 * for each on the rank (-1: none there) and whether it ended there, and memory counted exactly those; the rank has a
 * mark of memory's; and every step after that mark, up to the ending run's newest, is held alike by each run, or
 * not reached yet by one that has not ended (the look at its end compares it). 0 otherwise: the look runs at once,
 * as it must for a difference memory holds, a step it cannot see, a twin that ended short of a step, state blocks or
 * a first mark. */
int cmp_mem_end_quiet(const char *group, int rank, int64_t run_key, const int64_t *keys, const int64_t *counts,
                      const int *ended, size_t n);

/* cmp_mem_clear - forget everything (lockstepd stops). */
void cmp_mem_clear(void);

#endif /* SERVER_TWINS_CMP_MEM_H */
