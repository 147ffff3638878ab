/* common.c - helpers the lockstepd integration test binaries share on top of harness.h: JSON calls, runs, batches. */
#include "tests/integration/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <libpq-fe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "common/lsfp1.h"

long it_call(const h_srv *s, const char *method, const char *path, const char *body, const char *token, json_t **out)
{
    char url[1024], *resp = NULL;
    snprintf(url, sizeof(url), "%s%s", s->base, path);
    long code = h_http(method, url, NULL, body, body ? strlen(body) : 0, token, &resp);
    if (out)
        *out = json_loads(resp, 0, NULL);
    free(resp);
    return code;
}

int it_register(const h_srv *s, const char *job, const char *group, int ranks, long long start_step, const char *token,
                char *run_id)
{
    char body[512];
    if (group)
        snprintf(body, sizeof(body),
                 "{\"job_id\": \"%s\", \"twin_group\": \"%s\", \"ranks\": %d, \"start_step\": %lld, "
                 "\"user\": \"alice\", \"nodes\": \"n[1-2]\", \"command\": \"train\", \"mode\": \"det\"}",
                 job, group, ranks, start_step);
    else
        snprintf(body, sizeof(body), "{\"job_id\": \"%s\", \"ranks\": %d, \"user\": \"bob\"}", job, ranks);
    json_t *o = NULL;
    long code = it_call(s, "POST", "/api/v1/runs", body, token, &o);
    const char *id = json_string_value(json_object_get(o, "run_id"));
    int rc = -1;
    if (code == 201 && id) {
        snprintf(run_id, 40, "%s", id);
        rc = 0;
    }
    json_decref(o);
    return rc;
}

void it_batch_steps(h_batch *bp, const char *run_id, int rank, uint64_t batch_seq, int64_t first, int count,
                    int per_step, int64_t flip_step, int flip, int64_t drop_step, int drop, uint64_t *seq)
{
    h_batch_begin(bp, run_id, (uint32_t)rank, batch_seq);
    for (int64_t step = first; step < first + count; step++) {
        for (int i = 0; i < per_step; i++) {
            if (step == drop_step && i == drop)
                continue;
            char name[64];
            rec_record r = {0};
            uint64_t key[3] = {(uint64_t)rank, (uint64_t)step, (uint64_t)i};
            uint64_t sq = (*seq)++;
            if (i == 0) {
                it_scalar(&r, "loss", sq, step, 10.0 / (double)(step + 1));
                r.level = LS_LEVEL_METRIC;
            } else {
                snprintf(name, sizeof(name), "layer%d.out", i);
                r.seq = sq;
                r.step = step;
                r.name = name;
                r.name_len = (uint16_t)strlen(name);
                r.level = LS_LEVEL_MODULE;
                r.dtype = LS_F32;
                r.ndim = 2;
                r.shape[0] = 4;
                r.shape[1] = 256;
                r.nbytes = 4096;
                r.fp = fp_lsfp1(key, sizeof(key));
            }
            r.t_ns = 1000 * (int64_t)r.seq;
            if (step == flip_step && i == flip) {
                r.fp ^= 0x10;
                r.value ^= 1;
            }
            h_batch_add(bp, &r);
        }
    }
}

long it_post_steps(const h_srv *s, const char *run_id, int rank, uint64_t batch_seq, int64_t first, int count,
                   int per_step, int64_t flip_step, int flip, int64_t drop_step, int drop, uint64_t *seq,
                   const char *token)
{
    h_batch b = {0};
    it_batch_steps(&b, run_id, rank, batch_seq, first, count, per_step, flip_step, flip, drop_step, drop, seq);
    return it_post_batch(s, run_id, &b, token);
}

void it_scalar(rec_record *r, const char *name, uint64_t seq, int64_t step, double v)
{
    memset(r, 0, sizeof(*r));
    r->seq = seq;
    r->step = step;
    r->name = name;
    r->name_len = (uint16_t)strlen(name);
    r->dtype = LS_F64;
    r->nbytes = 8;
    memcpy(&r->value, &v, 8);
    r->flags = REC_HAS_VALUE;
    r->fp = fp_lsfp1(&v, 8);
}

long it_post_batch(const h_srv *s, const char *run_id, h_batch *b, const char *token)
{
    char url[512];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", s->base, run_id);
    long code = h_http("POST", url, "application/x-lockstep", b->buf, b->len, token, NULL);
    h_batch_free(b);
    return code;
}

long it_end(const h_srv *s, const char *run_id, int rank, const char *token)
{
    char path[256], body[64];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/end", run_id);
    snprintf(body, sizeof(body), "{\"rank\": %d, \"exit_code\": 0}", rank);
    return it_call(s, "POST", path, body, token, NULL);
}

json_t *it_wait_group(const h_srv *s, const char *group, const char *want)
{
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/twins/%s", group);
    json_t *o = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(o);
        o = NULL;
        if (it_call(s, "GET", path, NULL, NULL, &o) == 200 &&
            !strcmp(json_string_value(json_object_get(o, "status")) ?: "", want))
            return o;
        usleep(50000);
    }
    return o;
}

int it_connect(int port, double timeout_s)
{
    return it_connect_from(NULL, port, timeout_s);
}

int it_connect_from(const char *src, int port, double timeout_s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {(time_t)timeout_s, (suseconds_t)((timeout_s - (time_t)timeout_s) * 1e6)};
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in me = {.sin_family = AF_INET};
    if (src && (inet_pton(AF_INET, src, &me.sin_addr) != 1 || bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0)) {
        close(fd);
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int it_raw(int port, const void *data, size_t len, double timeout_s, char **out)
{
    *out = NULL;
    int fd = it_connect(port, timeout_s);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, (const char *)data + off, len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* the server may answer and close before taking it all */
        off += (size_t)n;
    }
    size_t cap = 65536, got = 0;
    char *buf = malloc(cap);
    double t0 = h_now();
    while (buf && h_now() - t0 < timeout_s) {
        if (got + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf)
                break;
        }
        ssize_t n = recv(fd, buf + got, cap - got - 1, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!buf)
        return 0;
    buf[got] = 0;
    *out = buf;
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = 0;
    return status;
}

long it_rss_kb(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

double it_metric(const h_srv *s, const char *sample, const char *token)
{
    return h_metric(s->base, sample, token);
}

void it_write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    if (mode)
        chmod(path, mode);
}

/* sanitizer_report - 1 when lockstepd's log `log` holds a sanitizer report (a SAN=1 build writes what it found
 * there; one that does not end the process, or ends it at exit, is still found), printing its line. */
static int sanitizer_report(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[1024];
    int found = 0;
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, "AddressSanitizer") || strstr(line, "runtime error:") || strstr(line, "LeakSanitizer");
    if (found)
        fprintf(stderr, "lockstepd's log %s: %s", log, line);
    if (f)
        fclose(f);
    return found;
}

int it_stop(h_srv *s, h_pg *pg, const char *dir)
{
    int st = h_srv_kill(s, SIGTERM);
    if (sanitizer_report(s->log))
        st = -1;
    h_srv_cleanup(s);
    if (pg)
        h_pg_stop(pg);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir ? dir : "");
    if (dir && system(cmd) != 0)
        return -1;
    return st == 0 ? 0 : -1;
}

int it_count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

static void *load_main(void *arg)
{
    it_loader *l = arg;
    uint64_t seq = 0;
    while (!atomic_load(l->stop)) {
        uint64_t first_seq = seq, k = atomic_load(&l->acked);
        long long flip = atomic_load(&l->flip_step);
        long code = it_post_steps(l->srv, l->run, l->rank, k, (int64_t)k, 1, 10,
                                  flip >= 0 && (long long)k >= flip ? (int64_t)k : -1, 3, -1, -1, &seq, NULL);
        if (code == 200) {
            atomic_fetch_add(&l->acked, 1);
        } else {
            seq = first_seq; /* the same batch again, byte for byte */
            atomic_fetch_add(&l->retries, 1);
            usleep(20000);
        }
    }
    return NULL;
}

void it_load_start(it_loader *ls, int n, pthread_t *th, const h_srv *srv, const char *run, atomic_int *stop)
{
    for (int r = 0; r < n; r++) {
        ls[r] = (it_loader){.srv = srv, .run = run, .rank = r, .stop = stop, .flip_step = -1};
        pthread_create(&th[r], NULL, load_main, &ls[r]);
    }
}

void it_check_exactly_once(const char *conninfo, const char *run, const it_loader *ls, int n)
{
    PGconn *c = PQconnectdb(conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    for (int r = 0; r < n; r++) {
        char rank[16];
        snprintf(rank, sizeof(rank), "%d", r);
        const char *q = "SELECT (SELECT count(*) FROM batches b WHERE b.run_key = x.k AND b.rank = $2), "
                        "(SELECT coalesce(sum(n), 0) FROM record_frames d WHERE d.run_key = x.k AND d.rank = $2), "
                        "(SELECT count(*) - count(DISTINCT (step, seq_lo)) FROM record_frames d WHERE d.run_key = x.k "
                        "AND d.rank = $2), "
                        "(SELECT count(DISTINCT step) FROM record_frames d WHERE d.run_key = x.k AND d.rank = $2), "
                        "(SELECT coalesce(max(batch_seq), -1) FROM batches b WHERE b.run_key = x.k AND b.rank = $2) "
                        "FROM (SELECT run_key AS k FROM runs WHERE run_id = $1::uuid) x";
        const char *p[] = {run, rank};
        PGresult *res = PQexecParams(c, q, 2, NULL, p, NULL, NULL, 0);
        assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
        long batches = atol(PQgetvalue(res, 0, 0)), records = atol(PQgetvalue(res, 0, 1)),
             doubled = atol(PQgetvalue(res, 0, 2)), steps = atol(PQgetvalue(res, 0, 3)),
             max_bseq = atol(PQgetvalue(res, 0, 4));
        PQclear(res);
        uint64_t acked = atomic_load(&ls[r].acked);
        /* acknowledged ones all there; at most the one in flight at the end beyond them */
        assert_true((uint64_t)batches >= acked && (uint64_t)batches <= acked + 1);
        assert_int_equal(max_bseq + 1, batches); /* no gaps, no doubles */
        assert_int_equal(records, 10 * batches);
        assert_int_equal(doubled, 0);     /* no segment stored twice */
        assert_int_equal(steps, batches); /* one step a batch */
    }
    PQfinish(c);
}
