/* defer.c - hand a request to a database worker: its connection waits suspended, so HTTP threads never block on a commit. */
#include "server/http/defer.h"

#include <stdlib.h>

#include "server/core/worker.h"
#include "server/core/xalloc.h"

typedef struct defer_job {
    struct defer_job *next;
    http_req *req;
    defer_fn fn;
    void (*release)(void *arg);
    void *arg;
} defer_job;

static void defer_loop(worker *w);
static worker workers = WORKER_INIT("database worker", defer_loop);
static defer_job *head, *tail; /* under workers.lock */

static void defer_loop(worker *w)
{
    for (;;) {
        worker_lock(w);
        while (!head && !w->stopping)
            worker_wait_locked(w, -1);
        defer_job *j = head;
        if (j) {
            head = j->next;
            if (!head)
                tail = NULL;
        }
        worker_unlock(w);
        if (!j)
            return; /* stopping, and the queue is empty */
        int status = 0;
        json_t *reply = j->fn(j->arg, &status);
        if (j->release)
            j->release(j->arg);
        j->req->reply = reply;
        j->req->reply_status = status ? status : 500;
        MHD_resume_connection(j->req->conn);
        free(j);
    }
}

int defer_start(int n)
{
    return worker_start(&workers, n);
}

void defer_stop(void)
{
    worker_stop(&workers);
}

int http_defer(http_req *req, defer_fn fn, void (*release)(void *arg), void *arg)
{
    defer_job *j = xcalloc(1, sizeof(*j));
    j->req = req;
    j->fn = fn;
    j->release = release;
    j->arg = arg;
    worker_lock(&workers);
    if (!workers.running || workers.stopping) {
        worker_unlock(&workers);
        free(j);
        return -1;
    }
    MHD_suspend_connection(req->conn); /* before a worker can resume it */
    if (tail)
        tail->next = j;
    else
        head = j;
    tail = j;
    worker_kick_locked(&workers);
    worker_unlock(&workers);
    return 0;
}
