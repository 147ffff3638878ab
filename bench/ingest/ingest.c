/* ingest.c - bench/ingest: N loopback clients post binary batches to a fresh lockstepd (embedded PostgreSQL on this
 * machine), then the same records are COPYed as rows into an unindexed table of the same PostgreSQL (the row model's
 * limit); one JSON line of figures. */
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/lsfp1.h"
#include "tests/integration/harness.h"

typedef struct opts {
    int clients; /* even: half post to run A, half to run B */
    double seconds;
    int batch;            /* records per batch */
    int per_step;         /* records per step */
    int64_t diverge_step; /* run B's ranks flip a record here: by default step 600, 30 batches into each stream,
                             so that detection is measured on a server under way (--diverge-step 30: the first
                             second of a fresh one: its connections, plans and statistics) */
    int ranks;            /* per run; each client posts for ranks i, i + half, ... in turn */
    const char *db;
    const char *state_dir; /* reuse this embedded cluster instead of a fresh one */
    const char *threads;   /* lockstepd --threads; NULL: its default (one per core) */
    int copy_sessions;     /* concurrent COPY sessions of the row-limit phase */
    int rounds;            /* ingest and COPY alternate in this many pairs of blocks */
} opts;

#define MAX_RANKS 256

/* Where one rank of a client stands. */
typedef struct rank_state {
    uint64_t seq, bseq;
    int64_t step;
    int in_step;
} rank_state;

typedef struct client {
    const opts *o;
    const char *base;
    char run_id[40];
    int first_rank, n_ranks; /* ranks first_rank + k * stride */
    int stride;
    int odd; /* run B: flips one record at diverge_step */
    double deadline;
    rank_state st[MAX_RANKS]; /* kept from block to block */
    int turn;
    uint64_t records, batches, failures;
    double *lat;
    size_t n_lat, cap_lat;
} client;

/* make_record - record `in_step` of `step` on `rank`, as both phases store it (`name` holds its name);
 * run B (`odd`) flips one fingerprint at the divergence step. */
static void make_record(const opts *o, rec_record *r, char *name, int rank, int64_t step, int in_step, uint64_t seq,
                        int64_t t_ns, int odd)
{
    static const int64_t shape[2] = {1024, 1024};
    int len = snprintf(name, 64, "layer%d.mlp.fc1.out", in_step);
    uint64_t key[3] = {(uint64_t)rank, (uint64_t)step, (uint64_t)in_step};
    memset(r, 0, sizeof(*r));
    r->seq = seq;
    r->step = step;
    r->t_ns = t_ns;
    r->nbytes = 4u << 20;
    r->fp = fp_lsfp1(key, sizeof(key));
    if (odd && step == o->diverge_step && in_step == 7)
        r->fp ^= 1;
    r->level = LS_LEVEL_MODULE;
    r->dtype = LS_F32;
    r->ndim = 2;
    memcpy(r->shape, shape, sizeof(shape));
    r->name = name;
    r->name_len = (uint16_t)len;
}

static void *client_main(void *arg)
{
    client *c = arg;
    const opts *o = c->o;
    h_batch b = {0};
    char url[256];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", c->base, c->run_id);
    for (; h_now() < c->deadline; c->turn = (c->turn + 1) % c->n_ranks) {
        int turn = c->turn;
        int rank = c->first_rank + turn * c->stride;
        rank_state *rs = &c->st[turn], saved = c->st[turn];
        h_batch_begin(&b, c->run_id, (uint32_t)rank, rs->bseq);
        int64_t t_ns = (int64_t)(h_now() * 1e9);
        for (int i = 0; i < o->batch; i++) {
            char name[64];
            rec_record r;
            make_record(o, &r, name, rank, rs->step, rs->in_step, rs->seq++, t_ns + i, c->odd);
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

/* ---- the row model's limit: the same records as rows, COPYed into an unindexed table ---- */

/* The 22 columns of the row layout's records table (sql/migrations/001_init.sql with the call site of
 * sql/migrations/007 and the extension fields of sql/migrations/009, before migration 010), received_on by default: the
 * table the COPY phase fills has no index and no partitions, the row model at its fastest. */
#define ROWS_TABLE "bench_copy_rows"
#define ROWS_DDL                                                                                                       \
    "CREATE TABLE " ROWS_TABLE " (run_key bigint NOT NULL, rank int NOT NULL, seq bigint NOT NULL, step bigint "       \
    "NOT NULL, name text NOT NULL, occ int NOT NULL, level smallint NOT NULL, dtype smallint NOT NULL, flags "         \
    "smallint NOT NULL, t_ns bigint NOT NULL, nbytes bigint NOT NULL, fp bigint NOT NULL, value bigint, shape "        \
    "bigint[] NOT NULL, inputs bigint[], chunks bigint[], site_module text, site_offset bigint, site_function "        \
    "text, site_function_offset bigint, site_caller text, ext bytea, received_on date NOT NULL DEFAULT current_date)"

typedef struct cbuf {
    unsigned char *p;
    size_t len, cap;
} cbuf;

static unsigned char *grow(cbuf *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 20;
        while (cap < b->len + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p)
            abort();
        b->cap = cap;
    }
    unsigned char *at = b->p + b->len;
    b->len += n;
    return at;
}

static void be(unsigned char *p, uint64_t v, int size)
{
    for (int i = 0; i < size; i++)
        p[i] = (unsigned char)(v >> (8 * (size - 1 - i)));
}

static void f_int(cbuf *b, uint64_t v, int size)
{
    unsigned char *p = grow(b, 4 + (size_t)size);
    be(p, (uint64_t)size, 4);
    be(p + 4, v, size);
}

/* f_int8_array - a one-dimensional int8[] in PostgreSQL's binary array form. */
static void f_int8_array(cbuf *b, const int64_t *v, size_t n)
{
    size_t body = n ? 20 + 12 * n : 12;
    unsigned char *p = grow(b, 4 + body);
    be(p, body, 4);
    be(p + 4, n ? 1 : 0, 4);
    be(p + 8, 0, 4);
    be(p + 12, 20, 4);
    if (!n)
        return;
    be(p + 16, n, 4);
    be(p + 20, 1, 4);
    p += 24;
    for (size_t i = 0; i < n; i++, p += 12) {
        be(p, 8, 4);
        be(p + 4, (uint64_t)v[i], 8);
    }
}

/* copy_row - one record as a row of the binary COPY stream, as lockstepd wrote them before frames. */
static void copy_row(cbuf *b, int64_t run_key, uint32_t rank, const rec_record *r)
{
    be(grow(b, 2), 22, 2);
    f_int(b, (uint64_t)run_key, 8);
    f_int(b, rank, 4);
    f_int(b, r->seq, 8);
    f_int(b, (uint64_t)r->step, 8);
    unsigned char *p = grow(b, 4 + r->name_len);
    be(p, r->name_len, 4);
    memcpy(p + 4, r->name, r->name_len);
    f_int(b, r->occurrence, 4);
    f_int(b, r->level, 2);
    f_int(b, r->dtype, 2);
    f_int(b, r->flags, 2);
    f_int(b, (uint64_t)r->t_ns, 8);
    f_int(b, r->nbytes, 8);
    f_int(b, r->fp, 8);
    be(grow(b, 4), 0xffffffffu, 4); /* value: none */
    f_int8_array(b, r->shape, r->ndim);
    be(grow(b, 4), 0xffffffffu, 4); /* inputs */
    be(grow(b, 4), 0xffffffffu, 4); /* chunks */
    for (int k = 0; k < 6; k++)
        be(grow(b, 4), 0xffffffffu, 4); /* site_*, ext: none (the benchmark's records have neither) */
}

/* A COPY session: block after block, it copies the record streams of clients first, first + stride, ...
 * (one batch of one rank at a time, one COPY and one commit each), from where it stopped. */
typedef struct copy_stream {
    int client;
    int turn;
    rank_state st[MAX_RANKS];
} copy_stream;

typedef struct copier {
    const opts *o;
    const char *conninfo;
    const client *cs;
    PGconn *c;
    copy_stream *streams;
    int n_streams, next;
    double deadline;
    uint64_t copied;
    char err[300];
} copier;

static void *copier_main(void *arg)
{
    copier *k = arg;
    const opts *o = k->o;
    cbuf b = {0};
    if (!k->c) {
        k->c = PQconnectdb(k->conninfo);
        if (PQstatus(k->c) != CONNECTION_OK) {
            snprintf(k->err, sizeof(k->err), "%s", PQerrorMessage(k->c));
            return NULL;
        }
    }
    PGconn *c = k->c;
    while (!k->err[0] && k->n_streams && h_now() < k->deadline) {
        copy_stream *cst = &k->streams[k->next];
        k->next = (k->next + 1) % k->n_streams;
        const client *cl = &k->cs[cst->client];
        int rank = cl->first_rank + cst->turn * cl->stride;
        rank_state *rs = &cst->st[cst->turn];
        cst->turn = (cst->turn + 1) % cl->n_ranks;
        static const unsigned char sig[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};
        b.len = 0;
        unsigned char *p = grow(&b, 19);
        memcpy(p, sig, 11);
        memset(p + 11, 0, 8);
        int64_t t_ns = (int64_t)(h_now() * 1e9);
        for (int i = 0; i < o->batch; i++) {
            char name[64];
            rec_record r;
            make_record(o, &r, name, rank, rs->step, rs->in_step, rs->seq++, t_ns + i, cl->odd);
            copy_row(&b, 1 + cl->odd, (uint32_t)rank, &r);
            if (++rs->in_step == o->per_step) {
                rs->in_step = 0;
                rs->step++;
            }
        }
        be(grow(&b, 2), 0xffff, 2);
        PGresult *res = PQexec(c, "COPY " ROWS_TABLE " (run_key, rank, seq, step, name, occ, level, dtype, "
                                  "flags, t_ns, nbytes, fp, value, shape, inputs, chunks, site_module, site_offset, "
                                  "site_function, site_function_offset, site_caller, ext) FROM STDIN (FORMAT binary)");
        int ok = PQresultStatus(res) == PGRES_COPY_IN;
        PQclear(res);
        if (!ok || PQputCopyData(c, (const char *)b.p, (int)b.len) != 1 || PQputCopyEnd(c, NULL) != 1) {
            snprintf(k->err, sizeof(k->err), "%s", PQerrorMessage(c));
            break;
        }
        res = PQgetResult(c);
        ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        if (!ok)
            snprintf(k->err, sizeof(k->err), "%s", PQresultErrorMessage(res));
        PQclear(res);
        while ((res = PQgetResult(c)))
            PQclear(res);
        if (ok)
            k->copied += (uint64_t)o->batch;
    }
    free(b.p);
    return NULL;
}

/* sql_value - the one value of `sql` as a double (0 on error, with a note on stderr). */
static double sql_value(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    double v = 0;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = atof(PQgetvalue(r, 0, 0));
    else
        fprintf(stderr, "bench/ingest: %s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    return v;
}

/* wal_bytes - bytes of WAL written so far (the current insert position). */
static double wal_bytes(PGconn *c)
{
    return sql_value(c, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')");
}

static double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
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
    opts o = {.clients = 8,
              .seconds = 10,
              .batch = 2000,
              .per_step = 100,
              .diverge_step = 600,
              .ranks = 8,
              .copy_sessions = 4,
              .rounds = 5};
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
        else if (!strcmp(argv[i], "--copy-sessions"))
            o.copy_sessions = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            o.rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--diverge-step"))
            o.diverge_step = atoll(argv[i + 1]);
        else {
            fprintf(stderr,
                    "usage: %s [--clients N] [--seconds S] [--batch RECORDS] [--ranks N] [--threads N] "
                    "[--copy-sessions N] [--rounds N] [--diverge-step STEP] [--db URL | --state-dir DIR]\n",
                    argv[0]);
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
    if (o.copy_sessions < 1)
        o.copy_sessions = 1;
    if (o.rounds < 1)
        o.rounds = 1;
    signal(SIGPIPE, SIG_IGN);

    char state[64] = "/tmp/lsbench.XXXXXX";
    if (!mkdtemp(state))
        return 1;
    chmod(state, 0711);
    char state_dir[300];
    snprintf(state_dir, sizeof(state_dir), "%s", o.state_dir ? o.state_dir : "");
    if (!o.state_dir)
        snprintf(state_dir, sizeof(state_dir), "%s/state", state);
    /* Every client connects from 127.0.0.1: lockstepd's allowance of one address (one node's agents) is off. */
    char conf[400];
    snprintf(conf, sizeof(conf), "%s/lockstepd.conf", state);
    FILE *cf = fopen(conf, "w");
    if (!cf || fputs("max_connections_per_ip = 0\n", cf) < 0 || fclose(cf) != 0)
        return 1;
    const char *args_embedded[] = {"--config", conf, "--state-dir", state_dir, o.threads ? "--threads" : NULL,
                                   o.threads,  NULL};
    const char *args_db[] = {"--config", conf, "--db", o.db, o.threads ? "--threads" : NULL, o.threads, NULL};
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

    char conninfo[700];
    if (o.db)
        snprintf(conninfo, sizeof(conninfo), "%s", o.db);
    else
        snprintf(conninfo, sizeof(conninfo), "host=%s/pgsock dbname=lockstep user=lockstep", state_dir);
    PGconn *adm = PQconnectdb(conninfo);
    if (PQstatus(adm) != CONNECTION_OK) {
        fprintf(stderr, "bench/ingest: cannot connect to PostgreSQL: %s", PQerrorMessage(adm));
        return 1;
    }
    PQclear(PQexec(adm, "DROP TABLE IF EXISTS " ROWS_TABLE));
    PQclear(PQexec(adm, "SET client_min_messages = warning"));
    PGresult *ddl = PQexec(adm, ROWS_DDL);
    if (PQresultStatus(ddl) != PGRES_COMMAND_OK) {
        fprintf(stderr, "bench/ingest: %s", PQresultErrorMessage(ddl));
        return 1;
    }
    PQclear(ddl);

    /* Alternating blocks, so that both phases meet the same load on this shared machine: lockstepd ingests
     * (clients post) for one block, then the same record streams are COPYed as rows into an unindexed table by
     * copy_sessions sessions (lockstepd has 2 x threads database workers) for one block of the same length,
     * one COPY and one commit per batch, while lockstepd idles; and again, `rounds` times. */
    pid_t pm = o.db ? 0 : postmaster_pid(state_dir);
    client *cs = calloc((size_t)o.clients, sizeof(*cs));
    pthread_t *th = calloc((size_t)o.clients, sizeof(*th));
    for (int i = 0; i < o.clients; i++) {
        cs[i].o = &o;
        cs[i].base = s.base;
        snprintf(cs[i].run_id, sizeof(cs[i].run_id), "%s", run[i < half ? 0 : 1]);
        cs[i].first_rank = i % half;
        cs[i].stride = half;
        cs[i].n_ranks = (o.ranks - cs[i].first_rank + half - 1) / half;
        cs[i].odd = i >= half;
    }
    copier *ks = calloc((size_t)o.copy_sessions, sizeof(*ks));
    pthread_t *kth = calloc((size_t)o.copy_sessions, sizeof(*kth));
    for (int i = 0; i < o.copy_sessions; i++) {
        ks[i] = (copier){.o = &o, .conninfo = conninfo, .cs = cs};
        for (int c = i; c < o.clients; c += o.copy_sessions) {
            ks[i].streams = realloc(ks[i].streams, (size_t)(ks[i].n_streams + 1) * sizeof(copy_stream));
            memset(&ks[i].streams[ks[i].n_streams], 0, sizeof(copy_stream));
            ks[i].streams[ks[i].n_streams++].client = c;
        }
    }
    double block = o.seconds / o.rounds, elapsed = 0, copy_elapsed = 0;
    double srv_cpu = 0, pg_cpu = 0, wal = 0, client_cpu = 0, copy_pg_cpu = 0, copy_wal = 0;
    int copy_failed = 0;
    for (int round = 0; round < o.rounds && !copy_failed; round++) {
        double wal0 = wal_bytes(adm), self0 = self_cpu();
        double srv_cpu0 = proc_cpu(s.pid, 0), pg_cpu0 = pm ? proc_cpu(pm, 1) : 0;
        double t0 = h_now();
        for (int i = 0; i < o.clients; i++) {
            cs[i].deadline = t0 + block;
            pthread_create(&th[i], NULL, client_main, &cs[i]);
        }
        for (int i = 0; i < o.clients; i++)
            pthread_join(th[i], NULL);
        elapsed += h_now() - t0;
        srv_cpu += proc_cpu(s.pid, 0) - srv_cpu0;
        pg_cpu += pm ? proc_cpu(pm, 1) - pg_cpu0 : 0;
        wal += wal_bytes(adm) - wal0;
        client_cpu += self_cpu() - self0;
        usleep(300000); /* the comparison's work left by the block, out of the COPY block */

        double cwal0 = wal_bytes(adm), cpg0 = pm ? proc_cpu(pm, 1) : 0;
        double c0 = h_now();
        for (int i = 0; i < o.copy_sessions; i++) {
            ks[i].deadline = c0 + block;
            pthread_create(&kth[i], NULL, copier_main, &ks[i]);
        }
        for (int i = 0; i < o.copy_sessions; i++) {
            pthread_join(kth[i], NULL);
            if (ks[i].err[0]) {
                fprintf(stderr, "bench/ingest: COPY session %d: %s", i, ks[i].err);
                copy_failed = 1;
            }
        }
        copy_elapsed += h_now() - c0;
        copy_pg_cpu += pm ? proc_cpu(pm, 1) - cpg0 : 0;
        copy_wal += wal_bytes(adm) - cwal0;
    }
    uint64_t records = 0, batches = 0, failures = 0, copied = 0;
    size_t n_lat = 0;
    for (int i = 0; i < o.clients; i++) {
        records += cs[i].records;
        batches += cs[i].batches;
        failures += cs[i].failures;
        n_lat += cs[i].n_lat;
    }
    for (int i = 0; i < o.copy_sessions; i++) {
        copied += ks[i].copied;
        PQfinish(ks[i].c);
        free(ks[i].streams);
    }
    double *lat = malloc((n_lat + 1) * sizeof(double));
    size_t k = 0;
    for (int i = 0; i < o.clients; i++) {
        memcpy(lat + k, cs[i].lat, cs[i].n_lat * sizeof(double));
        k += cs[i].n_lat;
        free(cs[i].lat);
    }
    qsort(lat, n_lat, sizeof(double), cmp_d);

    /* Detection: every rank of run B flipped one record at diverge_step while under load; each must be found
     * there. */
    double det[256];
    int n_det = 0, n_right = 0;
    snprintf(url, sizeof(url), "%s/api/v1/twins/%s", s.base, group);
    for (int tries = 0; tries < 100; tries++) {
        if (h_http("GET", url, NULL, NULL, 0, NULL, &resp) == 200) {
            json_t *j = json_loads(resp, 0, NULL);
            json_t *per = json_object_get(j, "per_rank");
            n_det = n_right = 0;
            for (size_t i = 0; i < json_array_size(per) && n_det < 256; i++) {
                json_t *d = json_array_get(per, i);
                det[n_det++] = json_number_value(json_object_get(d, "detection_ms"));
                n_right += json_integer_value(json_object_get(d, "step")) == o.diverge_step;
            }
            json_decref(j);
        }
        free(resp);
        if (n_det >= o.ranks)
            break;
        usleep(100000);
    }
    qsort(det, (size_t)n_det, sizeof(double), cmp_d);

    PQclear(PQexec(adm, "DROP TABLE IF EXISTS " ROWS_TABLE));
    PQfinish(adm);
    free(ks);
    free(kth);
    double copy_rate = copy_elapsed > 0 ? (double)copied / copy_elapsed : 0;

    double load[3] = {0};
    if (getloadavg(load, 3) < 1)
        load[0] = -1;
    h_srv_kill(&s, SIGTERM);
    h_srv_cleanup(&s);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", state);
    if (system(cmd) != 0)
        fprintf(stderr, "bench/ingest: cannot remove %s\n", state);

    double rate = records / elapsed;
    printf("{\"bench\": \"ingest\", \"clients\": %d, \"batch_records\": %d, \"seconds\": %.1f, "
           "\"ranks\": %d, \"records_per_s\": %.0f, \"copy_limit_records_per_s\": %.0f, \"ratio_to_copy_limit\": %.2f, "
           "\"batches_per_s\": %.1f, \"batch_p50_ms\": %.2f, \"batch_p99_ms\": %.2f, "
           "\"failed_posts\": %" PRIu64 ", \"diverge_step\": %" PRId64 ", \"divergences_found\": %d, "
           "\"divergences_right\": %d, \"divergences_expected\": %d, "
           "\"detect_p50_ms\": %.2f, \"detect_p99_ms\": %.2f, \"lockstepd_cpu_s\": %.2f, \"postgres_cpu_s\": %.2f, "
           "\"client_cpu_s\": %.2f, \"records_per_server_cpu_s\": %.0f, \"wal_bytes_per_record\": %.1f, "
           "\"rounds\": %d, \"copy_records\": %" PRIu64
           ", \"copy_sessions\": %d, \"copy_seconds\": %.1f, \"copy_postgres_cpu_s\": %.2f, "
           "\"copy_wal_bytes_per_record\": %.1f, \"load_avg_1m\": %.2f}\n",
           o.clients, o.batch, elapsed, o.ranks, rate, copy_rate, copy_rate > 0 ? rate / copy_rate : 0,
           batches / elapsed, pct(lat, n_lat, 0.5) * 1e3, pct(lat, n_lat, 0.99) * 1e3, failures, o.diverge_step, n_det,
           n_right, o.ranks, pct(det, (size_t)n_det, 0.5), pct(det, (size_t)n_det, 0.99), srv_cpu, pg_cpu, client_cpu,
           srv_cpu + pg_cpu > 0 ? (double)records / (srv_cpu + pg_cpu) : 0, records ? wal / (double)records : 0,
           o.rounds, copied, o.copy_sessions, copy_elapsed, copy_pg_cpu, copied ? copy_wal / (double)copied : 0,
           load[0]);
    free(lat);
    free(cs);
    free(th);
    return n_det == o.ranks && n_right == o.ranks && !copy_failed ? 0 : 1;
}
