/* worker.c - the one skeleton of lockstepd's background threads (server/core/worker.h). */
#include "server/core/worker.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"

static void *thread_main(void *arg)
{
    worker *w = arg;
    w->loop(w);
    return NULL;
}

int worker_start(worker *w, int nthreads)
{
    w->threads = xcalloc((size_t)nthreads, sizeof(*w->threads));
    w->stopping = 0;
    for (w->n = 0; w->n < nthreads; w->n++) {
        int e = pthread_create(&w->threads[w->n], NULL, thread_main, w);
        if (e != 0) {
            log_error("cannot start a %s thread: %s", w->name, strerror(e));
            break;
        }
    }
    if (w->n == 0) {
        free(w->threads);
        w->threads = NULL;
        return -1;
    }
    w->running = 1;
    return 0;
}

void worker_stop(worker *w)
{
    if (!w->running)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < w->n; i++)
        pthread_join(w->threads[i], NULL);
    free(w->threads);
    w->threads = NULL;
    w->n = 0;
    w->running = 0;
}

void worker_lock(worker *w)
{
    pthread_mutex_lock(&w->lock);
}

void worker_unlock(worker *w)
{
    pthread_mutex_unlock(&w->lock);
}

void worker_kick_locked(worker *w)
{
    w->kicked = 1;
    pthread_cond_signal(&w->cond);
}

void worker_kick(worker *w)
{
    pthread_mutex_lock(&w->lock);
    worker_kick_locked(w);
    pthread_mutex_unlock(&w->lock);
}

int worker_wait_locked(worker *w, double seconds)
{
    if (!w->kicked && !w->stopping) {
        if (seconds < 0) {
            pthread_cond_wait(&w->cond, &w->lock);
        } else if (seconds > 0) {
            struct timespec until = clock_deadline(seconds);
            pthread_cond_timedwait(&w->cond, &w->lock, &until);
        }
    }
    w->kicked = 0;
    return w->stopping;
}

int worker_stopping(worker *w)
{
    pthread_mutex_lock(&w->lock);
    int s = w->stopping;
    pthread_mutex_unlock(&w->lock);
    return s;
}
