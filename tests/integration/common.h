/* common.h - helpers the lockstepd integration test binaries share on top of harness.h: JSON calls, runs, batches. */
#ifndef TESTS_INTEGRATION_COMMON_H
#define TESTS_INTEGRATION_COMMON_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/integration/harness.h"

/* it_write_file - write `text` into `path`, then give it `mode` (0: leave the mode); fails the test when it
 * cannot. */
void it_write_file(const char *path, const char *text, mode_t mode);

/* it_stop - a test binary's teardown: stop lockstepd `s` (SIGTERM) and remove its files, stop PostgreSQL `pg` (NULL:
 * none), remove directory `dir` (NULL: none). Returns 0 when lockstepd exited cleanly, its log holds no sanitizer
 * report (SAN=1: every scenario of the tier runs under ASan and UBSan) and the directory went, else -1. */
int it_stop(h_srv *s, h_pg *pg, const char *dir);

/* it_call - METHOD base+path with a JSON (or NULL) body; the parsed reply in
 * `*out` when out is given (NULL when not JSON). Returns the HTTP status. */
long it_call(const h_srv *s, const char *method, const char *path, const char *body, const char *token, json_t **out);

/* it_register - register a run (group may be NULL) and write its id to
 * `run_id` (40 bytes). Returns 0 or -1. */
int it_register(const h_srv *s, const char *job, const char *group, int ranks, long long start_step, const char *token,
                char *run_id);

/* Content of record `i` of a synthetic step; `salt` != 0 changes its fp. */
typedef struct it_step {
    int64_t step;
    int n;       /* records in the step */
    int flip_at; /* index whose fp is flipped, -1 for none */
    int drop_at; /* index left out, -1 for none */
} it_step;

/* it_batch_steps - steps [first, first+count) of `rank` as one binary batch
 * (batch_seq) in `b`, `per_step` records each (loss scalar + tensors), the
 * record at index `flip` of step `flip_step` with a flipped fp and the one at
 * `drop` of `drop_step` left out, `*seq` the next seq (advanced). */
void it_batch_steps(h_batch *b, const char *run_id, int rank, uint64_t batch_seq, int64_t first, int count,
                    int per_step, int64_t flip_step, int flip, int64_t drop_step, int drop, uint64_t *seq);

/* it_scalar - `r` made a scalar record of F64 value `v` (REC_HAS_VALUE, its LSFP-1 fingerprint), named `name`
 * (kept, not copied), seq `seq` of step `step`; every other field 0 (occurrence 0: a series point). */
void it_scalar(rec_record *r, const char *name, uint64_t seq, int64_t step, double v);

/* it_post_batch - post batch `b` (application/x-lockstep) to run `run_id`'s records and free it. Returns the HTTP
 * status. */
long it_post_batch(const h_srv *s, const char *run_id, h_batch *b, const char *token);

/* it_post_steps - post it_batch_steps' batch. Returns the HTTP status. */
long it_post_steps(const h_srv *s, const char *run_id, int rank, uint64_t batch_seq, int64_t first, int count,
                   int per_step, int64_t flip_step, int flip, int64_t drop_step, int drop, uint64_t *seq,
                   const char *token);

/* it_end - end `rank` of run with exit code 0; returns the HTTP status. */
long it_end(const h_srv *s, const char *run_id, int rank, const char *token);

/* it_wait_group - poll GET /twins/{group} until its status is `want` (or
 * 10 s pass); returns the last reply (caller decrefs) or NULL. */
json_t *it_wait_group(const h_srv *s, const char *group, const char *want);

/* it_connect - a TCP connection to 127.0.0.1:port with receive and send
 * timeouts of `timeout_s`; the socket, or -1. */
int it_connect(int port, double timeout_s);

/* it_connect_from - the same from source address `src` (another loopback address, "127.0.0.2": a client
 * lockstepd sees as another host; NULL: any). */
int it_connect_from(const char *src, int port, double timeout_s);

/* it_raw - send `len` bytes on a new connection to 127.0.0.1:port and read
 * until the server closes it or `timeout_s` pass; the answer (malloc'd,
 * NUL-terminated, "" when none) in *out. Returns the status of the first
 * status line, 0 when none came, -1 when it could not connect. */
int it_raw(int port, const void *data, size_t len, double timeout_s, char **out);

/* it_rss_kb - the resident set size of process `pid` in KiB, or -1. */
long it_rss_kb(int pid);

/* it_metric - the value of the Prometheus sample line that starts with
 * `sample` (name and labels) in GET /metrics of `s`, or -1 when absent.
 * `token` is sent when given. */
double it_metric(const h_srv *s, const char *sample, const char *token);

/* A client that posts batch after batch for one rank of a run (batch k: step k, 10 records), retrying each, byte for
 * byte, until it is acknowledged. From step `flip_step` on (-1: never) its record 3 differs from its twin's. */
typedef struct it_loader {
    const h_srv *srv;
    const char *run;
    int rank;
    atomic_int *stop;
    atomic_llong flip_step;
    atomic_ullong acked; /* batches 0..acked-1 were acknowledged */
    atomic_ullong retries;
} it_loader;

/* it_count_lines - how many lines of file `path` hold `needle` (0 when it cannot be read). */
int it_count_lines(const char *path, const char *needle);

/* it_load_start - `n` loaders on ranks 0..n-1 of `run`, each on its thread of `th`, until `*stop`. */
void it_load_start(it_loader *ls, int n, pthread_t *th, const h_srv *srv, const char *run, atomic_int *stop);

/* it_check_exactly_once - in the database of `conninfo`: every batch `n` loaders of `run` had acknowledged is stored
 * once, with its 10 records once (in its frames), and no batch is stored twice or past a gap (at most the one in
 * flight at the end beyond the acknowledged ones). Fails the test otherwise. */
void it_check_exactly_once(const char *conninfo, const char *run, const it_loader *ls, int n);

#endif /* TESTS_INTEGRATION_COMMON_H */
