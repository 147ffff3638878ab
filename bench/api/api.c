/* api.c - benchmark: the read API calls behind the dashboard's twin-group page, on a group of
 * 10,000 steps x 64 ranks.
 *
 * Starts a private lockstepd (embedded PostgreSQL), ingests two twin runs of STEPS x RANKS with
 * three records per step (loss, allreduce.out, grad_norm; run B's rank 7 diverges from step
 * 6000), ends them, waits for the comparison, then times each call the page makes, repeated:
 * the group summary, the 500-step match map around the divergence, the records at one step and
 * rank of each run, the manifest diff, and the curves (rank 0's loss and grad_norm series).
 * Prints one JSON line; target < 100 ms per call.
 *
 * usage: api [--steps N] [--ranks N] [--reps N]
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/lsfp1.h"
#include "tests/integration/harness.h"

#define PER_STEP 3
#define BATCH_RECORDS 4000
#define CLIENTS 4

typedef struct opts {
    int steps, ranks, reps;
    int odd_rank;
    int64_t odd_step;
} opts;

typedef struct client {
    const opts *o;
    const char *base;
    char run_id[2][40];
    int first_rank, stride;
    int failures;
} client;

static const char *const names[PER_STEP] = {"loss", "allreduce.out", "grad_norm"};

/* post_run_rank - every record of one rank of one run, in batches. */
static int post_run_rank(const client *c, int run, int rank)
{
    const opts *o = c->o;
    char url[300];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", c->base, c->run_id[run]);
    h_batch b;
    uint64_t seq = 0, batch_seq = 0;
    int n = 0, failures = 0;
    h_batch_begin(&b, c->run_id[run], (uint32_t)rank, batch_seq);
    for (int64_t step = 0; step < o->steps; step++) {
        for (int k = 0; k < PER_STEP; k++) {
            rec_record r;
            memset(&r, 0, sizeof(r));
            r.seq = seq++;
            r.step = step;
            r.name = names[k];
            r.name_len = (uint16_t)strlen(names[k]);
            r.level = k == 1 ? LS_LEVEL_COLLECTIVE : LS_LEVEL_METRIC;
            r.dtype = k == 1 ? LS_F32 : LS_F64;
            if (k == 1) {
                r.ndim = 1;
                r.shape[0] = 1 << 20;
                r.nbytes = 4u << 20;
                r.fp = fp_fmix64((uint64_t)step * 1315423911u + (uint64_t)rank);
            } else {
                double v = 1.0 / (double)(step + 2) + (k == 2 ? 0.5 : 0.0) + rank * 1e-3;
                memcpy(&r.value, &v, 8);
                r.flags = REC_HAS_VALUE;
                r.nbytes = 8;
                r.fp = fp_lsfp1(&v, 8);
            }
            if (run == 1 && rank == o->odd_rank && step >= o->odd_step) {
                r.value ^= 1; /* one ulp from the divergence on */
                r.fp ^= 0x5bd1e995;
            }
            h_batch_add(&b, &r);
            if (++n == BATCH_RECORDS) {
                failures += h_http("POST", url, "application/x-lockstep", b.buf, b.len, NULL, NULL) != 200;
                h_batch_free(&b);
                h_batch_begin(&b, c->run_id[run], (uint32_t)rank, ++batch_seq);
                n = 0;
            }
        }
    }
    if (n)
        failures += h_http("POST", url, "application/x-lockstep", b.buf, b.len, NULL, NULL) != 200;
    h_batch_free(&b);
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/end", c->base, c->run_id[run]);
    char body[64];
    snprintf(body, sizeof(body), "{\"rank\": %d, \"exit_code\": 0}", rank);
    failures += h_http("POST", url, NULL, body, strlen(body), NULL, NULL) != 200;
    return failures;
}

static void *client_main(void *arg)
{
    client *c = arg;
    for (int rank = c->first_rank; rank < c->o->ranks; rank += c->stride)
        for (int run = 0; run < 2; run++)
            c->failures += post_run_rank(c, run, rank);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* time_call - GET `path` `reps` times; fills median and max in ms and the
 * last body size. Returns -1 when any call is not a 200. */
static int time_call(const char *base, const char *path, int reps, double *p50, double *max, size_t *bytes)
{
    char url[4096];
    snprintf(url, sizeof(url), "%.1000s%.3000s", base, path);
    double t[256];
    for (int i = 0; i < reps && i < 256; i++) {
        char *resp = NULL;
        double t0 = h_now();
        long st = h_http("GET", url, NULL, NULL, 0, NULL, &resp);
        t[i] = (h_now() - t0) * 1e3;
        *bytes = resp ? strlen(resp) : 0;
        free(resp);
        if (st != 200) {
            fprintf(stderr, "bench/api: GET %s answered %ld\n", path, st);
            return -1;
        }
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_d);
    *p50 = t[reps / 2];
    *max = t[reps - 1];
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {.steps = 10000, .ranks = 64, .reps = 20, .odd_rank = 7};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps"))
            o.steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ranks"))
            o.ranks = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            o.reps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [--steps N] [--ranks N] [--reps N]\n", argv[0]);
            return 2;
        }
    }
    if (o.steps < 10 || o.ranks < 8 || o.reps < 1 || o.reps > 256) {
        fprintf(stderr, "bench/api: needs --steps >= 10, --ranks >= 8, --reps 1..256\n");
        return 2;
    }
    o.odd_step = o.steps * 6 / 10;
    signal(SIGPIPE, SIG_IGN);

    char state[64] = "/tmp/lsbench-api.XXXXXX";
    if (!mkdtemp(state))
        return 1;
    chmod(state, 0711); /* the embedded PostgreSQL runs as postgres when we are root */
    char state_dir[128];
    snprintf(state_dir, sizeof(state_dir), "%s/state", state);
    const char *args[] = {"--state-dir", state_dir, NULL};
    h_srv s;
    if (h_srv_start(&s, args) < 0) {
        fprintf(stderr, "bench/api: lockstepd did not start\n");
        return 1;
    }
    int rc = 1;
    char url[300], group[64], *resp = NULL;
    snprintf(group, sizeof(group), "bench-api-%d", (int)getpid());
    snprintf(url, sizeof(url), "%s/api/v1/runs", s.base);
    client cs[CLIENTS];
    memset(cs, 0, sizeof(cs));
    for (int k = 0; k < 2; k++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"job_id\": \"%d\", \"twin_group\": \"%s\", \"ranks\": %d}", 7000 + k, group,
                 o.ranks);
        if (h_http("POST", url, NULL, body, strlen(body), NULL, &resp) != 201 ||
            h_json_str(resp, "run_id", cs[0].run_id[k], sizeof(cs[0].run_id[k])) < 0) {
            fprintf(stderr, "bench/api: cannot register a run: %s\n", resp ? resp : "");
            free(resp);
            goto out_stop;
        }
        free(resp);
        resp = NULL;
    }

    double t0 = h_now();
    pthread_t th[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        cs[i].o = &o;
        cs[i].base = s.base;
        memcpy(cs[i].run_id, cs[0].run_id, sizeof(cs[0].run_id));
        cs[i].first_rank = i;
        cs[i].stride = CLIENTS;
        pthread_create(&th[i], NULL, client_main, &cs[i]);
    }
    int failures = 0;
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(th[i], NULL);
        failures += cs[i].failures;
    }
    double ingest_s = h_now() - t0;
    if (failures) {
        fprintf(stderr, "bench/api: %d posts failed\n", failures);
        goto out_stop;
    }

    /* Wait for the comparison to settle on the divergence. */
    snprintf(url, sizeof(url), "%s/api/v1/twins/%s", s.base, group);
    double t1 = h_now();
    int settled = 0;
    while (h_now() - t1 < 300 && !settled) {
        if (h_http("GET", url, NULL, NULL, 0, NULL, &resp) == 200 && strstr(resp, "\"diverged\"") &&
            strstr(resp, "\"per_rank\""))
            settled = 1;
        free(resp);
        resp = NULL;
        if (!settled)
            usleep(200000);
    }
    double settle_s = h_now() - t1;
    if (!settled) {
        fprintf(stderr, "bench/api: the group did not diverge within 300 s\n");
        goto out_stop;
    }

    static const char *const labels[] = {"twin_ms",      "steps_window_ms",  "records_a_ms",
                                         "records_b_ms", "manifest_diff_ms", "curves_ms"};
    char paths[6][512];
    int64_t from = o.odd_step - 250 > 0 ? o.odd_step - 250 : 0;
    snprintf(paths[0], 512, "/api/v1/twins/%s", group);
    snprintf(paths[1], 512, "/api/v1/twins/%s/steps?from=%" PRId64 "&to=%" PRId64 "&compact=1", group, from,
             from + 499);
    snprintf(paths[2], 512, "/api/v1/runs/%s/records?rank=%d&step=%" PRId64 "&limit=10000", cs[0].run_id[0], o.odd_rank,
             o.odd_step);
    snprintf(paths[3], 512, "/api/v1/runs/%s/records?rank=%d&step=%" PRId64 "&limit=10000", cs[0].run_id[1], o.odd_rank,
             o.odd_step);
    snprintf(paths[4], 512, "/api/v1/twins/%s/manifest-diff", group);
    snprintf(paths[5], 512, "/api/v1/runs/%s/series?rank=0&name=loss,grad_norm&limit=100000", cs[0].run_id[0]);
    double p50[6], max[6], worst = 0;
    size_t bytes[6];
    for (int i = 0; i < 6; i++) {
        if (time_call(s.base, paths[i], o.reps, &p50[i], &max[i], &bytes[i]) < 0)
            goto out_stop;
        if (p50[i] > worst)
            worst = p50[i];
    }
    printf("{\"bench\": \"api\", \"steps\": %d, \"ranks\": %d, \"runs\": 2, \"records\": %lld, \"reps\": %d, "
           "\"ingest_s\": %.1f, \"settle_s\": %.1f",
           o.steps, o.ranks, 2LL * o.steps * o.ranks * PER_STEP, o.reps, ingest_s, settle_s);
    for (int i = 0; i < 6; i++)
        printf(", \"%s\": %.1f, \"%s_max\": %.1f", labels[i], p50[i], labels[i], max[i]);
    printf(", \"curves_kib\": %zu, \"worst_median_ms\": %.1f, \"target_ms\": 100, \"met\": %s}\n", bytes[5] >> 10,
           worst, worst < 100 ? "true" : "false");
    rc = 0;
    if (getenv("LOCKSTEP_BENCH_KEEP")) { /* leave the server up a while, to look at it by hand */
        fprintf(stderr, "bench/api: lockstepd at %s (state %s) until this process is stopped\n", s.base, state_dir);
        sleep(600);
    }

out_stop:
    h_srv_kill(&s, SIGTERM);
    h_srv_cleanup(&s);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", state);
    if (system(cmd) != 0)
        fprintf(stderr, "bench/api: cannot remove %s\n", state);
    return rc;
}
