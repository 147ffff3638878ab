/* conntrack.c - open connections, their phases and deadlines, and the watchdog that shuts down the slow ones
 * (server/http/conntrack.h). */
#include "server/http/conntrack.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"

struct conn_track {
    struct conn_track *prev, *next;
    int fd;
    enum conn_phase phase;
    double since; /* monotonic seconds the phase began */
    int shut;     /* already shut down by the watchdog */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the list, and every record's fields */
static struct conn_track *head;
static int header_limit, body_limit;

static void watch_loop(worker *w);
static worker watchdog = WORKER_INIT("connection watchdog", watch_loop);

void conntrack_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn_track *t = xcalloc(1, sizeof(*t));
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        t->fd = ci ? ci->connect_fd : -1;
        t->phase = CONN_HEADERS;
        t->since = clock_mono_s();
        pthread_mutex_lock(&lock);
        t->next = head;
        if (head)
            head->prev = t;
        head = t;
        pthread_mutex_unlock(&lock);
        *socket_context = t;
        return;
    }
    struct conn_track *t = *socket_context;
    if (!t)
        return;
    /* Called before libmicrohttpd closes the socket: once the record is off the list, the watchdog can no
     * longer reach this descriptor. */
    pthread_mutex_lock(&lock);
    if (t->prev)
        t->prev->next = t->next;
    else
        head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    pthread_mutex_unlock(&lock);
    free(t);
    *socket_context = NULL;
}

struct conn_track *conntrack_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void conntrack_phase(struct conn_track *t, enum conn_phase phase)
{
    if (!t)
        return;
    double now = clock_mono_s();
    pthread_mutex_lock(&lock);
    t->phase = phase;
    t->since = now;
    pthread_mutex_unlock(&lock);
}

/* sweep - shut down every connection past its phase's deadline. */
static void sweep(void)
{
    double now = clock_mono_s();
    int shut[2] = {0, 0};
    pthread_mutex_lock(&lock);
    for (struct conn_track *t = head; t; t = t->next) {
        if (t->shut || t->fd < 0 || t->phase == CONN_SERVER)
            continue;
        int limit = t->phase == CONN_HEADERS ? header_limit : body_limit;
        if (limit <= 0 || now - t->since <= limit)
            continue;
        shutdown(t->fd, SHUT_RDWR);
        t->shut = 1;
        shut[t->phase == CONN_BODY]++;
    }
    pthread_mutex_unlock(&lock);
    for (int k = 0; k < 2; k++)
        if (shut[k]) {
            metrics_conn_timeout(k == 0 ? MT_HEADERS : MT_BODY, (unsigned long)shut[k]);
            log_debug("closed %d connections that sent their %s too slowly", shut[k], k == 0 ? "headers" : "body");
        }
}

static void watch_loop(worker *w)
{
    for (;;) {
        worker_lock(w);
        int stop = worker_wait_locked(w, 0.5);
        worker_unlock(w);
        if (stop)
            return;
        sweep();
    }
}

int conntrack_start(int header_timeout_s, int body_timeout_s)
{
    header_limit = header_timeout_s;
    body_limit = body_timeout_s;
    return worker_start(&watchdog, 1);
}

void conntrack_stop(void)
{
    worker_stop(&watchdog);
}
