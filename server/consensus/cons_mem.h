/* cons_mem.h - the consensus windows a lockstepd holds in memory as batches commit: a window (run, step, key,
 * window) collects its members' digests and is ready once as many distinct ranks as its group has reported, so that
 * the consensus thread judges it with no read of the database. PostgreSQL still holds every digest (the batch's own
 * statement, beside its step digest), and a window memory does not hold (a restart, a batch another lockstepd took,
 * a group whose members named different sizes, a full table) is judged by the sweep's database look (cons_look.c).
 * Not used outside server/consensus/ but by ingest and its unit test. */
#ifndef SERVER_CONSENSUS_CONS_MEM_H
#define SERVER_CONSENSUS_CONS_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "common/consensus.h"
#include "server/store/cons_batch.h"

#define CONSMEM_GROUP_MAX 65536 /* members of a group judged (the database's look judges no larger group either) */

/* One member's digest of a window, in the order it came (seq). */
typedef struct consmem_copy {
    uint32_t rank, n, seq;
    uint64_t fold;
} consmem_copy;

/* A ready window: its members sorted by rank, each once (the first digest a rank sent counts). */
typedef struct consmem_win {
    struct consmem_win *next; /* the table's chain, then the ready list */
    int64_t run;
    cons_place at;
    uint32_t size, n_listed, n, cap, seq;
    int mixed;       /* its digests named different groups (size or ranks): left to the database's look */
    double born_s;   /* clock_mono_s of its first digest */
    double commit_s; /* the commit time (epoch seconds) of the batch that completed it */
    uint32_t listed[REC_COMM_LIST_MAX];
    consmem_copy *m;
} consmem_win;

/* consmem_add - the `n` consensus digests `d` of a batch of run `run`'s rank `rank`, committed at `commit_s`
 * (epoch seconds), into their windows. Returns how many windows became ready. Never blocks on the database. */
size_t consmem_add(int64_t run, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s);

/* consmem_take - the ready windows, oldest first, as a list the caller owns (free each with consmem_free). */
consmem_win *consmem_take(void);

/* consmem_free - one window taken. */
void consmem_free(consmem_win *w);

/* consmem_expire - drop windows whose first digest came more than `age_s` seconds ago (a member that never
 * reports; the database still holds what they had). Returns how many were dropped. */
size_t consmem_expire(double age_s);

/* consmem_stats - windows held (not ready) and member digests they hold; `dropped` counts digests not taken (a full
 * table) since the start. */
void consmem_stats(size_t *windows, size_t *copies, uint64_t *dropped);

/* consmem_reset - drop everything (tests, and lockstepd's stop). */
void consmem_reset(void);

/* consmem_limit - at most `copies` member digests and `windows` windows held in all, so that no job's digests
 * can exhaust lockstepd (tests; the defaults are 4,194,304 and 262,144: about 200 MB at most). */
void consmem_limit(size_t copies, size_t windows);

#endif /* SERVER_CONSENSUS_CONS_MEM_H */
