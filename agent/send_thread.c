/* send_thread.c - the sender thread: posts batches to lockstepd, spools what it cannot, drains the spool in
 * order, and flushes within the bound at stop. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hold.h"
#include "agent/http.h"
#include "common/jsonw.h"
#include "common/wire.h"
#include "agent/manifest.h"
#include "agent/send_int.h"
#include "agent/spool.h"
#include "agent/uplink.h"

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

/* manifest_text - the manifest as it is posted: the one built at start with the facts reported so far as its
 * "used" object (a new string, or NULL when out of memory or none was built). Clears used_dirty. */
static char *manifest_text(void)
{
    if (!S.manifest_base)
        return NULL;
    jw w;
    jw_init(&w);
    jw_obj_begin(&w);
    pthread_mutex_lock(&S.mu);
    for (int i = 0; i < S.nused; i++)
        jw_kv_str(&w, S.used[i].key, S.used[i].value);
    int n = S.nused;
    S.used_dirty = 0;
    pthread_mutex_unlock(&S.mu);
    jw_obj_end(&w);
    const char *used = jw_text(&w);
    size_t bl = strlen(S.manifest_base);
    char *out = used && bl > 2 ? malloc(bl + strlen(used) + 16) : NULL;
    if (out && n) /* the base ends with its object's '}': the facts go in before it */
        sprintf(out, "%.*s,\"used\":%s}", (int)(bl - 1), S.manifest_base, used);
    else if (out)
        memcpy(out, S.manifest_base, bl + 1);
    jw_release(&w);
    return out;
}

/* repost_manifest - post the manifest again when a fact changed since it went out (the run known). */
static void repost_manifest(void)
{
    pthread_mutex_lock(&S.mu);
    int dirty = S.used_dirty;
    pthread_mutex_unlock(&S.mu);
    if (!dirty || !S.manifest_done || !S.manifest_base || !S.up_ok || !S.meta.run_id[0] || S.down)
        return;
    char *txt = manifest_text();
    int rc = txt ? uplink_post_json(&S.up, "manifest", txt, NULL, 0) : UP_REJECT;
    free(txt);
    if (rc == UP_RETRY) {
        pthread_mutex_lock(&S.mu);
        S.used_dirty = 1;
        pthread_mutex_unlock(&S.mu);
        mark_down();
    }
}

/* setup - in the sender thread: the manifest (hashing can take a while), then connect. */
static void setup(void)
{
    char why[512];
    const send_cfg *c = &S.cfg;
    if (c->manifest) {
        jw w;
        jw_init(&w);
        pthread_mutex_lock(&S.mu);
        char *libs = S.libs ? strdup(S.libs) : NULL;
        pthread_mutex_unlock(&S.mu);
        manifest_build(&w, c->hdr.rank, &S.abort_at, libs);
        free(libs);
        free(S.manifest_base);
        S.manifest_base = jw_text(&w) ? strdup(jw_text(&w)) : NULL;
        jw_release(&w);
        char *txt = manifest_text();
        if (txt && S.spool_ok && spool_put(&S.sp, SPOOL_MANIFEST, txt, strlen(txt), why, sizeof(why)) < 0)
            agent_warn_once(&S.warned_spool, "%s", why);
        free(S.manifest);
        S.manifest = txt && !S.spool_ok ? txt : NULL;
        if (S.manifest != txt)
            free(txt);
    }
    S.manifest_done = !c->manifest;

    if (uplink_open(&S.up, &S.meta, c->http_timeout_ms, why, sizeof(why)) == 0) {
        S.up_ok = 1;
        http_set_abort(S.up.http, &S.abort_at);
        if (c->relay_dir[0] &&
            !(S.up.relay = relay_open(c->relay_dir, &S.meta, c->relay_ms, &S.abort_at, why, sizeof(why))))
            agent_warn_once(&S.warned_relay, "no node relay: %s; this rank posts its batches itself", why);
    } else {
        agent_warn_once(&S.warned_reject, "cannot talk to lockstepd: %s; batches stay in the spool", why);
    }
}

/* forget_adopted - the run id an earlier process of this rank left in the spool is not one lockstepd knows (the job
 * id was used again, or the database is a new one): this process registers or finds its own run, and the batches
 * that process left, which belong to that other run, are set aside (renamed *.orphaned), never posted into this
 * one. */
static void forget_adopted(void)
{
    char why[256];
    uint64_t *seqs = NULL;
    long n = spool_batches(&S.sp, &seqs, why, sizeof(why)), moved = 0;
    for (long i = 0; i < n && seqs[i] < S.adopted_below; i++) {
        char name[64], aside[80];
        snprintf(name, sizeof(name), SPOOL_BATCH_FMT, (unsigned long long)seqs[i]);
        snprintf(aside, sizeof(aside), "%s.orphaned", name);
        moved += renameat(S.sp.dir_fd, name, S.sp.dir_fd, aside) == 0;
    }
    free(seqs);
    agent_warn_once(
        &S.warned_spool,
        "the spool %s names run %s of an earlier process of job %s step %s, which lockstepd does not know (the "
        "job id was used again, or the database is new): this process streams to a run of its own; %ld "
        "batches that process left are set aside as *.orphaned",
        S.sp.dir, S.meta.run_id, S.meta.job_id, S.meta.step_id, moved);
    pthread_mutex_lock(&S.mu);
    S.spool_batches -= moved;
    pthread_mutex_unlock(&S.mu);
    S.meta.run_id[0] = 0;
    send_save_meta();
}

/* resolve - know the server's run id, and send the manifest once. Returns 1
 * when batches can be posted. */
static int resolve(void)
{
    if (!S.up_ok)
        return 0;
    if (S.run_adopted) { /* a run id from the spool: lockstepd must know it */
        int rc = uplink_confirm(&S.up);
        if (rc == UP_RETRY) {
            mark_down();
            return 0;
        }
        if (rc == UP_REJECT)
            forget_adopted();
        S.run_adopted = 0;
    }
    if (!S.meta.run_id[0]) {
        int rc = uplink_resolve(&S.up);
        pthread_mutex_lock(&S.mu);
        S.run_unknown = rc == UP_RETRY && S.up.last_status > 0; /* lockstepd answered: rank 0 has not registered */
        pthread_mutex_unlock(&S.mu);
        if (rc != UP_OK) {
            if (rc == UP_REJECT) {
                agent_warn_once(&S.warned_reject, "lockstepd refused the run: %s", S.up.last_error);
                S.run_refused = 1;
            }
            mark_down();
            return 0;
        }
        send_save_meta();
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
            int rc = uplink_post_json(&S.up, "manifest", (const char *)buf, NULL, 0);
            free(buf);
            if (rc == UP_RETRY) {
                mark_down();
                return 0;
            }
            if (rc == UP_REJECT)
                agent_warn_once(&S.warned_reject, "lockstepd refused the manifest: %s", S.up.last_error);
        }
        if (S.spool_ok)
            spool_remove(&S.sp, SPOOL_MANIFEST);
        free(S.manifest);
        S.manifest = NULL;
        S.manifest_done = 1;
    }
    return 1;
}

/* posted - count a batch of `len` bytes lockstepd took, and send the held records its reply asks for. */
static void posted(size_t len, int on_demand, const char *resp)
{
    pthread_mutex_lock(&S.mu);
    S.bytes_posted += len;
    if (on_demand)
        S.bytes_on_demand += len;
    pthread_mutex_unlock(&S.mu);
    long long want[SEND_ASK_MAX];
    int n = resp ? wire_obj_int_array(resp, "send_steps", want, SEND_ASK_MAX) : -1;
    if (n > 0)
        send_held_steps(want, n);
}

void send_held_steps(const long long *steps, int n)
{
    char why[256];
    int64_t now = mono_ns();
    for (int i = 0; i < n; i++) {
        int64_t step = steps[i];
        int slot = -1, recent = 0;
        for (int k = 0; k < 16; k++) {
            if (S.asked_at[k] && S.asked_step[k] == step && now - S.asked_at[k] < 1000000000LL)
                recent = 1;
            if (slot < 0 || S.asked_at[k] < S.asked_at[slot])
                slot = k;
        }
        if (recent)
            continue; /* sent a moment ago; its answer may still be on its way */
        hold_copy *c = NULL;
        pthread_mutex_lock(&S.mu);
        long got = hold_copy_step(&S.hold, step, S.posted_seq, &c);
        pthread_mutex_unlock(&S.mu);
        if (got == 0 && S.spool_ok) {
            hold_copies_free(c, 0);
            got = hold_spool_step(&S.sp, step, &c, why, sizeof(why));
        }
        for (long k = 0; k < got; k++) {
            int rc = uplink_post_batch(&S.up, c[k].buf, c[k].len, NULL, 0);
            if (rc == UP_OK) {
                posted(c[k].len, 1, NULL);
            } else if (rc == UP_RETRY) {
                mark_down();
                break;
            } else {
                agent_warn_once(&S.warned_reject, "lockstepd refused the held records of step %lld: %s",
                                (long long)step, S.up.last_error);
            }
        }
        hold_copies_free(c, got > 0 ? got : 0);
        S.asked_step[slot] = step;
        S.asked_at[slot] = now;
        if (S.down)
            break;
    }
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
        char resp[1024];
        int rc = uplink_post_batch(&S.up, buf, len, resp, sizeof(resp));
        if (rc == UP_OK) {
            pthread_mutex_lock(&S.mu);
            if ((int64_t)seqs[i] > S.posted_seq)
                S.posted_seq = (int64_t)seqs[i];
            pthread_mutex_unlock(&S.mu);
            posted(len, 0, resp);
        }
        free(buf);
        if (rc == UP_RETRY) {
            mark_down();
            ok = 0;
            break;
        }
        if (rc == UP_REJECT) {
            agent_warn_once(&S.warned_reject, "lockstepd refused spooled batch %llu: %s", (unsigned long long)seqs[i],
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
        pthread_cond_broadcast(&S.acked);
        pthread_mutex_unlock(&S.mu);
    }
    free(seqs);
    if (ok)
        mark_up();
    return ok;
}

/* finished - the sender thread is done with batch `seq` (posted and its asks answered, refused, or spooled; a
 * spooled one is done with once drain posted it): send_sync's waiter learns it. */
static void finished(uint64_t seq)
{
    pthread_mutex_lock(&S.mu);
    if ((int64_t)seq > S.done_seq)
        S.done_seq = (int64_t)seq;
    pthread_cond_broadcast(&S.acked);
    pthread_mutex_unlock(&S.mu);
}

/* post - post one batch, or spool it when the server is away or older batches wait in the spool (so that batches
 * arrive in order). */
static void post(struct batch *b)
{
    pthread_mutex_lock(&S.mu);
    long pending = S.spool_batches;
    pthread_mutex_unlock(&S.mu);
    if (S.down || pending > 0 || !resolve()) {
        send_spool_batch(b, 0);
        return;
    }
    char resp[1024];
    int rc = uplink_post_batch(&S.up, b->buf, b->len, resp, sizeof(resp));
    if (rc == UP_OK) {
        pthread_mutex_lock(&S.mu);
        S.n_posted++;
        if ((int64_t)b->seq > S.posted_seq)
            S.posted_seq = (int64_t)b->seq;
        pthread_mutex_unlock(&S.mu);
        size_t len = b->len;
        free(b);
        posted(len, 0, resp);
        return;
    }
    if (rc == UP_REJECT) {
        agent_warn_once(&S.warned_reject, "lockstepd refused a batch: %s", S.up.last_error);
        pthread_mutex_lock(&S.mu);
        S.n_dropped += b->count;
        pthread_mutex_unlock(&S.mu);
        free(b);
        return;
    }
    mark_down();
    send_spool_batch(b, 0);
}

/* handle - post (post) one batch, then say it is done with (finished). */
static void handle(struct batch *b)
{
    uint64_t seq = b->seq;
    post(b);
    finished(seq);
}

/* post_checkpoints - post the waiting checkpoint declarations, oldest first, while the server takes them.
 * Only this thread removes entries, from the front; callers append at the back. */
static void post_checkpoints(void)
{
    if (!resolve())
        return;
    for (;;) {
        pthread_mutex_lock(&S.mu);
        char *c = S.nckpt ? S.ckpt[0] : NULL;
        pthread_mutex_unlock(&S.mu);
        if (!c)
            return;
        int rc = uplink_post_json(&S.up, "checkpoints", c, NULL, 0);
        if (rc == UP_RETRY) {
            mark_down();
            return;
        }
        if (rc == UP_REJECT)
            agent_warn_once(&S.warned_reject, "lockstepd refused a checkpoint declaration: %s", S.up.last_error);
        pthread_mutex_lock(&S.mu);
        memmove(S.ckpt, S.ckpt + 1, (size_t)(S.nckpt - 1) * sizeof(S.ckpt[0]));
        S.nckpt--;
        pthread_mutex_unlock(&S.mu);
        free(c);
    }
}

/* finish - the end report, then the spool directory when it is empty. */
static void finish(int exit_code)
{
    char why[512], body[192];
    pthread_mutex_lock(&S.mu);
    int aborted = S.aborted;
    pthread_mutex_unlock(&S.mu);
    /* mpi_unseen is a static word (agent/mpiseen.h): nothing to escape */
    snprintf(body, sizeof(body), "{\"rank\":%ld,\"exit_code\":%d%s%s%s%s}", S.meta.rank, exit_code,
             aborted ? ",\"abort\":true" : "", S.mpi_unseen ? ",\"mpi_unseen\":\"" : "",
             S.mpi_unseen ? S.mpi_unseen : "", S.mpi_unseen ? "\"" : "");
    if (S.spool_ok)
        spool_put(&S.sp, SPOOL_END, body, strlen(body), why, sizeof(why));
    if (!S.down)
        post_checkpoints();
    if (!S.down && resolve()) {
        repost_manifest(); /* facts reported since the manifest went out, before the end */
        pthread_mutex_lock(&S.mu);
        long pending = S.spool_batches;
        pthread_mutex_unlock(&S.mu);
        int rc = UP_RETRY;
        char resp[1024] = "";
        if (pending == 0 || drain())
            rc = uplink_post_json(&S.up, "end", body, resp, sizeof(resp));
        if (rc == UP_OK)
            posted(0, 0, resp); /* digest streaming: the end's comparison may ask for held records still */
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

void *send_thread_main(void *arg)
{
    (void)arg;
    /* The start (the manifest: hashing the program and its libraries, once) at the process's priority: a rank that
     * ends or aborts within its first seconds waits on it, and on a node whose other ranks spin in MPI waiting for
     * this one, a thread at nice 19 gets about 1.5 % of a core. */
    setup();
    /* Then the lowest priority: on a node whose cores the ranks keep busy, the sender takes what is left rather
     * than time from the job. An unprivileged thread cannot take it back, so this comes after the start. */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19) < 0) {
        /* not fatal: the thread just keeps the process's priority */
    }
    pthread_mutex_lock(&S.mu);
    for (;;) {
        int64_t now = mono_ns(), age = (int64_t)S.cfg.batch_ms * 1000000;
        int due = S.cur_count && (S.stopping || now - S.cur_t0 >= age);
        int digest_due = S.sum.n && (S.stopping || due || now - S.sum.t0 >= age);
        if (digest_due)
            send_flush_digest_locked(); /* digest streaming: the step digest summed so far goes with the batch */
        if (S.cur_count && (due || digest_due))
            send_cut_locked();
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
        if (S.used_dirty && S.manifest_done && S.manifest_base && S.up_ok && S.meta.run_id[0] && !S.down &&
            now >= S.retry_at) {
            pthread_mutex_unlock(&S.mu);
            repost_manifest();
            pthread_mutex_lock(&S.mu);
            if (S.used_dirty)
                goto wait;
            continue;
        }
        if (S.nckpt && S.spool_batches == 0 && now >= S.retry_at) {
            pthread_mutex_unlock(&S.mu);
            S.down = 0;
            post_checkpoints();
            pthread_mutex_lock(&S.mu);
            if (S.nckpt && !S.down)
                S.retry_at = now + (int64_t)BACKOFF_MIN_MS * 1000000; /* the run is not known yet: look again soon */
            if (!S.nckpt || S.down || S.retry_at > mono_ns())
                goto wait;
            continue;
        }
        if (S.spool_batches > 0 && now >= S.retry_at) {
            pthread_mutex_unlock(&S.mu);
            if (resolve())
                drain();
            pthread_mutex_lock(&S.mu);
            continue;
        }
    wait:;
        now = mono_ns();
        int64_t wake = now + (int64_t)S.cfg.batch_ms * 1000000;
        if (S.cur_count && S.cur_t0 + (int64_t)S.cfg.batch_ms * 1000000 < wake)
            wake = S.cur_t0 + (int64_t)S.cfg.batch_ms * 1000000;
        if (S.sum.n && S.sum.t0 + (int64_t)S.cfg.batch_ms * 1000000 < wake)
            wake = S.sum.t0 + (int64_t)S.cfg.batch_ms * 1000000;
        if ((S.spool_batches > 0 || S.nckpt) && S.retry_at < wake)
            wake = S.retry_at;
        /* the condition variable waits on CLOCK_REALTIME: convert the delay */
        int64_t delay = wake - now;
        if (delay < 1000000)
            delay = 1000000;
        int64_t at = send_wall_ns() + delay;
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
    while (S.up_ok && !S.meta.run_id[0] && !S.run_refused && !resolve() && S.up.last_status > 0 &&
           mono_ns() < S.abort_at) {
        struct timespec ts = {0, 100 * 1000000};
        nanosleep(&ts, NULL);
        S.down = 0;
    }
    if (!S.down && S.spool_batches > 0 && resolve())
        drain();
    /* Digest streaming: the held records stay in the spool for `lockstep replay --steps`. */
    pthread_mutex_lock(&S.mu);
    if (S.cfg.digests && hold_spill_all(&S.hold, S.spool_ok ? &S.sp : NULL) < 0)
        agent_warn_once(&S.warned_hold, "the records rank %u held back could not all be kept in the spool",
                        S.cfg.hdr.rank);
    pthread_mutex_unlock(&S.mu);
    finish(code);
    relay_close(S.up.relay); /* a leader answers what it holds first */
    S.up.relay = NULL;
    uplink_close(&S.up);
    S.up_ok = 0;
    return NULL;
}
