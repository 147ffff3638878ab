/* send.c - the callers' side of the sender: records batched in bounded memory, spilled to the spool at the cap,
 * the bounded stop, fork handling. The thread that posts them is send_thread.c. */
#include "agent/send.h"

#include "common/jsonw.h"
#include "agent/manifest.h"
#include "agent/send_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hold.h"
#include "agent/http.h"
#include "agent/mpiseen.h"
#include "agent/spool.h"
#include "agent/uplink.h"
#include "common/recmatch.h"

struct sender send_state = {
    .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .acked = PTHREAD_COND_INITIALIZER};

static int open_spool_locked(void);

int64_t send_wall_ns(void)
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
    S.posted_seq = -1;
    S.done_seq = -1;
    S.spool_ok = 0;
    S.spool_batches = 0;
    S.n_records = S.n_posted = S.n_spooled = S.n_dropped = 0;
    S.bytes_posted = S.bytes_on_demand = 0;
    memset(&S.sum, 0, sizeof(S.sum));
    memset(S.asked_at, 0, sizeof(S.asked_at));
    hold_release(&S.hold);
    hold_init(&S.hold, &S.cfg.hdr, S.cfg.hold_mem, S.cfg.hold_disk);
    S.started = S.stopping = S.child = 0;
    S.abort_at = 0;
    S.exit_code = 0;
    S.aborted = 0;
    S.mpi_unseen = NULL;
    S.down = 0;
    S.backoff_ms = 0;
    S.retry_at = 0;
    S.up_ok = 0;
    free(S.libs); /* an earlier ls_init's */
    S.libs = NULL;
    free(S.manifest_base);
    S.manifest_base = NULL;
    S.configured = 1;
    rc = 0;
out_unlock:
    pthread_mutex_unlock(&S.mu);
    return rc;
}

/* cut_locked - close the current batch: write its header and queue it. */
void send_cut_locked(void)
{
    if (!S.cur || S.cur_count == 0)
        return;
    struct batch *b = (struct batch *)S.cur; /* the buffer was allocated with room for the struct in front */
    rec_header h = S.cfg.hdr;
    h.batch_seq = S.next_seq++;
    h.created_ns = send_wall_ns();
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
int send_spool_batch(struct batch *b, int locked)
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
        agent_warn_once(&S.warned_spool, "cannot spool a batch for lockstepd: %s; its records are lost", why);
    free(b);
    return rc;
}

/* spill_locked - the memory cap is reached: move every queued batch to the
 * spool, in the caller's thread (disk, never the network). */
static void spill_locked(void)
{
    send_cut_locked();
    while (S.head) {
        struct batch *b = S.head;
        S.head = b->next;
        if (!S.head)
            S.tail = NULL;
        S.mem -= sizeof(struct batch) + b->len;
        send_spool_batch(b, 1);
    }
}

/* start_locked - open the spool and start the sender thread (S.mu held).
 * Returns 0, or -1 when this process must not stream (a duplicate rank, no
 * thread). */
/* exit_hook - on_exit handler registered once libcurl (and the TLS library,
 * which registers its own exit cleanup) is initialized: handlers run in
 * reverse order, so this one stops the sender before TLS is torn down. */
static void (*exit_fn)(int exit_code); /* send_set_exit's */

static void exit_hook(int status, void *arg)
{
    (void)arg;
    if (exit_fn)
        exit_fn(status);
    else
        send_stop(status);
}

void send_set_exit(void (*fn)(int exit_code))
{
    exit_fn = fn;
}

static int start_locked(void)
{
    char why[256];
    S.started = 1;
    /* libcurl is initialized here, in the caller's thread, never in the sender
     * thread where it could race exit(); then the stop is hooked after it. */
    if (http_global_init(why, sizeof(why)) < 0)
        agent_warn_once(&S.warned_reject, "%s; batches stay in the spool", why);
    if (!S.exit_hooked) {
        on_exit(exit_hook, NULL);
        S.exit_hooked = 1;
    }
    if (open_spool_locked() < 0) {
        S.started = 0;
        S.child = 1; /* a duplicate of a live rank: stays silent like a forked child */
        return -1;
    }
    /* The thread takes no signals: the program's handlers run on its own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&S.th, NULL, send_thread_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        S.started = 0;
        S.configured = 0;
        agent_warn_once(&S.warned_thread, "cannot start the sender thread: %s; not streaming", strerror(err));
        return -1;
    }
    pthread_setname_np(S.th, "lockstep-send");
    return 0;
}

void send_begin(void)
{
    pthread_mutex_lock(&S.mu);
    if (S.configured && !S.started && !S.child && !S.stopping)
        start_locked();
    pthread_mutex_unlock(&S.mu);
}

/* append_locked - frame `r` into the current batch (a new one when it is full), counting it as a record when
 * `counted` (a step digest is not one). */
static void append_locked(const rec_record *r, int counted)
{
    size_t need = rec_encoded_size(r);
    if (S.mem + need > S.cfg.mem_cap)
        spill_locked();
    if (S.mem + need > S.cfg.mem_cap && need + S.hdr_len > S.cfg.mem_cap) {
        S.n_dropped++;
        agent_warn_once(&S.warned_drop, "a %zu-byte record exceeds LOCKSTEP_MAX_MEM; it is not streamed", need);
        return;
    }
    size_t front = sizeof(struct batch) + S.hdr_len;
    if (!S.cur || sizeof(struct batch) + S.cur_len + need > S.cur_cap) {
        if (S.cur) { /* full: cut it and start another */
            send_cut_locked();
            pthread_cond_signal(&S.cv);
        }
        size_t cap = front + (S.cfg.batch_bytes > need ? S.cfg.batch_bytes : need) + 64;
        S.cur = malloc(cap);
        if (!S.cur) {
            S.n_dropped++;
            agent_warn_once(&S.warned_drop, "out of memory batching records for lockstepd; some are lost");
            return;
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
    if (counted)
        S.n_records++;
    if (S.cur_len >= S.cfg.batch_bytes) {
        send_cut_locked();
        pthread_cond_signal(&S.cv);
    }
}

void send_flush_digest_locked(void)
{
    if (!S.sum.n)
        return;
    rec_record d;
    memset(&d, 0, sizeof(d));
    d.seq = S.sum.seq;
    d.step = S.sum.step;
    d.t_ns = send_wall_ns();
    d.nbytes = S.sum.n;
    d.fp = S.sum.digest;
    d.flags = REC_STEP_DIGEST;
    d.dtype = LS_BYTES;
    d.name = REC_STEP_DIGEST_NAME;
    d.name_len = (uint16_t)strlen(REC_STEP_DIGEST_NAME);
    S.sum.n = 0;
    S.sum.digest = 0;
    append_locked(&d, 0);
    /* The held records this digest stands for form one block, sent on demand only once lockstepd has the digest:
     * it is in the current batch (cut later as next_seq), or in the one just cut when it filled it. */
    hold_seal(&S.hold, S.spool_ok ? &S.sp : NULL, (int64_t)(S.cur ? S.next_seq : S.next_seq - 1));
}

/* hold_locked - digest streaming: hold `r` back and add it to its step's digest (the one rule of
 * common/recmatch.h, as lockstepd sums the records it receives). */
static void hold_locked(const rec_record *r)
{
    if (!S.sum.n) {
        S.sum.step = r->step;
        S.sum.t0 = mono_ns();
    }
    S.sum.n++;
    S.sum.digest ^= rec_digest_term(r);
    S.sum.seq = r->seq;
    S.n_records++;
    if (hold_add(&S.hold, r, S.spool_ok ? &S.sp : NULL) < 0)
        agent_warn_once(&S.warned_hold, "out of memory holding records back; lockstepd cannot get some of them");
}

/* is_shard - a piece of a logical tensor (ls_tensor_shard): it goes in full when streaming digests, since a group of
 * runs with different rank counts is compared on its logical tensors from the stored shards (server/twins/logical.c),
 * and nothing asks for a shard a digest left out. */
static int is_shard(const rec_record *r)
{
    if (!r->ext_len)
        return 0;
    rec_ext x;
    rec_ext_of(r, &x);
    return x.has_shard;
}

void send_push(const rec_record *r, int full)
{
    char *probe = NULL; /* the libraries, the first time: thread counts are read then, outside S.mu */
    pthread_mutex_lock(&S.mu);
    if (!S.configured || S.child || S.stopping)
        goto out_unlock;
    if (!S.started && start_locked() < 0)
        goto out_unlock;
    /* The manifest lists the libraries mapped at the first record, taken here in the program's own thread:
     * a point of the program, the same in twins, not a moment the sender thread happens to be scheduled at
     * (runtimes such as Open MPI load and unload plugins as they go, MPI_Finalize unloads them all). */
    if (!S.libs && S.cfg.manifest) {
        S.libs = manifest_libraries();
        probe = S.libs ? strdup(S.libs) : NULL;
    }
    if (r->flags & REC_CONSENSUS_DIGEST) { /* a digest itself: in full in either mode, in no step digest */
        append_locked(r, 0);
        goto out_unlock;
    }
    if (S.cfg.digests && rec_in_steps(r)) { /* state blocks are in no step digest: they go in full, for the
                                               restore checks (common/recmatch.h) */
        if (S.sum.n && S.sum.step != r->step)
            send_flush_digest_locked(); /* the step changed: its digest goes out */
        if (!full && !(r->flags & REC_HAS_VALUE) && !is_shard(r)) {
            hold_locked(r);
            goto out_unlock;
        }
    }
    append_locked(r, 1);
out_unlock:
    pthread_mutex_unlock(&S.mu);
    if (probe)
        used_probe_threads(probe);
    free(probe);
}

int send_checkpoint(int64_t step, const char *path, char *why, size_t cap)
{
    jw w;
    jw_init(&w);
    jw_obj_begin(&w);
    jw_kv_int(&w, "step", step);
    if (path && *path)
        jw_kv_str(&w, "path", path);
    pthread_mutex_lock(&S.mu);
    jw_kv_int(&w, "rank", S.cfg.hdr.rank);
    pthread_mutex_unlock(&S.mu);
    jw_obj_end(&w);
    const char *t = jw_text(&w);
    char *copy = t ? strdup(t) : NULL;
    jw_release(&w);
    if (!copy) {
        snprintf(why, cap, "out of memory declaring the checkpoint of step %lld", (long long)step);
        return -1;
    }
    int rc = 0;
    pthread_mutex_lock(&S.mu);
    if (!S.configured || S.child || S.stopping) {
        free(copy);
        goto out_unlock;
    }
    if (S.nckpt == SEND_MAX_CKPT) {
        free(copy);
        snprintf(why, cap, "%d checkpoint declarations already wait for lockstepd; this one (step %lld) is not sent",
                 SEND_MAX_CKPT, (long long)step);
        rc = -1;
        goto out_unlock;
    }
    S.ckpt[S.nckpt++] = copy;
    if (!S.started)
        start_locked();
    pthread_cond_signal(&S.cv);
out_unlock:
    pthread_mutex_unlock(&S.mu);
    return rc;
}

void send_save_meta(void)
{
    char why[512];
    if (S.spool_ok && spool_meta_write(&S.sp, &S.meta, why, sizeof(why)) < 0)
        agent_warn_once(&S.warned_spool, "%s", why);
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
    if (c->spool_root[0] && spool_open(&S.sp, c->spool_root, c->spool_key, c->hdr.rank, &busy, why, sizeof(why)) == 0) {
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
        if (spool_meta_read(&S.sp, &m, why, sizeof(why)) > 0 && !S.meta.run_id[0] && m.run_id[0]) {
            snprintf(S.meta.run_id, sizeof(S.meta.run_id), "%s", m.run_id);
            S.run_adopted = 1; /* confirmed with lockstepd before use (send_thread.c, resolve) */
            S.adopted_below = S.next_seq;
        }
        send_save_meta();
    } else if (busy) {
        agent_warn_once(&S.warned_spool,
                        "another live process already streams as rank %u of job %s step %s (%s is locked); "
                        "this process (pid %ld) does not stream: set LOCKSTEP_RANK to tell them apart",
                        c->hdr.rank, c->job_id, c->step_id, S.sp.dir, (long)getpid());
        return -1;
    } else if (c->spool_root[0]) {
        agent_warn_once(&S.warned_spool, "%s; batches the server does not take are lost", why);
    }
    return 0;
}

int send_note(const char *key, const char *value)
{
    if (strlen(value) > USED_VALUE_MAX)
        return -1;
    pthread_mutex_lock(&S.mu);
    int i = 0;
    while (i < S.nused && strcmp(S.used[i].key, key))
        i++;
    int rc = 0;
    if (i == S.nused && S.nused == USED_FACTS_MAX) {
        rc = -1;
    } else if (i == S.nused || strcmp(S.used[i].value, value)) {
        snprintf(S.used[i].key, sizeof(S.used[i].key), "%s", key);
        snprintf(S.used[i].value, sizeof(S.used[i].value), "%s", value);
        S.nused += i == S.nused;
        S.used_dirty = 1;
        pthread_cond_signal(&S.cv);
    }
    pthread_mutex_unlock(&S.mu);
    return rc;
}

void send_mark_abort(void)
{
    pthread_mutex_lock(&S.mu);
    S.aborted = 1;
    pthread_mutex_unlock(&S.mu);
}

int send_sync(long timeout_ms)
{
    pthread_mutex_lock(&S.mu);
    int rc = 0;
    if (!S.configured || S.child || S.stopping || !S.started)
        goto out_unlock; /* nothing streamed, nor to stream */
    if (S.sum.n)
        send_flush_digest_locked();
    send_cut_locked();
    int64_t last = (int64_t)S.next_seq - 1,
            at = send_wall_ns() + (int64_t)(timeout_ms < 0 ? S.cfg.flush_ms : timeout_ms) * 1000000;
    pthread_cond_signal(&S.cv);
    struct timespec ts = {.tv_sec = at / 1000000000, .tv_nsec = at % 1000000000};
    /* Batches spooled while lockstepd did not know the run yet are posted from the spool once rank 0 registered it;
     * a server away is not waited for: what is left goes as it would at exit. */
    while ((S.done_seq < last || S.spool_batches > 0) && (!S.down || S.run_unknown) && !S.stopping)
        if (pthread_cond_timedwait(&S.acked, &S.mu, &ts) == ETIMEDOUT)
            break;
    rc = S.posted_seq >= last ? 0 : 1;
out_unlock:
    pthread_mutex_unlock(&S.mu);
    return rc;
}

void send_stop(int exit_code)
{
    pthread_mutex_lock(&S.mu);
    if (!S.configured || S.child) {
        S.configured = 0;
        pthread_mutex_unlock(&S.mu);
        return;
    }
    /* A rank that recorded nothing may have used MPI past the wrappers: its end says so. A self-started agent
     * streams from its first record, so such a process registers now, for its run to say why it has nothing
     * (launchers and shells, which record nothing either, never initialize MPI). A rank with records (NCCL's,
     * the API's: MPI only to start) had its calls seen. */
    const char *mpi_unseen = S.n_records ? NULL : mpiseen_unseen();
    if (!S.started && mpi_unseen)
        start_locked();
    int started = S.started;
    S.stopping = 1;
    S.exit_code = exit_code;
    S.mpi_unseen = mpi_unseen;
    __atomic_store_n(&S.abort_at, mono_ns() + (int64_t)S.cfg.flush_ms * 1000000, __ATOMIC_RELAXED);
    pthread_cond_signal(&S.cv);
    pthread_mutex_unlock(&S.mu);
    if (started)
        pthread_join(S.th, NULL);

    pthread_mutex_lock(&S.mu);
    if (S.spool_batches > 0 && S.run_refused)
        agent_warn_once(
            &S.warned_thread,
            "lockstepd at %s refused the run, so it took none of the %ld batch(es) of rank %u; they wait in "
            "%s (once the refusal above is dealt with: lockstep replay --server %s %s)",
            S.cfg.server, S.spool_batches, S.cfg.hdr.rank, S.sp.dir, S.cfg.server, S.cfg.spool_root);
    else if (S.spool_batches > 0)
        agent_warn_once(&S.warned_thread,
                        "lockstepd at %s did not take %ld batch(es) of rank %u (unreachable, or slower than the "
                        "%.1f s exit bound); they wait in %s (send them with: lockstep replay --server %s %s)",
                        S.cfg.server, S.spool_batches, S.cfg.hdr.rank, S.cfg.flush_ms / 1000.0, S.sp.dir, S.cfg.server,
                        S.cfg.spool_root);
    if (S.n_dropped)
        agent_warn_once(&S.warned_drop, "%llu record(s) could not be streamed or spooled and are lost",
                        (unsigned long long)S.n_dropped);
    if (S.cfg.stats_file[0]) { /* one line, appended whole (O_APPEND, under PIPE_BUF) */
        char line[512];
        int n = snprintf(line, sizeof(line),
                         "{\"rank\": %u, \"stream\": \"%s\", \"records\": %llu, \"batches_posted\": %llu, "
                         "\"bytes_posted\": %llu, \"bytes_on_demand\": %llu, \"held\": %llu, \"held_lost\": %llu, "
                         "\"batches_spooled\": %llu, \"dropped\": %llu}\n",
                         S.cfg.hdr.rank, S.cfg.digests ? "digests" : "records", (unsigned long long)S.n_records,
                         (unsigned long long)S.n_posted, (unsigned long long)S.bytes_posted,
                         (unsigned long long)S.bytes_on_demand, (unsigned long long)S.hold.n_held,
                         (unsigned long long)S.hold.n_lost, (unsigned long long)S.n_spooled,
                         (unsigned long long)S.n_dropped);
        int fd = open(S.cfg.stats_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            if (write(fd, line, (size_t)n) != n)
                agent_warn_once(&S.warned_spool, "cannot write %s", S.cfg.stats_file);
            close(fd);
        }
    }
    if (S.hold.n_lost)
        agent_warn_once(&S.warned_hold,
                        "%llu held record(s) of rank %u could be kept neither in memory nor in "
                        "the spool; lockstepd cannot get them",
                        (unsigned long long)S.hold.n_lost, S.cfg.hdr.rank);
    hold_release(&S.hold);
    if (S.nckpt)
        agent_warn_once(&S.warned_ckpt,
                        "lockstepd did not take %d checkpoint declaration(s) of rank %u before the "
                        "rank ended; a replay of a later step starts from an older checkpoint",
                        S.nckpt, S.cfg.hdr.rank);
    for (int i = 0; i < S.nckpt; i++)
        free(S.ckpt[i]);
    S.nckpt = 0;
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
