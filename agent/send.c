/* send.c - the background sender: records batched in bounded memory, posted to lockstepd, spooled when it is away. */
#include "agent/send.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/http.h"
#include "agent/jsonw.h"
#include "agent/manifest.h"
#include "agent/spool.h"
#include "agent/uplink.h"

#define BACKOFF_MIN_MS 200
#define BACKOFF_MAX_MS 5000

struct batch {
    struct batch *next;
    uint64_t seq;
    size_t len;
    uint32_t count;
    unsigned char buf[]; /* header + records */
};

/* Guarded by S.mu: the current batch, the queue, the counters, the flags.
 * The thread's own fields (uplink, spool, down, retry_at) are touched only by
 * the sender thread once it runs. */
static struct sender {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int configured, started, stopping, child; /* child: a forked copy or a duplicate rank, never streams */
    pthread_t th;
    send_cfg cfg;
    size_t hdr_len;
    /* the batch being filled: hdr_len bytes reserved for its header, then records */
    unsigned char *cur;
    size_t cur_len, cur_cap;
    uint32_t cur_count;
    int64_t cur_t0;
    struct batch *head, *tail;
    size_t mem; /* bytes held: queue + current */
    uint64_t next_seq;
    int spool_ok;      /* the spool directory is open and locked */
    long spool_batches; /* batches waiting in the spool */
    uint64_t n_records, n_posted, n_spooled, n_dropped;
    int exit_code;
    int64_t abort_at; /* monotonic deadline of the exit flush; 0 before */
    /* sender thread only */
    spool sp;
    spool_meta meta;
    uplink up;
    int up_ok;
    int down;
    int64_t retry_at;
    long backoff_ms;
    int manifest_done, end_done;
    char *manifest; /* the manifest's text, kept in memory too when there is no spool */
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static int warned_drop, warned_spool, warned_reject, warned_thread;

static void *sender_main(void *arg);
static int open_spool_locked(void);

static int64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int send_start(send_cfg *cfg, char *why, size_t cap)
{
    pthread_mutex_lock(&S.mu);
    int rc = -1;
    if (S.configured) {
        snprintf(why, cap, "the sender is already configured");
        free(cfg->reg_json);
        goto out_unlock;
    }
    free(S.cfg.reg_json);
    S.cfg = *cfg;
    cfg->reg_json = NULL;
    S.cfg.hdr.kind = REC_KIND_BATCH;
    S.hdr_len = rec_header_size(&S.cfg.hdr);
    S.cur = NULL;
    S.cur_len = S.cur_cap = 0;
    S.cur_count = 0;
    S.head = S.tail = NULL;
    S.mem = 0;
    S.next_seq = 0;
    S.spool_ok = 0;
    S.spool_batches = 0;
    S.n_records = S.n_posted = S.n_spooled = S.n_dropped = 0;
    S.started = S.stopping = S.child = 0;
    S.abort_at = 0;
    S.exit_code = 0;
    S.down = 0;
    S.backoff_ms = 0;
    S.retry_at = 0;
    S.up_ok = 0;
    S.configured = 1;
    rc = 0;
out_unlock:
    pthread_mutex_unlock(&S.mu);
    return rc;
}

/* cut_locked - close the current batch: write its header and queue it. */
static void cut_locked(void)
{
    if (!S.cur || S.cur_count == 0)
        return;
    struct batch *b = (struct batch *)S.cur; /* the buffer was allocated with room for the struct in front */
    rec_header h = S.cfg.hdr;
    h.batch_seq = S.next_seq++;
    h.created_ns = wall_ns();
    rec_header_encode(&h, b->buf);
    b->next = NULL;
    b->seq = h.batch_seq;
    b->len = S.cur_len;
    b->count = S.cur_count;
    if (S.tail)
        S.tail->next = b;
    else
        S.head = b;
    S.tail = b;
    S.cur = NULL;
    S.cur_len = S.cur_cap = 0;
    S.cur_count = 0;
}

/* spool_batch - write `b` to the spool; frees it. Returns 0 or -1 (then the
 * batch is lost and counted as dropped). Called with or without S.mu. */
static int spool_batch(struct batch *b, int locked)
{
    char why[512];
    int rc = -1;
    if (S.spool_ok && spool_put_batch(&S.sp, b->seq, b->buf, b->len, why, sizeof(why)) == 0)
        rc = 0;
    else if (!S.spool_ok)
        snprintf(why, sizeof(why), "no usable spool directory");
    if (!locked)
        pthread_mutex_lock(&S.mu);
    if (rc == 0) {
        S.spool_batches++;
        S.n_spooled++;
    } else {
        S.n_dropped += b->count;
    }
    if (!locked)
        pthread_mutex_unlock(&S.mu);
    if (rc < 0)
        agent_warn_once(&warned_spool, "cannot spool a batch for lockstepd: %s; its records are lost", why);
    free(b);
    return rc;
}

/* spill_locked - the memory cap is reached: move every queued batch to the
 * spool, in the caller's thread (disk, never the network). */
static void spill_locked(void)
{
    cut_locked();
    while (S.head) {
        struct batch *b = S.head;
        S.head = b->next;
        if (!S.head)
            S.tail = NULL;
        S.mem -= sizeof(struct batch) + b->len;
        spool_batch(b, 1);
    }
}

void send_push(const rec_record *r)
{
    pthread_mutex_lock(&S.mu);
    if (!S.configured || S.child || S.stopping)
        goto out_unlock;
    if (!S.started) {
        S.started = 1;
        if (open_spool_locked() < 0) {
            S.started = 0;
            S.child = 1; /* a duplicate of a live rank: stays silent like a forked child */
            goto out_unlock;
        }
        /* The thread takes no signals: the program's handlers run on its own threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int err = pthread_create(&S.th, NULL, sender_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (err == 0)
            pthread_setname_np(S.th, "lockstep-send");
        if (err != 0) {
            S.started = 0;
            S.configured = 0;
            agent_warn_once(&warned_thread, "cannot start the sender thread: %s; not streaming", strerror(err));
            goto out_unlock;
        }
    }
    size_t need = rec_encoded_size(r);
    if (S.mem + need > S.cfg.mem_cap)
        spill_locked();
    if (S.mem + need > S.cfg.mem_cap && need + S.hdr_len > S.cfg.mem_cap) {
        S.n_dropped++;
        agent_warn_once(&warned_drop, "a %zu-byte record exceeds LOCKSTEP_MAX_MEM; it is not streamed", need);
        goto out_unlock;
    }
    size_t front = sizeof(struct batch) + S.hdr_len;
    if (!S.cur || sizeof(struct batch) + S.cur_len + need > S.cur_cap) {
        if (S.cur) { /* full: cut it and start another */
            cut_locked();
            pthread_cond_signal(&S.cv);
        }
        size_t cap = front + (S.cfg.batch_bytes > need ? S.cfg.batch_bytes : need) + 64;
        S.cur = malloc(cap);
        if (!S.cur) {
            S.n_dropped++;
            agent_warn_once(&warned_drop, "out of memory batching records for lockstepd; some are lost");
            goto out_unlock;
        }
        S.cur_cap = cap;
        S.cur_len = S.hdr_len;
        S.cur_count = 0;
        S.cur_t0 = mono_ns();
        S.mem += front;
    }
    rec_encode(r, ((struct batch *)S.cur)->buf + S.cur_len);
    S.cur_len += need;
    S.cur_count++;
    S.mem += need;
    S.n_records++;
    if (S.cur_len >= S.cfg.batch_bytes) {
        cut_locked();
        pthread_cond_signal(&S.cv);
    }
out_unlock:
    pthread_mutex_unlock(&S.mu);
}

/* --- the sender thread ---------------------------------------------------- */

static void mark_down(void)
{
    S.down = 1;
    S.backoff_ms = S.backoff_ms ? S.backoff_ms * 2 : BACKOFF_MIN_MS;
    if (S.backoff_ms > BACKOFF_MAX_MS)
        S.backoff_ms = BACKOFF_MAX_MS;
    S.retry_at = mono_ns() + (int64_t)S.backoff_ms * 1000000;
}

static void mark_up(void)
{
    S.down = 0;
    S.backoff_ms = 0;
    S.retry_at = 0;
}

static void save_meta(void)
{
    char why[512];
    if (S.spool_ok && spool_meta_write(&S.sp, &S.meta, why, sizeof(why)) < 0)
        agent_warn_once(&warned_spool, "%s", why);
}

/* open_spool_locked - fill the meta, open and lock the spool and write its
 * meta file: at the first record, in the caller's thread (disk only), so
 * that a burst can spill from the start. Returns -1 when another live
 * process holds this rank's spool: it streams as the same rank, and two
 * streams with one (run, rank) would collide in batch_seq. */
static int open_spool_locked(void)
{
    char why[512];
    const send_cfg *c = &S.cfg;
    memset(&S.meta, 0, sizeof(S.meta));
    snprintf(S.meta.server, sizeof(S.meta.server), "%s", c->server);
    snprintf(S.meta.token, sizeof(S.meta.token), "%s", c->token);
    snprintf(S.meta.ca_file, sizeof(S.meta.ca_file), "%s", c->ca_file);
    snprintf(S.meta.run_id, sizeof(S.meta.run_id), "%s", c->run_id);
    snprintf(S.meta.job_id, sizeof(S.meta.job_id), "%s", c->job_id);
    snprintf(S.meta.step_id, sizeof(S.meta.step_id), "%s", c->step_id);
    snprintf(S.meta.reg, sizeof(S.meta.reg), "%s", c->reg_json ? c->reg_json : "{}");
    S.meta.rank = c->hdr.rank;

    int busy = 0;
    if (c->spool_root[0] &&
        spool_open(&S.sp, c->spool_root, c->spool_key, c->hdr.rank, &busy, why, sizeof(why)) == 0) {
        S.spool_ok = 1;
        uint64_t *seqs;
        long n = spool_batches(&S.sp, &seqs, why, sizeof(why));
        if (n > 0) { /* left by an earlier process of this rank: continue after them */
            S.spool_batches = n;
            if (seqs[n - 1] + 1 > S.next_seq)
                S.next_seq = seqs[n - 1] + 1;
        }
        free(seqs);
        spool_meta m;
        if (spool_meta_read(&S.sp, &m, why, sizeof(why)) > 0 && !S.meta.run_id[0] && m.run_id[0])
            snprintf(S.meta.run_id, sizeof(S.meta.run_id), "%s", m.run_id);
        save_meta();
    } else if (busy) {
        agent_warn_once(&warned_spool,
                        "another live process already streams as rank %u of job %s step %s (%s is locked); "
                        "this process (pid %ld) does not stream: set LOCKSTEP_RANK to tell them apart",
                        c->hdr.rank, c->job_id, c->step_id, S.sp.dir, (long)getpid());
        return -1;
    } else if (c->spool_root[0]) {
        agent_warn_once(&warned_spool, "%s; batches the server does not take are lost", why);
    }
    return 0;
}

/* setup - in the sender thread: the manifest (hashing can take a while), then connect. */
static void setup(void)
{
    char why[512];
    const send_cfg *c = &S.cfg;
    if (c->manifest) {
        jw w;
        jw_init(&w);
        manifest_build(&w, c->hdr.rank, &S.abort_at);
        const char *txt = jw_text(&w);
        if (txt && S.spool_ok && spool_put(&S.sp, SPOOL_MANIFEST, txt, strlen(txt), why, sizeof(why)) < 0)
            agent_warn_once(&warned_spool, "%s", why);
        free(S.manifest);
        S.manifest = txt && !S.spool_ok ? strdup(txt) : NULL;
        jw_release(&w);
    }
    S.manifest_done = !c->manifest;

    if (uplink_open(&S.up, &S.meta, c->http_timeout_ms, why, sizeof(why)) == 0) {
        S.up_ok = 1;
        http_set_abort(S.up.http, &S.abort_at);
    } else {
        agent_warn_once(&warned_reject, "cannot talk to lockstepd: %s; batches stay in the spool", why);
    }
}

/* resolve - know the server's run id, and send the manifest once. Returns 1
 * when batches can be posted. */
static int resolve(void)
{
    if (!S.up_ok)
        return 0;
    if (!S.meta.run_id[0]) {
        int rc = uplink_resolve(&S.up);
        if (rc != UP_OK) {
            if (rc == UP_REJECT)
                agent_warn_once(&warned_reject, "lockstepd refused the run: %s", S.up.last_error);
            mark_down();
            return 0;
        }
        save_meta();
    }
    if (!S.manifest_done) {
        unsigned char *buf;
        size_t len;
        char why[256];
        int got = S.spool_ok ? spool_get(&S.sp, SPOOL_MANIFEST, &buf, &len, why, sizeof(why)) : 0;
        if (got <= 0 && S.manifest) {
            buf = (unsigned char *)strdup(S.manifest);
            got = buf ? 1 : 0;
        }
        if (got > 0) {
            int rc = uplink_post_json(&S.up, "manifest", (const char *)buf);
            free(buf);
            if (rc == UP_RETRY) {
                mark_down();
                return 0;
            }
            if (rc == UP_REJECT)
                agent_warn_once(&warned_reject, "lockstepd refused the manifest: %s", S.up.last_error);
        }
        if (S.spool_ok)
            spool_remove(&S.sp, SPOOL_MANIFEST);
        free(S.manifest);
        S.manifest = NULL;
        S.manifest_done = 1;
    }
    return 1;
}

/* drain - post the spooled batches in order. Returns 1 when the spool is
 * empty afterwards. */
static int drain(void)
{
    char why[512];
    uint64_t *seqs;
    if (!S.spool_ok)
        return 1;
    long n = spool_batches(&S.sp, &seqs, why, sizeof(why));
    if (n < 0)
        return 0;
    int ok = 1;
    for (long i = 0; i < n; i++) {
        char name[64];
        unsigned char *buf;
        size_t len;
        snprintf(name, sizeof(name), SPOOL_BATCH_FMT, (unsigned long long)seqs[i]);
        if (spool_get(&S.sp, name, &buf, &len, why, sizeof(why)) <= 0)
            continue;
        int rc = uplink_post_batch(&S.up, buf, len);
        free(buf);
        if (rc == UP_RETRY) {
            mark_down();
            ok = 0;
            break;
        }
        if (rc == UP_REJECT) {
            agent_warn_once(&warned_reject, "lockstepd refused spooled batch %llu: %s", (unsigned long long)seqs[i],
                            S.up.last_error);
            char bad[80];
            snprintf(bad, sizeof(bad), "%s.rejected", name);
            char from[4200], to[4200];
            snprintf(from, sizeof(from), "%s/%s", S.sp.dir, name);
            snprintf(to, sizeof(to), "%s/%s", S.sp.dir, bad);
            rename(from, to);
        } else {
            spool_remove(&S.sp, name);
        }
        pthread_mutex_lock(&S.mu);
        S.spool_batches--;
        if (rc == UP_OK)
            S.n_posted++;
        pthread_mutex_unlock(&S.mu);
    }
    free(seqs);
    if (ok)
        mark_up();
    return ok;
}

/* handle - post one batch, or spool it when the server is away or older
 * batches wait in the spool (so that batches arrive in order). */
static void handle(struct batch *b)
{
    pthread_mutex_lock(&S.mu);
    long pending = S.spool_batches;
    pthread_mutex_unlock(&S.mu);
    if (S.down || pending > 0 || !resolve()) {
        spool_batch(b, 0);
        return;
    }
    int rc = uplink_post_batch(&S.up, b->buf, b->len);
    if (rc == UP_OK) {
        pthread_mutex_lock(&S.mu);
        S.n_posted++;
        pthread_mutex_unlock(&S.mu);
        free(b);
        return;
    }
    if (rc == UP_REJECT) {
        agent_warn_once(&warned_reject, "lockstepd refused a batch: %s", S.up.last_error);
        pthread_mutex_lock(&S.mu);
        S.n_dropped += b->count;
        pthread_mutex_unlock(&S.mu);
        free(b);
        return;
    }
    mark_down();
    spool_batch(b, 0);
}

/* finish - the end report, then the spool directory when it is empty. */
static void finish(int exit_code)
{
    char why[512], body[128];
    snprintf(body, sizeof(body), "{\"rank\":%ld,\"exit_code\":%d}", S.meta.rank, exit_code);
    if (S.spool_ok)
        spool_put(&S.sp, SPOOL_END, body, strlen(body), why, sizeof(why));
    if (!S.down && resolve()) {
        pthread_mutex_lock(&S.mu);
        long pending = S.spool_batches;
        pthread_mutex_unlock(&S.mu);
        int rc = UP_RETRY;
        if (pending == 0 || drain())
            rc = uplink_post_json(&S.up, "end", body);
        if (rc != UP_RETRY && S.spool_ok)
            spool_remove(&S.sp, SPOOL_END);
    }
    if (S.spool_ok) {
        if (spool_is_empty(&S.sp))
            spool_remove_dir(&S.sp);
        else
            spool_close(&S.sp);
    }
}

static void *sender_main(void *arg)
{
    (void)arg;
    /* Lowest priority: on a node whose cores the ranks keep busy, the sender
     * takes what is left rather than time from the job. */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19) < 0) {
        /* not fatal: the thread just keeps the process's priority */
    }
    setup();
    pthread_mutex_lock(&S.mu);
    for (;;) {
        int64_t now = mono_ns();
        if (S.cur_count && (S.stopping || now - S.cur_t0 >= (int64_t)S.cfg.batch_ms * 1000000))
            cut_locked();
        if (S.head) {
            struct batch *b = S.head;
            S.head = b->next;
            if (!S.head)
                S.tail = NULL;
            S.mem -= sizeof(struct batch) + b->len;
            pthread_mutex_unlock(&S.mu);
            handle(b);
            pthread_mutex_lock(&S.mu);
            continue;
        }
        if (S.stopping)
            break;
        if (S.spool_batches > 0 && now >= S.retry_at) {
            pthread_mutex_unlock(&S.mu);
            if (resolve())
                drain();
            pthread_mutex_lock(&S.mu);
            continue;
        }
        int64_t wake = now + (int64_t)S.cfg.batch_ms * 1000000;
        if (S.cur_count && S.cur_t0 + (int64_t)S.cfg.batch_ms * 1000000 < wake)
            wake = S.cur_t0 + (int64_t)S.cfg.batch_ms * 1000000;
        if (S.spool_batches > 0 && S.retry_at < wake)
            wake = S.retry_at;
        /* the condition variable waits on CLOCK_REALTIME: convert the delay */
        int64_t delay = wake - now;
        if (delay < 1000000)
            delay = 1000000;
        int64_t at = wall_ns() + delay;
        struct timespec ts = {.tv_sec = at / 1000000000, .tv_nsec = at % 1000000000};
        pthread_cond_timedwait(&S.cv, &S.mu, &ts);
    }
    int code = S.exit_code;
    pthread_mutex_unlock(&S.mu);
    /* Stopping: the queue is empty (posted or spooled). A server that was
     * away gets one more chance for the spool, within the flush bound. */
    if (S.down && mono_ns() < S.abort_at)
        S.down = 0;
    /* A rank other than 0 may be here before rank 0 has registered the run:
     * while the server answers, keep looking until the flush bound. */
    while (S.up_ok && !S.meta.run_id[0] && !resolve() && S.up.last_status > 0 && mono_ns() < S.abort_at) {
        struct timespec ts = {0, 100 * 1000000};
        nanosleep(&ts, NULL);
        S.down = 0;
    }
    if (!S.down && S.spool_batches > 0 && resolve())
        drain();
    finish(code);
    uplink_close(&S.up);
    S.up_ok = 0;
    return NULL;
}

void send_stop(int exit_code)
{
    pthread_mutex_lock(&S.mu);
    if (!S.configured || S.child) {
        S.configured = 0;
        pthread_mutex_unlock(&S.mu);
        return;
    }
    int started = S.started;
    S.stopping = 1;
    S.exit_code = exit_code;
    __atomic_store_n(&S.abort_at, mono_ns() + (int64_t)S.cfg.flush_ms * 1000000, __ATOMIC_RELAXED);
    pthread_cond_signal(&S.cv);
    pthread_mutex_unlock(&S.mu);
    if (started)
        pthread_join(S.th, NULL);

    pthread_mutex_lock(&S.mu);
    if (S.spool_batches > 0)
        agent_warn_once(&warned_thread,
                        "lockstepd at %s did not take %ld batch(es) of rank %u (unreachable, or slower than the "
                        "%.1f s exit bound); they wait in %s (send them with: lockstep replay %s)",
                        S.cfg.server, S.spool_batches, S.cfg.hdr.rank, S.cfg.flush_ms / 1000.0, S.sp.dir,
                        S.cfg.spool_root);
    if (S.n_dropped)
        agent_warn_once(&warned_drop, "%llu record(s) could not be streamed or spooled and are lost",
                        (unsigned long long)S.n_dropped);
    free(S.cur);
    S.cur = NULL;
    free(S.cfg.reg_json);
    S.cfg.reg_json = NULL;
    S.configured = 0;
    pthread_mutex_unlock(&S.mu);
}

void send_atfork_prepare(void)
{
    pthread_mutex_lock(&S.mu);
}

void send_atfork_parent(void)
{
    pthread_mutex_unlock(&S.mu);
}

void send_atfork_child(void)
{
    /* No sender thread exists here; the copied queue belongs to the parent. */
    if (S.configured) {
        S.child = 1;
        if (S.spool_ok && S.sp.lock_fd >= 0) {
            close(S.sp.lock_fd); /* the parent keeps the lock: it is the open file's, not this fd's */
            S.sp.lock_fd = -1;
        }
    }
    pthread_mutex_unlock(&S.mu);
}

void send_stats(uint64_t *records, uint64_t *posted, uint64_t *spooled, uint64_t *dropped)
{
    pthread_mutex_lock(&S.mu);
    if (records)
        *records = S.n_records;
    if (posted)
        *posted = S.n_posted;
    if (spooled)
        *spooled = S.n_spooled;
    if (dropped)
        *dropped = S.n_dropped;
    pthread_mutex_unlock(&S.mu);
}
