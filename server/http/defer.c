/* defer.c - hand a request to a database worker: its connection waits suspended, so HTTP threads never block on a
 * commit. */
#include "server/http/defer.h"

#include <stdlib.h>

#include "server/core/clock.h"
#include "server/core/metrics.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"

typedef struct defer_job {
    struct defer_job *next;
    http_req *req;
    defer_group_fn gfn; /* run with the other queued jobs of the same gfn */
    void (*release)(void *arg);
    void *arg;
    double queued; /* clock_mono_s() when it was queued */
    int follows;   /* when it came, another was queued or being stored: requests are coming in at once */
} defer_job;

static void defer_loop(worker *w);
static worker workers = WORKER_INIT("database worker", defer_loop);
static defer_job *head, *tail; /* under workers.lock */
static int storing;            /* workers running a group now (under workers.lock) */
static double group_wait;      /* seconds a job may wait for others to share its commit (0: none) */
static double last_queued;     /* when the last job was queued (under workers.lock) */

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

/* queued_like - how many queued jobs have `gfn`, counting up to DEFER_GROUP_MAX. Called with the lock held. */
static size_t queued_like(defer_group_fn gfn)
{
    size_t n = 0;
    for (const defer_job *j = head; j && n < DEFER_GROUP_MAX; j = j->next)
        n += j->gfn == gfn;
    return n;
}

/* wait_for_work - with the lock held: wait until a job is queued (or the workers stop). Then, when requests come in
 * at once (another was queued or being stored when the first job came) or another worker is storing, let the first
 * job wait up to group_wait for others to share its transaction and commit, much as PostgreSQL's commit_delay does
 * with commit_siblings: a lone batch, or one client posting batch after batch, goes at once; a busy server commits
 * many in one. The wait ends early when nothing new came for a quarter of it: the senders are all waiting for their
 * replies (a handful of ranks sending their spools), and more waiting would only slow them. Returns with a job
 * queued, or with none when the workers stop. */
static void wait_for_work(worker *w)
{
    for (;;) {
        while (!head && !w->stopping)
            worker_wait_locked(w, -1);
        if (!head)
            return;
        double full = head->queued + group_wait, quiet = last_queued + group_wait / 4;
        double left = (full < quiet ? full : quiet) - clock_mono_s();
        if (left <= 0 || (!storing && !head->follows) || w->stopping || queued_like(head->gfn) >= DEFER_GROUP_MAX)
            return;
        worker_wait_locked(w, left);
    }
}

static void defer_loop(worker *w)
{
    defer_job *group[DEFER_GROUP_MAX];
    void *args[DEFER_GROUP_MAX];
    json_t *replies[DEFER_GROUP_MAX];
    int statuses[DEFER_GROUP_MAX];
    for (;;) {
        worker_lock(w);
        wait_for_work(w);
        defer_job *j = head;
        size_t n = 0;
        if (j) {
            head = j->next;
            if (!head)
                tail = NULL;
            j->next = NULL;
            n = take_group(j, group);
            storing++;
        }
        worker_unlock(w);
        if (!j)
            return; /* stopping, and the queue is empty */
        for (size_t i = 0; i < n; i++) {
            args[i] = group[i]->arg;
            replies[i] = NULL;
            statuses[i] = 0;
        }
        metrics_db_group(n);
        j->gfn(args, n, replies, statuses);
        worker_lock(w);
        storing--;
        if (head)
            worker_kick_locked(w); /* a job waiting for its group may go now */
        worker_unlock(w);
        for (size_t i = 0; i < n; i++)
            finish(group[i], replies[i], statuses[i]);
    }
}

int defer_start(int n, double group_wait_s)
{
    group_wait = group_wait_s;
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
    j->queued = clock_mono_s();
    worker_lock(&workers);
    j->follows = head || storing;
    last_queued = j->queued;
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
