/* compare.c - benchmark: GET /api/v1/compare on 10,000 steps x 8 runs.
 *
 * Starts a private lockstepd (embedded PostgreSQL) and ingests 8 runs of STEPS x RANKS with three records per step
 * and rank (loss, allreduce.out, grad_norm): a baseline twin group of 2 runs, 5 noise replicas (metrics within 1e-9
 * relative of the baseline's, the collective's fingerprint differing from step 1 on) and a changed run whose
 * metrics move by 1e-4 relative from step CHANGE_AT (60% of the way) on. Then times the compare query the CLI and the
 * dashboard make: with the curves (series, what the dashboard reads) and without (what `lockstep compare` reads). One
 * JSON line.
 *
 * usage: compare [--steps N] [--ranks N] [--reps N]
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/lsfp1.h"
#include "tests/integration/harness.h"

#define RUNS 8
#define NOISE (RUNS - 3)
#define PER_STEP 3
#define BATCH_RECORDS 4000
#define CLIENTS 4

typedef struct opts {
    int steps, ranks, reps;
    int64_t change_at;
} opts;

typedef struct client {
    const opts *o;
    const char *base;
    char (*ids)[40];
    int first, stride; /* the (run, rank) pairs this client posts */
    int failures;
} client;

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Runs 0 and 1 are the baseline's twins, 2 the change, 3.. the noise replicas. */
static double value(const opts *o, int run, int rank, int64_t step, int metric)
{
    double v = metric ? 1.0 / (double)(step + 1) + 0.5 + rank * 1e-3 : 2.0 / (1 + 0.001 * (double)step) + rank * 1e-3;
    if (run >= 3)
        v *= 1 + 1e-9 * ((double)(mix((uint64_t)run * 7919 + (uint64_t)step * 31 + (uint64_t)metric) >> 11) /
                             9007199254740992.0 * 2 -
                         1);
    if (run == 2 && step >= o->change_at)
        v *= 1 + 1e-4;
    return v;
}

static int post_run_rank(const client *c, int run, int rank)
{
    const opts *o = c->o;
    char url[300];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", c->base, c->ids[run]);
    h_batch b;
    uint64_t seq = 0, batch_seq = 0;
    int n = 0, failures = 0;
    h_batch_begin(&b, c->ids[run], (uint32_t)rank, batch_seq);
    static const char *const names[PER_STEP] = {"loss", "allreduce.out", "grad_norm"};
    for (int64_t step = 1; step <= o->steps; step++) {
        for (int k = 0; k < PER_STEP; k++) {
            rec_record r;
            memset(&r, 0, sizeof(r));
            r.seq = seq++;
            r.step = step;
            r.name = names[k];
            r.name_len = (uint16_t)strlen(names[k]);
            if (k == 1) {
                int differs = run >= 3 || (run == 2 && step >= o->change_at);
                r.level = LS_LEVEL_COLLECTIVE;
                r.dtype = LS_F32;
                r.ndim = 1;
                r.shape[0] = 1 << 20;
                r.nbytes = 4u << 20;
                r.fp = fp_fmix64((uint64_t)step * 1315423911u + (uint64_t)rank + (differs ? (uint64_t)run << 40 : 0));
            } else {
                double v = value(o, run, rank, step, k == 2);
                r.level = LS_LEVEL_METRIC;
                r.dtype = LS_F64;
                memcpy(&r.value, &v, 8);
                r.flags = REC_HAS_VALUE;
                r.nbytes = 8;
                r.fp = fp_lsfp1(&v, 8);
            }
            h_batch_add(&b, &r);
            if (++n == BATCH_RECORDS) {
                failures += h_http("POST", url, "application/x-lockstep", b.buf, b.len, NULL, NULL) != 200;
                h_batch_free(&b);
                h_batch_begin(&b, c->ids[run], (uint32_t)rank, ++batch_seq);
                n = 0;
            }
        }
    }
    if (n)
        failures += h_http("POST", url, "application/x-lockstep", b.buf, b.len, NULL, NULL) != 200;
    h_batch_free(&b);
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/end", c->base, c->ids[run]);
    char body[64];
    snprintf(body, sizeof(body), "{\"rank\": %d, \"exit_code\": 0}", rank);
    failures += h_http("POST", url, NULL, body, strlen(body), NULL, NULL) != 200;
    return failures;
}

static void *client_main(void *arg)
{
    client *c = arg;
    for (int i = c->first; i < RUNS * c->o->ranks; i += c->stride)
        c->failures += post_run_rank(c, i % RUNS, i / RUNS);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* time_get - GET url `reps` times: median and max in ms, the last body (caller frees). */
static int time_get(const char *url, int reps, double *p50, double *max, char **body)
{
    double t[256];
    for (int i = 0; i < reps; i++) {
        free(*body);
        *body = NULL;
        double t0 = h_now();
        long st = h_http("GET", url, NULL, NULL, 0, NULL, body);
        t[i] = (h_now() - t0) * 1e3;
        if (st != 200) {
            fprintf(stderr, "bench/compare: GET %s answered %ld: %.300s\n", url, st, *body ? *body : "");
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
    opts o = {.steps = 10000, .ranks = 8, .reps = 10};
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
    if (o.steps < 10 || o.ranks < 1 || o.reps < 1 || o.reps > 256) {
        fprintf(stderr, "bench/compare: needs --steps >= 10, --ranks >= 1, --reps 1..256\n");
        return 2;
    }
    o.change_at = o.steps * 6 / 10;
    signal(SIGPIPE, SIG_IGN);

    char state[64] = "/tmp/lsbench-compare.XXXXXX";
    if (!mkdtemp(state))
        return 1;
    chmod(state, 0711); /* the embedded PostgreSQL runs as postgres when we are root */
    char state_dir[128];
    snprintf(state_dir, sizeof(state_dir), "%s/state", state);
    const char *args[] = {"--state-dir", state_dir, NULL};
    h_srv s;
    if (h_srv_start(&s, args) < 0) {
        fprintf(stderr, "bench/compare: lockstepd did not start\n");
        return 1;
    }
    int rc = 1;
    char url[600], *resp = NULL, *body = NULL;
    char ids[RUNS][40];
    static const char *const groups[] = {"bench-base", "bench-change", "bench-noise"};
    snprintf(url, sizeof(url), "%s/api/v1/runs", s.base);
    for (int k = 0; k < RUNS; k++) {
        char req[256];
        snprintf(req, sizeof(req), "{\"job_id\": \"%d\", \"twin_group\": \"%s\", \"ranks\": %d}", 8000 + k,
                 groups[k < 2    ? 0
                        : k == 2 ? 1
                                 : 2],
                 o.ranks);
        if (h_http("POST", url, NULL, req, strlen(req), NULL, &resp) != 201 ||
            h_json_str(resp, "run_id", ids[k], sizeof(ids[k])) < 0) {
            fprintf(stderr, "bench/compare: cannot register a run: %s\n", resp ? resp : "");
            free(resp);
            goto out_stop;
        }
        free(resp);
        resp = NULL;
    }

    double t0 = h_now();
    pthread_t th[CLIENTS];
    client cs[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        cs[i] = (client){.o = &o, .base = s.base, .ids = ids, .first = i, .stride = CLIENTS};
        pthread_create(&th[i], NULL, client_main, &cs[i]);
    }
    int failures = 0;
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(th[i], NULL);
        failures += cs[i].failures;
    }
    double ingest_s = h_now() - t0;
    if (failures) {
        fprintf(stderr, "bench/compare: %d posts failed\n", failures);
        goto out_stop;
    }

    double p50, max, p50_plain, max_plain;
    snprintf(url, sizeof(url), "%s/api/v1/compare?base=bench-base&changed=bench-change&noise=bench-noise", s.base);
    if (time_get(url, o.reps, &p50, &max, &body) < 0)
        goto out_stop;
    size_t bytes = strlen(body);
    json_t *d = json_loads(body, 0, NULL);
    const char *verdict = json_string_value(json_object_get(d, "verdict"));
    json_int_t fe = json_integer_value(json_object_get(json_object_get(d, "first_effect"), "step"));
    int ok = verdict && !strcmp(verdict, "beyond-noise") && fe == o.change_at &&
             json_is_true(json_object_get(json_object_get(d, "base"), "identical"));
    char verdict_s[32];
    snprintf(verdict_s, sizeof(verdict_s), "%s", verdict ? verdict : "?");
    json_decref(d);
    snprintf(url, sizeof(url), "%s/api/v1/compare?base=bench-base&changed=bench-change&noise=bench-noise&series=0",
             s.base);
    if (time_get(url, o.reps, &p50_plain, &max_plain, &body) < 0)
        goto out_stop;
    double load = 0; /* the machine is shared with other engineers' tiers: say how busy it was */
    if (getloadavg(&load, 1) < 1)
        load = -1;
    printf("{\"bench\": \"compare\", \"steps\": %d, \"runs\": %d, \"ranks\": %d, \"noise_replicas\": %d, \"records\": "
           "%lld, "
           "\"reps\": %d, \"ingest_s\": %.1f, \"compare_ms\": %.1f, \"compare_ms_max\": %.1f, \"compare_kib\": %zu, "
           "\"compare_no_series_ms\": %.1f, \"compare_no_series_ms_max\": %.1f, \"verdict\": \"%s\", "
           "\"first_effect_step\": %lld, \"expected\": %s, \"load_avg_1m\": %.2f}\n",
           o.steps, RUNS, o.ranks, NOISE, (long long)RUNS * o.steps * o.ranks * PER_STEP, o.reps, ingest_s, p50, max,
           bytes >> 10, p50_plain, max_plain, verdict_s, (long long)fe, ok ? "true" : "false", load);
    fflush(stdout);
    rc = ok ? 0 : 1;
    if (getenv("LOCKSTEP_BENCH_KEEP")) { /* leave the server up a while, to look at it by hand */
        fprintf(stderr, "bench/compare: lockstepd at %s (state %s) until this process is stopped\n", s.base, state_dir);
        sleep(900);
    }

out_stop:
    free(body);
    h_srv_kill(&s, SIGTERM);
    h_srv_cleanup(&s);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", state);
    if (system(cmd) != 0)
        fprintf(stderr, "bench/compare: cannot remove %s\n", state);
    return rc;
}
