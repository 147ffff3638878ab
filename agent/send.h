/* send.h - the background sender: records batched in bounded memory, posted to lockstepd, spooled when it is away. */
#ifndef AGENT_SEND_H
#define AGENT_SEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

typedef struct send_cfg {
    char server[1024];
    char token[512];
    char ca_file[1024];
    char spool_root[2048];
    char spool_key[300]; /* ROOT/KEY/rank-N: the job and step, or the local run id */
    char run_id[256];    /* the server's run id when known in advance (LOCKSTEP_RUN_ID), else "" */
    char job_id[256];
    char step_id[256];
    char *reg_json;        /* owned: the registration body */
    rec_header hdr;        /* template of every batch header (kind, rank, job, step, group, host, algo) */
    size_t batch_bytes;    /* cut a batch at this size */
    long batch_ms;         /* ... or when its first record is this old */
    size_t mem_cap;        /* most bytes held in memory; beyond it batches go straight to the spool */
    long flush_ms;         /* how long exit may wait for the server */
    long http_timeout_ms;  /* per request */
    int manifest;          /* 1: build and send the manifest */
    int digests;           /* LOCKSTEP_STREAM=digests: step digests and scalars; records on demand (agent/hold.h) */
    size_t hold_mem;       /* digest streaming: most bytes of held records in memory ... */
    size_t hold_disk;      /* ... and in the spool */
    char stats_file[1024]; /* LOCKSTEP_STATS_FILE: a JSON line of this rank's counters is appended at exit */
    char relay_dir[1024];  /* LOCKSTEP_RELAY: the node relay's directory (agent/relay.h), "" for none */
    long relay_ms;         /* LOCKSTEP_RELAY_MS: how long the relay's leader waits for the other ranks' batches */
} send_cfg;

/* send_start - take over `cfg` (and its reg_json) and prepare streaming.
 * Nothing touches the network or starts a thread here: the sender thread
 * starts with the first record. Returns 0, or -1 with a reason in `why`
 * (cfg->reg_json is freed either way). */
int send_start(send_cfg *cfg, char *why, size_t cap);

/* send_begin - start streaming now rather than at the first record: open
 * the spool and start the sender thread (which registers the run and sends
 * the manifest). For programs that call ls_init themselves, so that a rank
 * that records nothing still registers (rank 0) and reports its end. */
void send_begin(void);

/* send_push - queue one numbered record. Never waits on the network: when
 * the memory cap is reached the queued batches are written to the spool (or,
 * without a usable spool, the record is dropped and counted). When streaming
 * digests, a record that is not a scalar is held back (agent/hold.h) and only
 * its step's digest is sent, unless `full` (a trace window asks for its
 * steps in detail). A consensus digest (REC_CONSENSUS_DIGEST) goes in full
 * in either mode, in no step digest and not counted as a record. */
void send_push(const rec_record *r, int full);

/* send_checkpoint - queue the declaration that this rank's run wrote a checkpoint of `step` at `path` (may be
 * NULL) for the sender thread to post (POST /api/v1/runs/ID/checkpoints). Never waits on the network; not
 * spooled: a declaration lockstepd has not taken when the rank ends is lost (a replay then starts from an older
 * checkpoint). Returns 0 (also when not streaming), -1 when out of memory or too many wait (`why`). */
int send_checkpoint(int64_t step, const char *path, char *why, size_t cap);

/* send_sync - cut the current batch (the step digest summed so far in it) and wait, at most `timeout_ms` (negative:
 * the exit bound, LOCKSTEP_FLUSH_TIMEOUT), until the
 * sender thread is done with it and every batch before it: posted, with the held records lockstepd's replies ask for
 * sent. Returns 0 when lockstepd took them all (also when nothing was ever streamed), 1 when the wait ended first,
 * the server is away (what is left waits in the spool) or it refused a batch. Waits on nothing but the sender. */
int send_sync(long timeout_ms);

/* send_stop - cut the last batch, let the sender flush for at most the flush
 * bound, spool whatever is left, report `exit_code` as the rank's end (and,
 * when the rank recorded nothing, whether it used MPI past the wrappers:
 * agent/mpiseen.h) and stop the thread. Says once on stderr what was left in
 * the spool. Safe when never started. */
void send_stop(int exit_code);

/* send_set_exit - the process's exit runs `fn` (the agent's whole shutdown, which ends with send_stop) instead of
 * send_stop alone: the sender's exit handler runs before the agent's (handlers run in reverse order), and what the
 * agent still holds at exit (its open consensus windows' digests) must reach the sender before it stops. */
void send_set_exit(void (*fn)(int exit_code));

/* send_note - set fact `key` (used_key_valid) of this rank's configuration to `value` (at most USED_VALUE_MAX
 * bytes): the manifest's "used" object carries it, and when it changes after the manifest went out the sender
 * posts the manifest again. Returns 0, or -1 when the table is full (USED_FACTS_MAX) or the value too long. */
int send_note(const char *key, const char *value);

/* send_mark_abort - the end send_stop reports is an abort (MPI_Abort): lockstepd shows the run's exit as this
 * rank's abort, not as the signal its peers are killed with. Call before send_stop. */
void send_mark_abort(void);

/* send_atfork_prepare / parent / child - keep the sender consistent across
 * fork(): the child has no sender thread, so its copy stops streaming. */
void send_atfork_prepare(void);
void send_atfork_parent(void);
void send_atfork_child(void);

#endif /* AGENT_SEND_H */
