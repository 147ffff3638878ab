/* send_int.h - what send.c (the callers' side) and send_thread.c (the sender thread) share; not public. */
#ifndef AGENT_SEND_INT_H
#define AGENT_SEND_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/hold.h"
#include "agent/send.h"
#include "agent/spool.h"
#include "agent/uplink.h"
#include "agent/used.h"

#define SEND_ASK_MAX 64 /* steps one reply may ask for */
#define BACKOFF_MIN_MS 200
#define BACKOFF_MAX_MS 5000
#define SEND_MAX_CKPT 256 /* checkpoint declarations waiting for the server */

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
struct sender {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_cond_t acked; /* the sender thread finished a batch (posted, refused or spooled): send_sync waits on it */
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
    int spool_ok;       /* the spool directory is open and locked */
    long spool_batches; /* batches waiting in the spool */
    uint64_t n_records, n_posted, n_spooled, n_dropped;
    uint64_t bytes_posted, bytes_on_demand;
    /* digest streaming: the step digest being summed, and the held records (under S.mu) */
    struct {
        int64_t step, t0;
        uint32_t n;
        uint64_t digest, seq;
    } sum;
    hold_ring hold;
    int64_t asked_step[16], asked_at[16]; /* steps sent on demand lately (sender thread only) */
    int64_t posted_seq;                   /* the highest batch_seq lockstepd took (-1: none yet; sender thread) */
    int64_t done_seq;                     /* the highest batch_seq the sender thread finished with, however */
    int exit_code;
    int aborted;               /* the end reported is an abort (send_mark_abort) */
    const char *mpi_unseen;    /* the end report's mpi_unseen (agent/mpiseen.h), or NULL */
    int64_t abort_at;          /* monotonic deadline of the exit flush; 0 before */
    char *ckpt[SEND_MAX_CKPT]; /* checkpoint declarations (JSON) not yet taken by the server, oldest first */
    int nckpt;
    /* sender thread only */
    spool sp;
    spool_meta meta;
    uplink up;
    int up_ok;
    int down;
    int64_t retry_at;
    long backoff_ms;
    int manifest_done, end_done;
    char *manifest;      /* the manifest's text, kept in memory too when there is no spool */
    char *libs;          /* the mapped libraries at the first record (manifest_libraries), for the manifest */
    char *manifest_base; /* the manifest built at start, without "used" (sender thread only) */
    struct {
        char key[USED_KEY_MAX + 1], value[USED_VALUE_MAX + 1];
    } used[USED_FACTS_MAX]; /* facts reported (send_note), under S.mu, kept across ls_init */
    int nused, used_dirty;  /* under S.mu: a fact changed since the manifest was last composed */
    int warned_drop, warned_spool, warned_reject, warned_thread, warned_hold, warned_ckpt,
        warned_relay; /* once per process */
    int run_refused;  /* lockstepd refused the run's registration: at exit, do not wait for it to change its mind */
    int run_unknown;  /* under S.mu: lockstepd answered that it knows no such run yet (rank 0 registers it) */
    int run_adopted;  /* the run id came from the spool, left by an earlier process: not confirmed yet */
    uint64_t adopted_below; /* the batches that process left there: seqs below this */
    int exit_hooked;        /* exit_hook is registered (once per process) */
};

/* The one sender of the process, and its short name in the two files. */
extern struct sender send_state;
#define S send_state

/* send_wall_ns - CLOCK_REALTIME in nanoseconds. */
int64_t send_wall_ns(void);

/* send_cut_locked - close the current batch (S.mu held): write its header and queue it. */
void send_cut_locked(void);

/* send_flush_digest_locked - digest streaming: put the step digest summed so far into the current batch
 * (S.mu held). */
void send_flush_digest_locked(void);

/* send_held_steps - digest streaming, on the sender thread: post the held records of the `n` steps lockstepd
 * asked for (memory first, then the spool). */
void send_held_steps(const long long *steps, int n);

/* send_spool_batch - write `b` to the spool and free it; `locked` says whether
 * S.mu is held. Returns 0, or -1 (the batch is lost, counted as dropped). */
int send_spool_batch(struct batch *b, int locked);

/* send_save_meta - rewrite the spool's meta file (run id known, ...). */
void send_save_meta(void);

/* send_thread_main - the sender thread: batches out, spool drained, bounded flush at stop. */
void *send_thread_main(void *arg);

#endif /* AGENT_SEND_INT_H */
