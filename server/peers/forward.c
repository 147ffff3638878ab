/* forward.c - forwards to the holders of the comparison leases (forward.h): a queue of JSON lines, sent by one
 * thread as notifications of at most FWD_PAYLOAD bytes, and a listener on the channel. */
#include "server/peers/forward.h"

#include "server/peers/fwd_line.h"

#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"

#define FWD_CHANNEL "lockstep_cmp"
#define FWD_PAYLOAD 7900          /* a notification's payload (PostgreSQL takes less than 8000 bytes) */
#define FWD_QUEUE_MAX (8u << 20)  /* bytes queued at most; past it, forwards are dropped */
#define FWD_SEND_MAX (512u << 10) /* bytes one statement sends at most */
#define FWD_GATHER_S 0.02         /* the sender waits this long after the first line, for more to share a send */

static void send_loop(worker *w);
static void listen_loop(worker *w);
static worker sender = WORKER_INIT("comparison forwards", send_loop);
static worker listener = WORKER_INIT("comparison forwards listener", listen_loop);
static char *queue; /* under sender.lock: lines, each ending in '\n' */
static size_t q_len, q_cap;
static fwd_handlers handlers; /* set before the listener starts */

void fwd_register(void)
{
    /* one transaction: the notifications are delivered at its commit, in order */
    db_register("fwd_send", "SELECT pg_notify('" FWD_CHANNEL "', x) FROM unnest(string_to_array($1, chr(30))) AS x");
}

/* enqueue - one JSON object as a line of the queue (freed). */
static void enqueue(json_t *o)
{
    char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    size_t n = line ? strlen(line) : 0;
    if (!line || n + 1 > FWD_PAYLOAD) { /* cannot be sent (a group name cannot make it this long) */
        free(line);
        metrics_forwarded(0, 0, 1);
        return;
    }
    worker_lock(&sender);
    if (q_len + n + 1 > FWD_QUEUE_MAX) {
        worker_unlock(&sender);
        free(line);
        metrics_forwarded(0, 0, 1);
        return;
    }
    if (q_len + n + 1 > q_cap) {
        q_cap = q_cap ? 2 * q_cap : 65536;
        while (q_cap < q_len + n + 1)
            q_cap *= 2;
        queue = xrealloc(queue, q_cap);
    }
    memcpy(queue + q_len, line, n);
    queue[q_len + n] = '\n';
    int first = q_len == 0;
    q_len += n + 1;
    if (first)
        worker_kick_locked(&sender);
    worker_unlock(&sender);
    free(line);
}

void fwd_sums(const char *group, int64_t run_key, int rank, const store_step *steps, size_t n, int64_t counted,
              int flags)
{
    size_t i = 0;
    do { /* FWD_STEPS_PER_LINE steps a line; the records counted go with the first */
        size_t k = n - i < FWD_STEPS_PER_LINE ? n - i : FWD_STEPS_PER_LINE;
        enqueue(fwd_line_sums(group, run_key, rank, steps + i, k, counted, flags));
        i += k;
        counted = 0;
    } while (i < n);
}

void fwd_look(const char *group, int rank)
{
    enqueue(fwd_line_look(group, rank));
}

void fwd_cons(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s)
{
    for (size_t i = 0; i < n; i += FWD_CONS_PER_LINE)
        enqueue(fwd_line_cons(run_key, rank, d + i, n - i < FWD_CONS_PER_LINE ? n - i : FWD_CONS_PER_LINE, commit_s));
}

void fwd_cons_look(int64_t run_key)
{
    enqueue(fwd_line_cons_look(run_key));
}

void fwd_on_groups(fwd_sums_fn sums, fwd_look_fn look)
{
    handlers.sums = sums;
    handlers.look = look;
}

void fwd_on_runs(fwd_cons_fn cons, fwd_cons_look_fn look)
{
    handlers.cons = cons;
    handlers.cons_look = look;
}

/* send_some - the lines of buf[0..len) as notifications, in statements of at most FWD_SEND_MAX bytes; those of a
 * statement that failed are dropped (counted). */
static void send_some(char *buf, size_t len)
{
    char *msg = xmalloc(FWD_SEND_MAX + FWD_PAYLOAD + 2);
    size_t at = 0;
    while (at < len) {
        size_t m = 0, payload = 0, lines = 0;
        while (at < len) {
            char *nl = memchr(buf + at, '\n', len - at);
            size_t n = (size_t)(nl - (buf + at)); /* every line ends in '\n' */
            if (payload && payload + 1 + n > FWD_PAYLOAD) {
                if (m + 1 + n > FWD_SEND_MAX)
                    break;
                msg[m++] = '\x1e'; /* the next notification */
                payload = 0;
            } else if (payload) {
                msg[m++] = '\n';
                payload++;
            }
            memcpy(msg + m, buf + at, n);
            m += n;
            payload += n;
            at += n + 1;
            lines++;
        }
        msg[m] = 0;
        char err[256];
        const char *p[] = {msg};
        PGresult *r = db_exec("fwd_send", 1, p, err, sizeof(err));
        if (r) {
            PQclear(r);
            metrics_forwarded(lines, 0, 0);
        } else {
            metrics_forwarded(0, 0, lines);
        }
    }
    free(msg);
}

static void send_loop(worker *w)
{
    for (;;) {
        worker_lock(w);
        while (!w->stopping && q_len == 0)
            worker_wait_locked(w, -1);
        if (!w->stopping)
            worker_wait_locked(w, FWD_GATHER_S); /* more forwards share this send */
        if (w->stopping) {
            worker_unlock(w);
            return;
        }
        char *buf = queue;
        size_t len = q_len;
        queue = NULL;
        q_len = q_cap = 0;
        worker_unlock(w);
        send_some(buf, len);
        free(buf);
    }
}

/* deliver - a notification's lines to the handlers. */
static void deliver(char *payload)
{
    for (char *line = payload; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        if (fwd_line_parse(line, &handlers) == 0)
            metrics_forwarded(0, 1, 0);
        else
            log_warn("a comparison forward does not parse: %.120s", line);
        line = nl ? nl + 1 : NULL;
    }
}

static void listen_loop(worker *w)
{
    PGconn *listening = NULL;
    while (!worker_stopping(w)) {
        PGconn *c = db_conn(); /* this thread's own connection: it reconnects after a failure, and listens again */
        if (!c) {
            listening = NULL;
            worker_lock(w);
            if (!w->stopping)
                worker_wait_locked(w, 1.0);
            worker_unlock(w);
            continue;
        }
        if (c != listening) {
            char err[256];
            if (db_listen(FWD_CHANNEL, err, sizeof(err)) < 0) {
                log_warn("cannot listen for the other instances' comparison forwards: %s", err);
                db_conn_broken();
                worker_lock(w);
                if (!w->stopping)
                    worker_wait_locked(w, 1.0);
                worker_unlock(w);
                continue;
            }
            listening = db_conn(); /* db_listen may have reconnected */
            continue;
        }
        struct pollfd pfd = {.fd = PQsocket(c), .events = POLLIN};
        if (poll(&pfd, 1, 250) < 0 && pfd.fd >= 0)
            continue;
        if (!PQconsumeInput(c)) {
            db_conn_broken();
            listening = NULL;
            continue;
        }
        PGnotify *n;
        while ((n = PQnotifies(c))) {
            deliver(n->extra);
            PQfreemem(n);
        }
    }
}

int fwd_start(void)
{
    if (worker_start(&sender, 1) < 0)
        return -1;
    return worker_start(&listener, 1);
}

void fwd_stop(void)
{
    worker_stop(&listener);
    worker_stop(&sender);
    free(queue);
    queue = NULL;
    q_len = q_cap = 0;
}
