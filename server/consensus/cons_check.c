/* cons_check.c - the consensus thread: the queue of runs batches touched, and the judging of their complete windows
 * (the first record of a divergence: cons_first.c). */
#include "server/consensus/cons_check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/consensus.h"
#include "server/consensus/cons_int.h"
#include "server/consensus/cons_mem.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/peers/forward.h"
#include "server/peers/lease.h"

#define SWEEP_S 10
#define WINDOW_HELD_S 120 /* a window memory holds this long at most (cons_mem.h) */

static void cons_loop(worker *w);
static worker thread = WORKER_INIT("consensus", cons_loop);
static int64_t *queue; /* run keys, under thread.lock: each run once */
static size_t n_queue, cap_queue;

void cons_on_divergence(void (*fn)(void))
{
    cons_tell_to(fn);
}

static void forwarded_cons(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s);
static void forwarded_cons_look(int64_t run_key);

void cons_register(void)
{
    cons_first_register();
    cons_look_register();
    cons_judge_register();
    /* what another lockstepd (or this one before a restart) left: unfinished rows */
    db_register("cons_sweep", "SELECT run_key FROM consensus_divergences WHERE name = '' AND idx IS NULL LIMIT 256");
    fwd_on_runs(forwarded_cons, forwarded_cons_look);
}

static void window_free(cons_window *w)
{
    free(w->c);
}

/* window_of - ready window `m` as judge() reads one (its copies allocated: free with window_free; `ranks` the
 * caller's buffer of REC_COMM_LIST_MAX * 11 + 3 bytes). */
static void window_of(const consmem_win *m, cons_window *w, char *ranks)
{
    w->at = m->at;
    w->size = m->size;
    w->n = m->n;
    w->c = xmalloc(m->n * sizeof(*w->c));
    for (uint32_t i = 0; i < m->n; i++)
        w->c[i] = (cons_copy){m->m[i].rank, m->m[i].n, m->m[i].fold};
    size_t len = (size_t)sprintf(ranks, "{");
    for (uint32_t i = 0; i < m->n_listed; i++)
        len += (size_t)sprintf(ranks + len, "%s%u", i ? "," : "", m->listed[i]);
    sprintf(ranks + len, "}");
    w->ranks = ranks;
    w->commit_s = m->commit_s;
}

static int by_run(const void *pa, const void *pb)
{
    const consmem_win *a = *(consmem_win *const *)pa, *b = *(consmem_win *const *)pb;
    return a->run < b->run ? -1 : a->run > b->run;
}

/* judge_taken - the windows memory found ready (cons_mem.h), judged and stored run by run, each run's in one
 * statement; a run whose disagreement was stored has its first record looked for at once. Returns how many windows
 * were judged, or -1 when a run's could not be stored (the database's look judges them: cons_look.c). */
static int judge_taken(void)
{
    size_t n = 0, cap = 0;
    consmem_win **all = NULL;
    for (consmem_win *w = consmem_take(), *next; w; w = next) {
        next = w->next;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            all = xrealloc(all, cap * sizeof(*all));
        }
        all[n++] = w;
    }
    if (n > 1)
        qsort(all, n, sizeof(*all), by_run); /* the take's order within a run does not matter: the first place wins */
    int rc = 0;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && all[j]->run == all[i]->run; j++)
            ;
        char ranks[REC_COMM_LIST_MAX * 11 + 3];
        cons_judging *jg = cons_judging_new(all[i]->run, j - i);
        for (size_t k = i; k < j; k++) {
            cons_window w;
            window_of(all[k], &w, ranks);
            cons_judging_add(jg, &w);
            window_free(&w);
        }
        if (cons_judging_end(jg) < 0) {
            cons_touch(all[i]->run); /* not stored: the next sweep's look judges them from the database */
            rc = -1;
        }
    }
    for (size_t i = 0; i < n; i++)
        consmem_free(all[i]);
    free(all);
    return rc < 0 ? -1 : (int)n;
}

/* judge_ready - judge_taken, one caller at a time: a rank's end (ingest_end) that finds nothing left to take then
 * waits for the windows another caller took, so its reply's record requests include the disagreement they hold. */
static pthread_mutex_t judging = PTHREAD_MUTEX_INITIALIZER;

static int judge_ready(void)
{
    pthread_mutex_lock(&judging);
    int rc = judge_taken();
    pthread_mutex_unlock(&judging);
    return rc;
}

int cons_check_run(int64_t run_key)
{
    cons_touch(run_key); /* the next sweep's database look reads what memory did not hold */
    if (judge_ready() < 0)
        return -1;
    int fin = cons_finish_run(run_key);
    if (fin > 0)
        cons_tell();
    return fin < 0 ? -1 : 0;
}

/* count_held - what memory holds, for /metrics. */
static void count_held(void)
{
    size_t held, digests;
    uint64_t unheld;
    consmem_stats(&held, &digests, &unheld);
    metrics_consensus_held(held, digests, unheld);
}

/* held - the digests into memory, on the instance that holds the run's consensus lease. */
static void held(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s)
{
    cons_touch(run_key);
    if (consmem_add(run_key, rank, d, n, commit_s) > 0)
        worker_kick(&thread);
    count_held();
}

/* mine - 1 when this instance judges run `run_key`'s consensus (server/peers/lease.h). */
static int mine(int64_t run_key)
{
    char name[48];
    return lease_run_name(run_key, name, sizeof(name)) && lease_mine(name);
}

void cons_digests_stored(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s)
{
    if (mine(run_key))
        held(run_key, rank, d, n, commit_s);
    else
        fwd_cons(run_key, rank, d, n, commit_s); /* the holder's memory judges the windows */
}

/* queue - the run into the consensus thread's queue. */
static void queue_run(int64_t run_key)
{
    worker_lock(&thread);
    size_t i = 0;
    while (i < n_queue && queue[i] != run_key)
        i++;
    if (i == n_queue) {
        if (n_queue == cap_queue) {
            cap_queue = cap_queue ? 2 * cap_queue : 64;
            queue = xrealloc(queue, cap_queue * sizeof(*queue));
        }
        queue[n_queue++] = run_key;
    }
    worker_kick_locked(&thread);
    worker_unlock(&thread);
}

void cons_notify(int64_t run_key)
{
    if (mine(run_key))
        queue_run(run_key);
    else
        fwd_cons_look(run_key);
}

/* forwarded_cons, forwarded_cons_look - what another instance forwarded, for the runs this one judges. */
static void forwarded_cons(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s)
{
    if (mine(run_key))
        held(run_key, rank, d, n, commit_s);
}

static void forwarded_cons_look(int64_t run_key)
{
    if (mine(run_key))
        queue_run(run_key);
}

/* sweep - the database's look at the runs touched since the last sweep, and queue the divergences the database says
 * are unfinished (another lockstepd's, or this one's before a restart). */
static void sweep(void)
{
    char err[512];
    cons_look_touched();
    PGresult *r = db_exec("cons_sweep", 0, NULL, err, sizeof(err));
    if (!r)
        return;
    for (int i = 0; i < PQntuples(r); i++)
        cons_notify(strtoll(PQgetvalue(r, i, 0), NULL, 10));
    PQclear(r);
}

static void cons_loop(worker *w)
{
    double next_sweep = 0;
    unsigned long comebacks = db_comebacks();
    for (;;) {
        judge_ready();
        count_held();
        if (clock_mono_s() >= next_sweep) {
            size_t gone = consmem_expire(WINDOW_HELD_S);
            if (gone)
                log_info("consensus: %zu windows incomplete after %d s are left to the database's look", gone,
                         WINDOW_HELD_S);
            if (db_comebacks() != comebacks) { /* PostgreSQL came back (a restart, a failover): look at every run */
                comebacks = db_comebacks();
                cons_look_recent();
            }
            sweep();
            next_sweep = clock_mono_s() + SWEEP_S;
        }
        worker_lock(w);
        int stop = w->stopping;
        if (!n_queue && !stop) /* a kick (a window ready, a run queued) or the sweep's time ends the wait */
            stop = worker_wait_locked(w, next_sweep - clock_mono_s() > 0 ? next_sweep - clock_mono_s() : 0.001);
        if (stop) {
            worker_unlock(w);
            return;
        }
        int64_t *take = queue;
        size_t n = n_queue;
        queue = NULL;
        n_queue = cap_queue = 0;
        worker_unlock(w);
        for (size_t i = 0; i < n; i++)
            cons_check_run(take[i]);
        free(take);
    }
}

int cons_start(void)
{
    cons_look_recent(); /* the runs a lockstepd before this one may have left windows of */
    return worker_start(&thread, 1);
}

void cons_stop(void)
{
    worker_stop(&thread);
    consmem_reset();
    cons_look_reset();
    free(queue);
    queue = NULL;
    n_queue = cap_queue = 0;
}
