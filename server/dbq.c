/* dbq.c - database workers that store record batches while their HTTP connection waits suspended, so HTTP threads never block on a commit. */
#include "server/dbq.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/ingest.h"
#include "server/log.h"

typedef struct dbq_job {
    struct dbq_job *next;
    http_req *req;
    run_info run;
    srv_batch batch;
} dbq_job;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static dbq_job *head, *tail;
static int stopping, running, n_threads;
static pthread_t *threads;

static void *worker_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!head && !stopping)
            pthread_cond_wait(&cond, &lock);
        dbq_job *j = head;
        if (j) {
            head = j->next;
            if (!head)
                tail = NULL;
        }
        pthread_mutex_unlock(&lock);
        if (!j)
            break; /* stopping and the queue is empty */
        int status = 0;
        json_t *reply = ingest_store(&j->run, &j->batch, &status);
        batch_release(&j->batch);
        j->req->reply = reply;
        j->req->reply_status = status;
        MHD_resume_connection(j->req->conn);
        free(j);
    }
    return NULL;
}

int dbq_start(int workers)
{
    threads = calloc((size_t)workers, sizeof(*threads));
    if (!threads)
        return -1;
    for (n_threads = 0; n_threads < workers; n_threads++)
        if (pthread_create(&threads[n_threads], NULL, worker_main, NULL) != 0)
            break;
    if (n_threads == 0) {
        free(threads);
        threads = NULL;
        return -1;
    }
    running = 1;
    return 0;
}

int dbq_running(void)
{
    return running;
}

int dbq_submit(http_req *req, const run_info *run, srv_batch *b)
{
    if (!running)
        return -1;
    dbq_job *j = calloc(1, sizeof(*j));
    if (!j)
        abort();
    j->req = req;
    j->run = *run;
    j->batch = *b;
    memset(b, 0, sizeof(*b));
    MHD_suspend_connection(req->conn); /* before a worker can resume it */
    pthread_mutex_lock(&lock);
    if (tail)
        tail->next = j;
    else
        head = j;
    tail = j;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return 0;
}

void dbq_stop(void)
{
    if (!running)
        return;
    pthread_mutex_lock(&lock);
    stopping = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n_threads; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    threads = NULL;
    running = 0;
}
