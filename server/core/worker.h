/* worker.h - the one skeleton of lockstepd's background threads: start, a lock and condition, kick, timed wait, stop.
 *
 * A part (comparison, suspects, alert delivery, retention, the database workers) keeps its own queue
 * under the worker's lock and writes only its loop: wait for work, do it, repeat until
 * worker_stopping(). worker_stop() wakes every thread and joins them, so a stopped part has no thread
 * left that could touch what the next part to stop releases.
 */
#ifndef SERVER_CORE_WORKER_H
#define SERVER_CORE_WORKER_H

#include <pthread.h>

typedef struct worker worker;
struct worker {
    const char *name;        /* for log lines: "comparison", "alerts", ... */
    void (*loop)(worker *w); /* the thread's body; returns once worker_stopping(w) */
    pthread_mutex_t lock;    /* guards the part's own queue as well as the fields below */
    pthread_cond_t cond;
    int stopping, kicked, running, n;
    pthread_t *threads;
};

#define WORKER_INIT(name_, loop_)                                                                                      \
    {                                                                                                                  \
        .name = (name_), .loop = (loop_), .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER          \
    }

/* worker_start - start `nthreads` threads running w->loop. Returns 0, or -1
 * after logging when not one could start (a part that got some runs with those). */
int worker_start(worker *w, int nthreads);

/* worker_stop - ask the threads to stop, wake them and join them. Safe to
 * call when the worker never started, and twice. */
void worker_stop(worker *w);

/* worker_lock, worker_unlock - take and release w->lock. */
void worker_lock(worker *w);
void worker_unlock(worker *w);

/* worker_kick - wake one waiting thread (new work, or "look again now"); it
 * sees w->kicked. worker_kick_locked is the same with w->lock held. */
void worker_kick(worker *w);
void worker_kick_locked(worker *w);

/* worker_wait_locked - with w->lock held: sleep until kicked, stopping or
 * `seconds` have passed (forever when seconds < 0). Clears the kick.
 * Returns 1 when the worker is stopping, else 0. */
int worker_wait_locked(worker *w, double seconds);

/* worker_stopping - 1 once worker_stop was called (read under the lock). */
int worker_stopping(worker *w);

#endif /* SERVER_CORE_WORKER_H */
