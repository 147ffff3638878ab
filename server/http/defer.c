/* defer.c - hand a request to a database worker: its connection waits suspended, so HTTP threads never block on a
 * commit. */
#include "server/http/defer.h"

#include <stdlib.h>

#include "server/core/worker.h"
#include "server/core/xalloc.h"

typedef struct defer_job {
    struct defer_job *next;
    http_req *req;
    defer_group_fn gfn; /* run with the other queued jobs of the same gfn */
    void (*release)(void *arg);
    void *arg;
} defer_job;

static void defer_loop(worker *w);
static worker workers = WORKER_INIT("database worker", defer_loop);
static defer_job *head, *tail; /* under workers.lock */

/* finish - hand the reply to the request and resume its connection. */
static void finish(defer_job *j, json_t *reply, int status)
{
    if (j->release)
        j->release(j->arg);
    j->req->reply = reply;
    j->req->reply_status = status ? status : 500;
    MHD_resume_connection(j->req->conn);
    free(j);
}

/* take_group - unlink the queued jobs of `gfn` (after the first, already taken), up to DEFER_GROUP_MAX in all.
 * Called with the lock held. */
static size_t take_group(defer_job *first, defer_job **group)
{
    size_t n = 0;
    group[n++] = first;
    defer_job *prev = NULL, *j = head;
    while (j && n < DEFER_GROUP_MAX) {
        defer_job *next = j->next;
        if (j->gfn == first->gfn) {
            if (prev)
                prev->next = next;
            else
                head = next;
            if (tail == j)
                tail = prev;
            j->next = NULL;
            group[n++] = j;
        } else {
            prev = j;
        }
        j = next;
    }
    return n;
}

static void defer_loop(worker *w)
{
    defer_job *group[DEFER_GROUP_MAX];
    void *args[DEFER_GROUP_MAX];
    json_t *replies[DEFER_GROUP_MAX];
    int statuses[DEFER_GROUP_MAX];
    for (;;) {
        worker_lock(w);
        while (!head && !w->stopping)
            worker_wait_locked(w, -1);
        defer_job *j = head;
        size_t n = 0;
        if (j) {
            head = j->next;
            if (!head)
                tail = NULL;
            j->next = NULL;
            n = take_group(j, group);
        }
        worker_unlock(w);
        if (!j)
            return; /* stopping, and the queue is empty */
        for (size_t i = 0; i < n; i++) {
            args[i] = group[i]->arg;
            replies[i] = NULL;
            statuses[i] = 0;
        }
        j->gfn(args, n, replies, statuses);
        for (size_t i = 0; i < n; i++)
            finish(group[i], replies[i], statuses[i]);
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

int http_defer_grouped(http_req *req, defer_group_fn gfn, void (*release)(void *arg), void *arg)
{
    defer_job *j = xcalloc(1, sizeof(*j));
    j->req = req;
    j->gfn = gfn;
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
