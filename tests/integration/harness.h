/* harness.h - what lockstepd's integration tests and bench/ingest share: a private PostgreSQL, lockstepd processes,
 * HTTP calls, batches. */
#ifndef TESTS_INTEGRATION_HARNESS_H
#define TESTS_INTEGRATION_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "common/record.h"

/* A PostgreSQL cluster in a temp dir on a free 127.0.0.1 port. */
typedef struct h_pg {
    char dir[256];
    char conninfo[512];
    int port;
} h_pg;

/* h_pg_start - initdb in a new temp dir (as user postgres when root) and
 * start it on a free loopback port. Returns 0, or -1 with a message on
 * stderr. */
int h_pg_start(h_pg *pg);

/* h_pg_ctl - run "pg_ctl ACTION" (stop, start, restart) on the cluster. */
int h_pg_ctl(h_pg *pg, const char *action);

/* h_pg_standby - a streaming standby of running cluster `primary` in a new temp dir on a free loopback port:
 * pg_basebackup, standby.signal, and primary_conninfo with application_name `name` (what the primary's
 * synchronous_standby_names may list); started, hot (it answers reads). Returns 0, or -1 with a message on stderr. */
int h_pg_standby(const h_pg *primary, h_pg *standby, const char *name);

/* h_pg_crash - kill -9 the cluster's postmaster and every process it started, as a lost machine would: nothing is
 * flushed, sent or shut down in order. Waits until they are gone; the directory stays for h_pg_stop. Returns 0, or
 * -1 when the cluster was not running. */
int h_pg_crash(h_pg *pg);

/* h_pg_stop - stop the cluster and remove its directory. */
void h_pg_stop(h_pg *pg);

/* A lockstepd process. */
typedef struct h_srv {
    pid_t pid;
    int port;
    char dir[256];
    char base[128]; /* "http://127.0.0.1:PORT" */
    char log[300];
} h_srv;

/* h_lockstepd_path - the lockstepd binary of this build (LOCKSTEP_BUILD, or
 * beside the running program). */
const char *h_lockstepd_path(void);

/* h_srv_start - start lockstepd with `args` (NULL-terminated extra flags,
 * e.g. "--db", URL) on a free loopback port, in a new temp dir (its log is
 * `log` there), and wait until /api/v1/health answers. Returns 0 or -1. */
int h_srv_start(h_srv *s, const char *const *args);

/* h_srv_restart - start lockstepd again in the same dir with the same
 * arguments on the same port. */
int h_srv_restart(h_srv *s, const char *const *args);

/* h_srv_kill - send `sig` and reap; returns the exit status (or 128+sig). */
int h_srv_kill(h_srv *s, int sig);

/* h_srv_cleanup - remove the temp dir. */
void h_srv_cleanup(h_srv *s);

/* h_http - one HTTP request on this thread's keep-alive connection. `body`
 * may be NULL; `ctype` NULL means application/json; `token` adds a Bearer
 * header. Returns the status (0 when no response), the body in `*resp`
 * (malloc'd, NUL-terminated; pass NULL to drop it). */
long h_http(const char *method, const char *url, const char *ctype, const void *body, size_t len, const char *token,
            char **resp);

/* h_metric - sample `sample` of GET base/metrics (lockstepd's Prometheus text); -1 when it has none or the request
 * failed. h_metric_each - call `fn` with each sample whose name (labels included) starts with `prefix`: the rest of
 * the name after the prefix, and its value. Returns the samples seen, -1 when the request failed. */
double h_metric(const char *base, const char *sample, const char *token);
int h_metric_each(const char *base, const char *prefix, const char *token,
                  void (*fn)(const char *rest, double value, void *arg), void *arg);

/* h_http_cainfo - verify HTTPS servers against the CA file `path` (NULL:
 * the system's). */
void h_http_cainfo(const char *path);

/* h_json_str - the string value of top-level key `key` in JSON `doc`, into
 * `out`; returns 0 or -1. */
int h_json_str(const char *doc, const char *key, char *out, size_t cap);

/* A binary batch under construction. */
typedef struct h_batch {
    unsigned char *buf;
    size_t len, cap;
} h_batch;

/* h_batch_begin - start a batch stream (kind batch) for rank and batch_seq,
 * with run_id in the header unless NULL. */
void h_batch_begin(h_batch *b, const char *run_id, uint32_t rank, uint64_t batch_seq);

/* h_batch_add - frame one record. */
void h_batch_add(h_batch *b, const rec_record *r);

/* h_batch_free - release the buffer. */
void h_batch_free(h_batch *b);

/* h_now - monotonic seconds. */
double h_now(void);

#endif /* TESTS_INTEGRATION_HARNESS_H */
