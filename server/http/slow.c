/* slow.c - requests whose handler takes long run on a few threads of their own, their connection suspended meanwhile
 * (server/http/slow.h). */
#include "server/http/slow.h"

#include <stdlib.h>

#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/http/reply.h"

typedef struct slow_job {
    struct slow_job *next;
    http_req *req;
    slow_fn fn;
    void (*release)(void *arg);
    void *arg;
} slow_job;

static void slow_loop(worker *w);
static worker workers = WORKER_INIT("slow reads", slow_loop);
static slow_job *head, *tail; /* under workers.lock */

static void slow_loop(worker *w)
{
    for (;;) {
        worker_lock(w);
        while (!head && !w->stopping)
            worker_wait_locked(w, -1);
        slow_job *j = head;
        if (j) {
            head = j->next;
            if (!head)
                tail = NULL;
        }
        worker_unlock(w);
        if (!j)
            return; /* stopping, and the queue is empty */
        /* The handler answers as on an HTTP thread; http_reply keeps the answer for the connection's thread,
         * which alone may queue it (server.c). */
        j->req->hold_reply = 1;
        j->fn(j->req, j->arg);
        if (!j->req->held)
            http_reply_error(j->req, 500, "no answer", "the handler gave no answer", "see the lockstepd log");
        j->req->hold_reply = 0;
        if (j->release)
            j->release(j->arg);
        MHD_resume_connection(j->req->conn);
        free(j);
    }
}

int slow_start(int n)
{
    return worker_start(&workers, n);
}

void slow_stop(void)
{
    worker_stop(&workers);
}

int http_defer_slow(http_req *req, slow_fn fn, void (*release)(void *arg), void *arg)
{
    slow_job *j = xcalloc(1, sizeof(*j));
    *j = (slow_job){.req = req, .fn = fn, .release = release, .arg = arg};
    worker_lock(&workers);
    if (!workers.running || workers.stopping) {
        worker_unlock(&workers);
        free(j);
        return -1;
    }
    MHD_suspend_connection(req->conn); /* before a thread can resume it */
    if (tail)
        tail->next = j;
    else
        head = j;
    tail = j;
    worker_kick_locked(&workers);
    worker_unlock(&workers);
    return 0;
}
