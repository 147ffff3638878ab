/* ingest.c - bench/ingest: N loopback clients post binary batches to a fresh lockstepd (embedded PostgreSQL on this machine); one JSON line of figures. */
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/lsfp1.h"
#include "tests/integration/harness.h"

typedef struct opts {
    int clients;     /* even: half post to run A, half to run B */
    double seconds;
    int batch;       /* records per batch */
    int per_step;    /* records per step */
    int64_t diverge_step;
    int ranks;       /* per run; each client posts for ranks i, i + half, ... in turn */
    const char *db;
    const char *state_dir; /* reuse this embedded cluster instead of a fresh one */
    const char *threads;   /* lockstepd --threads; NULL: its default (one per core) */
} opts;

#define MAX_RANKS 256

typedef struct client {
    const opts *o;
    const char *base;
    char run_id[40];
    int first_rank, n_ranks; /* ranks first_rank + k * stride */
    int stride;
    int odd; /* run B: flips one record at diverge_step */
    double deadline;
    uint64_t records, batches, failures;
    double *lat;
    size_t n_lat, cap_lat;
} client;

/* Where one rank of a client stands. */
typedef struct rank_state {
    uint64_t seq, bseq;
    int64_t step;
    int in_step;
} rank_state;

static void *client_main(void *arg)
{
    client *c = arg;
    const opts *o = c->o;
    h_batch b = {0};
    char url[256];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", c->base, c->run_id);
    rank_state st[MAX_RANKS] = {0};
    int64_t shape[2] = {1024, 1024};
    for (int turn = 0; h_now() < c->deadline; turn = (turn + 1) % c->n_ranks) {
        int rank = c->first_rank + turn * c->stride;
        rank_state *rs = &st[turn], saved = st[turn];
        h_batch_begin(&b, c->run_id, (uint32_t)rank, rs->bseq);
        for (int i = 0; i < o->batch; i++) {
            char name[64];
            int len = snprintf(name, sizeof(name), "layer%d.mlp.fc1.out", rs->in_step);
            uint64_t key[3] = {(uint64_t)rank, (uint64_t)rs->step, (uint64_t)rs->in_step};
            rec_record r = {0};
            r.seq = rs->seq++;
            r.step = rs->step;
            r.t_ns = (int64_t)(h_now() * 1e9);
            r.nbytes = 4u << 20;
            r.fp = fp_lsfp1(key, sizeof(key));
            if (c->odd && rs->step == o->diverge_step && rs->in_step == 7)
                r.fp ^= 1;
            r.level = LS_LEVEL_MODULE;
            r.dtype = LS_F32;
            r.ndim = 2;
            memcpy(r.shape, shape, sizeof(shape));
            r.name = name;
            r.name_len = (uint16_t)len;
            h_batch_add(&b, &r);
            if (++rs->in_step == o->per_step) {
                rs->in_step = 0;
                rs->step++;
            }
        }
        double t0 = h_now();
        long code = h_http("POST", url, "application/x-lockstep", b.buf, b.len, NULL, NULL);
        double dt = h_now() - t0;
        if (code != 200) {
            c->failures++;
            *rs = saved; /* replay the same batch later: the server dedups */
            continue;
        }
        c->records += (uint64_t)o->batch;
        c->batches++;
        rs->bseq++;
        if (c->n_lat == c->cap_lat) {
            c->cap_lat = c->cap_lat ? 2 * c->cap_lat : 1024;
            c->lat = realloc(c->lat, c->cap_lat * sizeof(double));
        }
        c->lat[c->n_lat++] = dt;
    }
    h_batch_free(&b);
    return NULL;
}

/* proc_cpu - CPU seconds of process `pid` (with `children`: plus its reaped
 * children and its live children, as for the PostgreSQL postmaster). */
static double proc_cpu(pid_t pid, int children)
{
    char path[64], buf[1024];
    double tck = (double)sysconf(_SC_CLK_TCK), total = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (fgets(buf, sizeof(buf), f)) {
        char *p = strrchr(buf, ')');
        unsigned long long v[20] = {0};
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                        &v[3]) == 4)
            total = (double)(v[0] + v[1] + (children ? v[2] + v[3] : 0)) / tck;
    }
    fclose(f);
    if (!children)
        return total;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int child = atoi(e->d_name);
        if (child <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/stat", child);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(buf, sizeof(buf), f)) {
            char *p = strrchr(buf, ')');
            int ppid = 0;
            unsigned long long ut = 0, st = 0;
            if (p && sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ppid, &ut, &st) == 3 &&
                ppid == pid)
                total += (double)(ut + st) / tck;
        }
        fclose(f);
    }
    if (d)
        closedir(d);
    return total;
}

static pid_t postmaster_pid(const char *state_dir)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/pgdata/postmaster.pid", state_dir);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
    if (!n)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i];
}

int main(int argc, char **argv)
{
    opts o = {.clients = 8, .seconds = 10, .batch = 2000, .per_step = 100, .diverge_step = 30, .ranks = 8};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--clients"))
            o.clients = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds"))
            o.seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch"))
            o.batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ranks"))
            o.ranks = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--db"))
            o.db = argv[i + 1];
        else if (!strcmp(argv[i], "--state-dir"))
            o.state_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--threads"))
            o.threads = argv[i + 1];
        else {
            fprintf(stderr, "usage: %s [--clients N] [--seconds S] [--batch RECORDS] [--ranks N] [--threads N] [--db URL | --state-dir DIR]\n", argv[0]);
            return 2;
        }
    }
    o.clients &= ~1;
    if (o.clients < 2)
        o.clients = 2;
    if (o.ranks < o.clients / 2)
        o.ranks = o.clients / 2;
    if (o.ranks > MAX_RANKS)
        o.ranks = MAX_RANKS;
    signal(SIGPIPE, SIG_IGN);

    char state[64] = "/tmp/lsbench.XXXXXX";
    if (!mkdtemp(state))
        return 1;
    chmod(state, 0711);
    char state_dir[300];
    snprintf(state_dir, sizeof(state_dir), "%s", o.state_dir ? o.state_dir : "");
    if (!o.state_dir)
        snprintf(state_dir, sizeof(state_dir), "%s/state", state);
    const char *args_embedded[] = {"--state-dir", state_dir, o.threads ? "--threads" : NULL, o.threads, NULL};
    const char *args_db[] = {"--db", o.db, o.threads ? "--threads" : NULL, o.threads, NULL};
    h_srv s;
    if (h_srv_start(&s, o.db ? args_db : args_embedded) < 0) {
        fprintf(stderr, "bench/ingest: lockstepd did not start\n");
        return 1;
    }

    char url[256], group[64], *resp = NULL;
    snprintf(group, sizeof(group), "bench-%d", (int)getpid());
    snprintf(url, sizeof(url), "%s/api/v1/runs", s.base);
    char run[2][40];
    int half = o.clients / 2;
    for (int k = 0; k < 2; k++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"job_id\": \"%d\", \"twin_group\": \"%s\", \"ranks\": %d}", 1000 + k, group,
                 o.ranks);
        if (h_http("POST", url, NULL, body, strlen(body), NULL, &resp) != 201 ||
            h_json_str(resp, "run_id", run[k], sizeof(run[k])) < 0) {
            fprintf(stderr, "bench/ingest: cannot register a run: %s\n", resp);
            return 1;
        }
        free(resp);
    }

    pid_t pm = o.db ? 0 : postmaster_pid(state_dir);
    double srv_cpu0 = proc_cpu(s.pid, 0), pg_cpu0 = pm ? proc_cpu(pm, 1) : 0;
    client *cs = calloc((size_t)o.clients, sizeof(*cs));
    pthread_t *th = calloc((size_t)o.clients, sizeof(*th));
    double t0 = h_now();
    for (int i = 0; i < o.clients; i++) {
        cs[i].o = &o;
        cs[i].base = s.base;
        snprintf(cs[i].run_id, sizeof(cs[i].run_id), "%s", run[i < half ? 0 : 1]);
        cs[i].first_rank = i % half;
        cs[i].stride = half;
        cs[i].n_ranks = (o.ranks - cs[i].first_rank + half - 1) / half;
        cs[i].odd = i >= half;
        cs[i].deadline = t0 + o.seconds;
        pthread_create(&th[i], NULL, client_main, &cs[i]);
    }
    uint64_t records = 0, batches = 0, failures = 0;
    size_t n_lat = 0;
    for (int i = 0; i < o.clients; i++) {
        pthread_join(th[i], NULL);
        records += cs[i].records;
        batches += cs[i].batches;
        failures += cs[i].failures;
        n_lat += cs[i].n_lat;
    }
    double elapsed = h_now() - t0;
    double srv_cpu = proc_cpu(s.pid, 0) - srv_cpu0, pg_cpu = pm ? proc_cpu(pm, 1) - pg_cpu0 : 0;
    double *lat = malloc((n_lat + 1) * sizeof(double));
    size_t k = 0;
    for (int i = 0; i < o.clients; i++) {
        memcpy(lat + k, cs[i].lat, cs[i].n_lat * sizeof(double));
        k += cs[i].n_lat;
        free(cs[i].lat);
    }
    qsort(lat, n_lat, sizeof(double), cmp_d);

    /* Detection: every rank of run B flipped one record at diverge_step while under load. */
    double det[256];
    int n_det = 0;
    snprintf(url, sizeof(url), "%s/api/v1/twins/%s", s.base, group);
    for (int tries = 0; tries < 100; tries++) {
        if (h_http("GET", url, NULL, NULL, 0, NULL, &resp) == 200) {
            json_t *j = json_loads(resp, 0, NULL);
            json_t *per = json_object_get(j, "per_rank");
            n_det = 0;
            for (size_t i = 0; i < json_array_size(per) && n_det < 256; i++)
                det[n_det++] = json_number_value(json_object_get(json_array_get(per, i), "detection_ms"));
            json_decref(j);
        }
        free(resp);
        if (n_det >= o.ranks)
            break;
        usleep(100000);
    }
    qsort(det, (size_t)n_det, sizeof(double), cmp_d);
    double load[3] = {0};
    if (getloadavg(load, 3) < 1)
        load[0] = -1;
    h_srv_kill(&s, SIGTERM);
    h_srv_cleanup(&s);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", state);
    if (system(cmd) != 0)
        fprintf(stderr, "bench/ingest: cannot remove %s\n", state);

    printf("{\"bench\": \"ingest\", \"clients\": %d, \"batch_records\": %d, \"seconds\": %.1f, "
           "\"ranks\": %d, \"records_per_s\": %.0f, \"batches_per_s\": %.1f, \"batch_p50_ms\": %.2f, \"batch_p99_ms\": %.2f, "
           "\"failed_posts\": %" PRIu64 ", \"divergences_found\": %d, \"divergences_expected\": %d, "
           "\"detect_p50_ms\": %.2f, \"detect_p99_ms\": %.2f, \"lockstepd_cpu_s\": %.2f, \"postgres_cpu_s\": %.2f, "
           "\"records_per_server_cpu_s\": %.0f, \"load_avg_1m\": %.2f}\n",
           o.clients, o.batch, elapsed, o.ranks, records / elapsed, batches / elapsed, pct(lat, n_lat, 0.5) * 1e3,
           pct(lat, n_lat, 0.99) * 1e3, failures, n_det, o.ranks, pct(det, (size_t)n_det, 0.5),
           pct(det, (size_t)n_det, 0.99), srv_cpu, pg_cpu,
           srv_cpu + pg_cpu > 0 ? (double)records / (srv_cpu + pg_cpu) : 0, load[0]);
    free(lat);
    free(cs);
    free(th);
    return n_det == o.ranks ? 0 : 1;
}
