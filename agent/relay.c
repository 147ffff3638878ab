/* relay.c - the node relay (relay.h): the leader's thread takes the followers' batches over a unix socket and posts
 * those of one moment as one bundle; a follower sends its batch and reads its own reply.
 *
 * On the socket (both ends the same user's processes, native byte order, lengths as uint32):
 *   follower -> relay, once:   "LSR1", n, n bytes "JOB\nSTEP"   relay -> follower: one byte, 1 (served) or 0 (not)
 *   follower -> relay, a batch: r, r bytes of run id, n, n bytes of batch
 *   relay -> follower:          status (int32: lockstepd's for this batch; -1: post it yourself), n, n bytes of reply
 */
#include "agent/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/http.h"
#include "common/wire.h"

#define RELAY_PEERS 255               /* followers one relay serves at once; more post themselves */
#define RELAY_HELLO_MS 1000           /* how long a follower waits for the relay to say it serves it */
#define RELAY_POST_MS 30000           /* a bundle's post, at most (the exit's deadline cuts it shorter) */
#define RELAY_START_NS 100000000LL    /* a rank that found no relay while another leads looks again after this */
#define RELAY_RETRY_NS 1000000000LL   /* ... one whose relay did not answer */
#define RELAY_OTHER_NS 60000000000LL  /* ... one that found another job's relay */
#define RELAY_REPLY_MAX (256u << 10)  /* a bundle's reply read */
#define RELAY_BUNDLE_BYTES (8u << 20) /* a bundle's body at most (its first batch aside) */
#define RELAY_RUN_MAX 64              /* a run id's bytes */

typedef struct peer {
    int fd;
    int hello;         /* it named this relay's job and step */
    unsigned char *in; /* what it sent that is not taken yet */
    size_t in_len, in_cap;
    int pending; /* a whole batch in `in` waits for the bundle */
    char run[RELAY_RUN_MAX + 1];
    size_t batch_off, batch_len, used; /* the batch within `in`; `used`: the bytes it takes with its lengths */
    int64_t since;
} peer;

struct relay {
    char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char lock_path[4200];
    char job_step[520]; /* "JOB\nSTEP" */
    spool_meta m;       /* the leader's server, token and CA */
    long wait_ms;
    const int64_t *abort_at;
    int lock_fd;   /* >= 0: this rank leads */
    int listen_fd; /* the leader's socket */
    int wake[2];   /* the leader's thread wakes on it to stop */
    pthread_t th;
    int running;
    atomic_int stop;
    int fd;           /* a follower's connection, -1 when none */
    int64_t retry_at; /* a follower with no relay looks again from then */
};

static relay *leading; /* the relay this process leads: a forked child lets go of its lock and socket */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void child_lets_go(void)
{
    if (leading) {
        close(leading->listen_fd);
        close(leading->lock_fd);
        close(leading->wake[0]);
        close(leading->wake[1]);
        leading = NULL; /* its thread is not in the child; the lock is held by the parent's descriptor */
    }
}

static void atfork_setup(void)
{
    pthread_atfork(NULL, NULL, child_lets_go);
}

/* private_dir - DIR exists (made 0700 when missing), is a directory of this user, and no one else may enter it. */
static int private_dir(const char *dir, char *why, size_t cap)
{
    struct stat st;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(why, cap, "cannot make the relay directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "the relay directory %s is not a directory", dir);
        return -1;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 077)) {
        snprintf(why, cap, "the relay directory %s must be this user's (uid %u) and mode 0700; it is uid %u, mode %04o",
                 dir, (unsigned)geteuid(), (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* io_wait - wait until fd is ready for `events` or the monotonic deadline passes. Returns 1 ready, 0 not. */
static int io_wait(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = (deadline - mono_ns()) / 1000000;
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left > 1000 ? 1000 : (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return 0;
    }
}

/* io_all - send (`out`) or receive `len` bytes on a non-blocking socket by the deadline. Returns 0, or -1 (closed,
 * an error, or the deadline). */
static int io_all(int fd, unsigned char *b, size_t len, int64_t deadline, int out)
{
    while (len) {
        ssize_t n = out ? send(fd, b, len, MSG_NOSIGNAL) : recv(fd, b, len, 0);
        if (n > 0) {
            b += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!io_wait(fd, out ? POLLOUT : POLLIN, deadline))
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

static int send_all(int fd, const void *p, size_t len, int64_t deadline)
{
    return io_all(fd, (unsigned char *)(uintptr_t)p, len, deadline, 1); /* only read when sending */
}

static int recv_all(int fd, void *p, size_t len, int64_t deadline)
{
    return io_all(fd, p, len, deadline, 0);
}

/* ---- the leader ---- */

static void peer_drop(peer *p)
{
    close(p->fd);
    free(p->in);
    memset(p, 0, sizeof(*p));
    p->fd = -1;
}

/* peer_answer - status and reply for the peer's waiting batch; the batch is taken off its input. */
static void peer_answer(peer *p, int32_t status, const char *reply, size_t len)
{
    uint32_t n = (uint32_t)len;
    int64_t deadline = mono_ns() + 1000000000LL; /* it waits for this: a peer that does not read is dropped */
    if (send_all(p->fd, &status, 4, deadline) < 0 || send_all(p->fd, &n, 4, deadline) < 0 ||
        send_all(p->fd, reply, len, deadline) < 0) {
        peer_drop(p);
        return;
    }
    memmove(p->in, p->in + p->used, p->in_len - p->used);
    p->in_len -= p->used;
    p->pending = 0;
}

/* run_id_ok - a run id as lockstepd makes them (hex digits and dashes): it goes into a URL path. */
static int run_id_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F') || *s == '-'))
            return 0;
    return 1;
}

/* peer_parse - take what the peer sent: its hello (answered), then one whole batch (pending). Returns -1 when the
 * peer is to be dropped. */
static int peer_parse(relay *r, peer *p)
{
    uint32_t n;
    if (!p->hello) {
        if (p->in_len < 8)
            return 0;
        memcpy(&n, p->in + 4, 4);
        if (memcmp(p->in, "LSR1", 4) != 0 || n > sizeof(r->job_step))
            return -1;
        if (p->in_len < 8 + n)
            return 0;
        unsigned char ok = n == strlen(r->job_step) && memcmp(p->in + 8, r->job_step, n) == 0;
        if (send_all(p->fd, &ok, 1, mono_ns() + 1000000000LL) < 0 || !ok)
            return -1;
        p->hello = 1;
        memmove(p->in, p->in + 8 + n, p->in_len - 8 - n);
        p->in_len -= 8 + n;
    }
    if (p->pending || p->in_len < 4)
        return 0;
    uint32_t rl;
    memcpy(&rl, p->in, 4);
    if (rl == 0 || rl > RELAY_RUN_MAX)
        return -1;
    if (p->in_len < 8 + rl)
        return 0;
    memcpy(&n, p->in + 4 + rl, 4);
    if (n == 0 || n > RELAY_BATCH_MAX)
        return -1;
    if (p->in_len < 8 + (size_t)rl + n)
        return 0;
    memcpy(p->run, p->in + 4, rl);
    p->run[rl] = 0;
    p->batch_off = 8 + rl;
    p->batch_len = n;
    p->used = 8 + (size_t)rl + n;
    p->pending = 1;
    p->since = mono_ns();
    return 0;
}

/* peer_read - what the peer sent since. Returns -1 when it closed or broke the protocol. */
static int peer_read(relay *r, peer *p)
{
    for (;;) {
        if (p->in_cap - p->in_len < 65536) {
            size_t cap = p->in_cap ? 2 * p->in_cap : 131072;
            if (cap > RELAY_BATCH_MAX + 1024)
                cap = RELAY_BATCH_MAX + 1024;
            if (cap <= p->in_len)
                return -1;
            unsigned char *in = realloc(p->in, cap);
            if (!in)
                return -1;
            p->in = in;
            p->in_cap = cap;
        }
        ssize_t n = recv(p->fd, p->in + p->in_len, p->in_cap - p->in_len, 0);
        if (n > 0) {
            p->in_len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return peer_parse(r, p);
        return -1;
    }
}

/* post_run - one bundle of the waiting batches of run `run` (up to WIRE_BUNDLE_MAX of them and RELAY_BUNDLE_BYTES;
 * flush posts the rest next), each peer answered with its own reply, or -1 for all when the bundle as a whole
 * failed. */
static void post_run(relay *r, http_client **hc, peer *peers, const char *run)
{
    peer *in[WIRE_BUNDLE_MAX];
    int n = 0;
    size_t len = 0;
    for (int i = 0; i < RELAY_PEERS && n < WIRE_BUNDLE_MAX; i++)
        if (peers[i].fd >= 0 && peers[i].pending && !strcmp(peers[i].run, run) &&
            (n == 0 || len + 4 + peers[i].batch_len <= RELAY_BUNDLE_BYTES)) {
            in[n++] = &peers[i];
            len += 4 + peers[i].batch_len;
        }
    unsigned char *body = run_id_ok(run) ? malloc(len) : NULL;
    char *resp = body ? malloc(RELAY_REPLY_MAX) : NULL;
    long status = -1;
    char why[256];
    if (resp && !*hc) {
        *hc = http_open(r->m.server, r->m.token, r->m.ca_file, why, sizeof(why));
        if (*hc)
            http_set_abort(*hc, r->abort_at);
    }
    if (resp && *hc) {
        size_t off = 0;
        for (int i = 0; i < n; i++) {
            uint32_t l = (uint32_t)in[i]->batch_len;
            wire_bundle_len_put(body + off, l);
            memcpy(body + off + 4, in[i]->in + in[i]->batch_off, l);
            off += 4 + l;
        }
        char path[128];
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records", run);
        status = http_request(*hc, "POST", path, "application/x-lockstep-bundle", body, len, RELAY_POST_MS, resp,
                              RELAY_REPLY_MAX, why, sizeof(why));
    }
    const char *at[WIRE_BUNDLE_MAX];
    size_t at_len[WIRE_BUNDLE_MAX];
    int got = status == 200 ? wire_obj_items(resp, "batches", at, at_len, WIRE_BUNDLE_MAX) : -1;
    for (int i = 0; i < n; i++) {
        long long st = -1;
        if (got == n && wire_obj_int(at[i], "status", &st) == 0 && st > 0)
            peer_answer(in[i], (int32_t)st, at[i], at_len[i]);
        else
            peer_answer(in[i], -1, "", 0); /* it posts its batch itself */
    }
    free(body);
    free(resp);
}

/* flush - every waiting batch, a bundle a run. */
static void flush(relay *r, http_client **hc, peer *peers)
{
    for (int i = 0; i < RELAY_PEERS; i++)
        if (peers[i].fd >= 0 && peers[i].pending) {
            char run[RELAY_RUN_MAX + 1];
            memcpy(run, peers[i].run, sizeof(run));
            post_run(r, hc, peers, run);
            i = -1; /* from the start: answering may have dropped peers */
        }
}

static void *relay_main(void *arg)
{
    relay *r = arg;
    peer *peers = calloc(RELAY_PEERS, sizeof(*peers));
    struct pollfd *pf = calloc(RELAY_PEERS + 2, sizeof(*pf));
    int *idx = calloc(RELAY_PEERS + 2, sizeof(int));
    http_client *hc = NULL;
    if (!peers || !pf || !idx)
        goto out;
    for (int i = 0; i < RELAY_PEERS; i++)
        peers[i].fd = -1;
    while (!atomic_load(&r->stop)) {
        int np = 0, hellos = 0, waiting = 0;
        int64_t oldest = 0;
        pf[np++] = (struct pollfd){.fd = r->wake[0], .events = POLLIN};
        pf[np++] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
        for (int i = 0; i < RELAY_PEERS; i++) {
            peer *p = &peers[i];
            if (p->fd < 0)
                continue;
            hellos += p->hello;
            if (p->pending) {
                waiting++;
                oldest = !oldest || p->since < oldest ? p->since : oldest;
                continue; /* it waits for its answer: nothing more comes */
            }
            idx[np] = i;
            pf[np++] = (struct pollfd){.fd = p->fd, .events = POLLIN};
        }
        int64_t due = oldest + r->wait_ms * 1000000LL;
        if (waiting && (waiting >= hellos || waiting >= WIRE_BUNDLE_MAX || mono_ns() >= due)) {
            flush(r, &hc, peers);
            continue;
        }
        int timeout = waiting ? (int)((due - mono_ns()) / 1000000 + 1) : 1000;
        if (poll(pf, (nfds_t)np, timeout) < 0 && errno != EINTR)
            break;
        if (pf[1].revents & POLLIN) {
            int fd = accept4(r->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            struct ucred cr;
            socklen_t cl = sizeof(cr);
            int slot = -1;
            for (int i = 0; fd >= 0 && i < RELAY_PEERS && slot < 0; i++)
                slot = peers[i].fd < 0 ? i : -1;
            if (fd >= 0 && (slot < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != geteuid()))
                close(fd); /* full, or another user's process: it posts itself */
            else if (fd >= 0)
                peers[slot].fd = fd;
        }
        for (int k = 2; k < np; k++)
            if (pf[k].revents && peer_read(r, &peers[idx[k]]) < 0)
                peer_drop(&peers[idx[k]]);
    }
    if (peers)
        flush(r, &hc, peers); /* what waits when it stops: answered before the lead goes */
out:
    for (int i = 0; peers && i < RELAY_PEERS; i++)
        if (peers[i].fd >= 0)
            peer_drop(&peers[i]);
    http_close(hc);
    free(peers);
    free(pf);
    free(idx);
    return NULL;
}

/* try_lead - take the lead when no rank holds it: the lock, then a fresh socket, then the thread. Returns 1 when
 * this rank leads. */
static int try_lead(relay *r)
{
    int fd = open(r->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return 0;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        return 0;
    }
    r->lock_fd = fd;
    unlink(r->sock_path); /* the last leader's, if it died */
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, r->sock_path, strlen(r->sock_path) + 1);
    r->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (r->listen_fd < 0 || bind(r->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(r->listen_fd, 64) < 0 ||
        pipe2(r->wake, O_CLOEXEC) < 0) {
        if (r->listen_fd >= 0)
            close(r->listen_fd);
        close(fd);
        r->lock_fd = r->listen_fd = -1;
        return 0;
    }
    atomic_store(&r->stop, 0);
    if (pthread_create(&r->th, NULL, relay_main, r) != 0) {
        close(r->listen_fd);
        close(r->wake[0]);
        close(r->wake[1]);
        unlink(r->sock_path);
        close(fd);
        r->lock_fd = r->listen_fd = -1;
        return 0;
    }
    r->running = 1;
    pthread_once(&atfork_once, atfork_setup);
    leading = r;
    return 1;
}

relay *relay_open(const char *dir, const spool_meta *m, long wait_ms, const int64_t *abort_at, char *why, size_t cap)
{
    relay *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    r->fd = r->lock_fd = r->listen_fd = -1;
    int n = snprintf(r->sock_path, sizeof(r->sock_path), "%s/relay.sock", dir);
    if (n < 0 || (size_t)n >= sizeof(r->sock_path)) {
        snprintf(why, cap, "the relay directory's path is longer than a unix socket's allows (%zu bytes): %.200s",
                 sizeof(r->sock_path) - sizeof("/relay.sock"), dir);
        free(r);
        return NULL;
    }
    snprintf(r->lock_path, sizeof(r->lock_path), "%s/relay.lock", dir);
    snprintf(r->job_step, sizeof(r->job_step), "%s\n%s", m->job_id, m->step_id);
    if (private_dir(dir, why, cap) < 0) {
        free(r);
        return NULL;
    }
    r->m = *m;
    r->wait_ms = wait_ms;
    r->abort_at = abort_at;
    try_lead(r);
    return r;
}

/* follow - connect to the relay and say which job and step this is. Returns 0 when it serves this rank. */
static int follow(relay *r)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, r->sock_path, strlen(r->sock_path) + 1);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    uint32_t n = (uint32_t)strlen(r->job_step);
    unsigned char ok = 0;
    int64_t deadline = mono_ns() + RELAY_HELLO_MS * 1000000LL;
    int said = send_all(fd, "LSR1", 4, deadline) == 0 && send_all(fd, &n, 4, deadline) == 0 &&
               send_all(fd, r->job_step, n, deadline) == 0 && recv_all(fd, &ok, 1, deadline) == 0;
    if (!said || ok != 1) {
        close(fd);
        r->retry_at = mono_ns() + (said ? RELAY_OTHER_NS : RELAY_RETRY_NS); /* another job's relay, or no answer */
        return -2;
    }
    r->fd = fd;
    return 0;
}

int relay_post(relay *r, const char *run_id, const unsigned char *buf, size_t len, long timeout_ms, long *status,
               char *resp, size_t cap)
{
    if (!r || len == 0 || len > RELAY_BATCH_MAX || strlen(run_id) > RELAY_RUN_MAX || !run_id_ok(run_id) || cap == 0)
        return 0;
    if (r->fd < 0) { /* the leader's own batches go through its socket too: one bundle holds every rank's */
        if (mono_ns() < r->retry_at)
            return 0;
        int rc = follow(r);
        if (rc == -1 && r->lock_fd < 0 && try_lead(r)) /* no relay: this rank leads it now */
            rc = follow(r);
        if (rc == -1) /* another rank leads and has not opened its socket yet */
            r->retry_at = mono_ns() + RELAY_START_NS;
        if (rc < 0)
            return 0;
    }
    uint32_t rl = (uint32_t)strlen(run_id), bl = (uint32_t)len, rn = 0;
    int32_t st = -1;
    int64_t deadline = mono_ns() + timeout_ms * 1000000LL;
    if (send_all(r->fd, &rl, 4, deadline) < 0 || send_all(r->fd, run_id, rl, deadline) < 0 ||
        send_all(r->fd, &bl, 4, deadline) < 0 || send_all(r->fd, buf, len, deadline) < 0 ||
        recv_all(r->fd, &st, 4, deadline) < 0 || recv_all(r->fd, &rn, 4, deadline) < 0 || rn > RELAY_REPLY_MAX) {
        close(r->fd); /* the relay went, or is too slow: this batch and the next go directly */
        r->fd = -1;
        r->retry_at = mono_ns() + RELAY_RETRY_NS;
        return 0;
    }
    char *text = malloc((size_t)rn + 1);
    if (!text || recv_all(r->fd, text, rn, deadline) < 0) {
        free(text);
        close(r->fd);
        r->fd = -1;
        r->retry_at = mono_ns() + RELAY_RETRY_NS;
        return 0;
    }
    text[rn] = 0;
    if (st < 0) { /* the relay's post failed: this rank's turn */
        free(text);
        return 0;
    }
    snprintf(resp, cap, "%s", text);
    free(text);
    *status = st;
    return 1;
}

void relay_close(relay *r)
{
    if (!r)
        return;
    if (r->running) {
        atomic_store(&r->stop, 1);
        if (write(r->wake[1], "x", 1) < 0) {
            /* the thread sees `stop` within a second anyway */
        }
        pthread_join(r->th, NULL);
        close(r->listen_fd);
        close(r->wake[0]);
        close(r->wake[1]);
        unlink(r->sock_path);
        if (leading == r)
            leading = NULL;
    }
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    if (r->fd >= 0)
        close(r->fd);
    free(r);
}
