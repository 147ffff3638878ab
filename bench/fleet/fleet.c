/* fleet.c - bench/fleet: lockstepd (embedded PostgreSQL on this machine) driven by the streams of a simulated
 * fleet, 10,000 ranks at a 1 s step by default, streaming digests (or records); says whether it keeps up and how fast
 * divergences are found. One JSON line.
 *
 * The ranks belong to twin groups of two runs. Every rank makes `per_step` records a step, `metrics` of them
 * scalars (loss, grad norm, ...), the others collective fingerprints; its step is due at t0 + step * step_s +
 * its phase (spread over the step), and one client thread posts it then: in digest mode the scalars and one
 * step digest (REC_STEP_DIGEST) of the other records, which it can make again, byte for byte, when a reply asks
 * for a step (send_steps); in records mode every record. The collective records after a rank's first are the same
 * on every rank of a group (as data-parallel ranks' allreduce outputs are), so a step digest is made from one record
 * and their terms, made once (alike_terms): the simulator leaves the agents' per-record work out of the cores it
 * measures the server on. In `diverge` groups, one rank of run B makes one
 * record differently from a chosen step on. Lag is how late a rank's post starts after it was due: a server that
 * keeps up answers fast enough for every thread to be on time. With `--consensus K` the collective records are
 * consensus records (the same output on every rank of a run, each placed in one of K communicators) and every step
 * of a batch also carries the rank's consensus digests (bench/fleet/consensus.h), in either mode; the line says how
 * many windows lockstepd judged and how many runs disagree. `--solo 1` registers every run alone in the consensus
 * mode (no twin group, no divergence): the batches of the production mode. With `--batch-steps K` every rank posts
 * once every K steps, all at the same step (a burst of every rank's batch in one step) or, with `--stagger 1`, rank r
 * at steps offset by r mod K (as agents' batch timers, each started with its own process, spread them). With
 * `--instances N` (1-4), N lockstepd share the database and each run's ranks spread over them, twins' batches of a
 * rank on different instances (docs/server.md, "Several lockstepd on one database"); the line sums their CPU and
 * says how many step sums were forwarded to the holders of the groups' leases. With `--rerun 1` run A of every group
 * runs first (one batch a rank, then its end) and lockstepd starts again, so that its memory holds
 * none of it: run B, a rerun, streams alone and is compared with A as PostgreSQL holds it (`memory_read`: the steps
 * of A memory read there). The groups with no diverging rank must show no divergence (`false_divergences`). With
 * `--bundle N` the ranks of a run are on nodes of N, and a node's relay posts its ranks' batches of a step as one
 * bundle (application/x-lockstep-bundle, docs/server.md), at the phase of its first rank: `posts` counts batches,
 * `requests` the requests that carried them. While the runs run, each diverging group is read every 250 ms until
 * it says the difference on its step and rank (found_*: the step digest difference whose records it asked for, or
 * the divergence), apart from the divergence stored (detect_*), which waits for the records. PostgreSQL's CPU is
 * measured on the embedded cluster, or with `--db` and `--pg-data DIR` on that cluster (its postmaster's pid file).
 */
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/lsfp1.h"
#include "common/recmatch.h"
#include "common/wire.h"
#include "bench/fleet/consensus.h"
#include "bench/fleet/post.h"
#include "tests/integration/harness.h"

#define HELD_SEQ_BASE (1ULL << 62) /* agent/hold.h: a held block's batch_seq */
#define MAX_ASK 64

typedef struct opts {
    int ranks, groups, per_step, metrics, threads, diverge;
    int batch_steps; /* a rank posts once every this many steps (LOCKSTEP_BATCH_MS longer than a step) */
    int stagger;     /* 1: rank r closes its batches at steps offset by r mod batch_steps; 0: all at one step */
    double step_s, seconds;
    int digests;
    int consensus; /* communicators per rank with consensus digests; 0: none */
    int solo;      /* runs registered alone, in the consensus mode (no twin group): the production mode's batches */
    const char *db, *state_dir, *srv_threads;
    const char *pg_data;    /* with --db: that cluster's data directory, whose postmaster's CPU is measured */
    int db_workers;         /* lockstepd's db_workers; 0: its default */
    const char *group_wait; /* lockstepd's db_group_wait_ms; NULL: its default */
    int instances;          /* lockstepd instances on the database (1-4); run A's rank r posts to instance r mod N,
                               run B's to (r + 1) mod N, so twins' batches reach different instances */
    int bundle;             /* ranks a node's relay posts in one request (1: every rank posts alone) */
    int rerun;              /* run A of every group streamed and ended before the timed part, then lockstepd
                               restarted (its memory then holds none of A, as after any restart): run B, a
                               rerun, streams alone and is compared with A as PostgreSQL holds it */
    int end;                /* after the timed part every rank of both runs ends (its end posted, as an agent's at
                               exit), and each group is read until its status settles (end_phase) */
} opts;

/* One simulated rank. */
typedef struct srank {
    int group, run, rank; /* run 0 or 1 of the group; rank within the run */
    double phase;         /* seconds into each step when it posts */
    uint64_t bseq;
    int64_t diverge_at; /* -1: never */
    int64_t posted;     /* the last step of its last batch stored (-1: none) */
} srank;

typedef struct sim {
    opts o;
    char base[128];      /* the first instance: registration and reads */
    char bases[4][128];  /* every instance */
    char (*run_ids)[40]; /* group * 2 + run */
    fleet_cons cons;
    char (*names)[64]; /* record i's name, the same in every step and rank */
    uint64_t *alike;   /* [group * alike_steps + step]: alike_terms */
    int64_t alike_steps;
    char groups[64][64];
    int ranks_per_run;
    srank *r;
    double t0, t_end;
    /* divergence watch: when the step after the diverging one was stored by both runs */
    double div_ready[64][2];
    /* what the group said while the runs ran (watch_main): the difference on its step and rank, found this long
     * after the commit that showed it (-1: not seen) */
    double found_ms[64];
    int found_right[64];
    atomic_uint_fast64_t posts, requests, fails, bytes, bytes_on_demand, on_demand_posts, records_made, asked,
        cons_digests;
} sim;

typedef struct worker_t {
    sim *s;
    int id;
    double *lag, *lat;
    size_t n, cap;
} worker_t;

/* diverge_rank - group g's diverging rank (of run B; a group g < diverge). */
static int diverge_rank(const sim *s, int g)
{
    return (g * 37) % s->ranks_per_run;
}

/* diverge_step - the step from which group g's diverging rank differs: spread over the run, from step 5 to
 * 5 steps before its end, so that every one is complete (a later step stored) in time. */
static int64_t diverge_step(const opts *o, int g)
{
    int64_t steps = (int64_t)(o->seconds / o->step_s), span = steps - 10;
    return 5 + (span > 0 && o->diverge > 1 ? span * g / (o->diverge - 1) : 0);
}

/* name_records - the records' names, made once. */
static void name_records(sim *s)
{
    static const char *const metric_names[] = {"loss", "grad_norm", "lr", "loss_scale", "tokens", "aux_loss"};
    s->names = calloc((size_t)s->o.per_step, sizeof(*s->names));
    if (!s->names)
        abort();
    for (int i = 0; i < s->o.per_step; i++)
        if (i < s->o.metrics)
            snprintf(s->names[i], sizeof(s->names[i]), "%s", metric_names[i % 6]);
        else
            snprintf(s->names[i], sizeof(s->names[i]), "layers.%d.grad.allreduce", i - s->o.metrics);
}

/* make_record - record i of a rank's step and, with consensus digests, its consensus place into `ext`
 * (REC_EXT_ENCODED_MAX bytes). */
static void make_record(const sim *s, const srank *sr, int64_t step, int i, rec_record *r, unsigned char *ext)
{
    memset(r, 0, sizeof(*r));
    r->seq = (uint64_t)step * (uint64_t)s->o.per_step + (uint64_t)i;
    r->step = step;
    r->t_ns = (int64_t)(s->t0 * 1e9) + step * 1000000000LL + i;
    /* a consensus record's output is the same on every rank of the run; so are the other collective records' but
     * the first, as data-parallel ranks' allreduce outputs are, which carries the rank (alike_terms) */
    int alike = s->o.consensus || i > s->o.metrics;
    uint64_t key[4] = {(uint64_t)sr->group, alike ? 0 : (uint64_t)sr->rank, (uint64_t)step, (uint64_t)i};
    if (i < s->o.metrics) {
        double v = 1.0 / (double)(step + 1 + i) + (double)sr->rank * 1e-9;
        r->level = LS_LEVEL_METRIC;
        r->dtype = LS_F64;
        r->nbytes = 8;
        memcpy(&r->value, &v, 8);
        r->flags = REC_HAS_VALUE;
        r->fp = fp_lsfp1(&v, 8);
    } else {
        r->level = LS_LEVEL_COLLECTIVE;
        r->dtype = LS_BF16;
        r->ndim = 2;
        r->shape[0] = 8;
        r->shape[1] = 4096 + i;
        r->nbytes = 2 * 8 * (uint64_t)r->shape[1];
        r->fp = fp_lsfp1(key, sizeof(key));
        if (sr->diverge_at >= 0 && step >= sr->diverge_at && i == s->o.metrics + 3)
            r->fp ^= 1; /* the diverging twin */
        if (s->o.consensus)
            fleet_cons_place(&s->cons, (uint32_t)sr->rank, i - s->o.metrics, r, ext);
    }
    r->name = s->names[i];
    r->name_len = (uint16_t)strlen(s->names[i]);
}

/* held_terms - the XOR of the digest terms of rank sr's records from..per_step-1 of a step. */
static uint64_t held_terms(const sim *s, const srank *sr, int64_t step, int from)
{
    uint64_t x = 0;
    for (int i = from; i < s->o.per_step; i++) {
        rec_record r;
        make_record(s, sr, step, i, &r, NULL);
        x ^= rec_digest_term(&r);
    }
    return x;
}

/* alike_terms - the XOR of the digest terms of the held records every rank of a group makes alike (the collective
 * records after the first, make_record) for each step of the run and two more, made once: a rank's step digest is
 * then its first collective record's term and this. Without it the simulator made every record of every rank-step
 * (100 a step: 10 million a second at 100,000 ranks), an agent's work on a node of its own, on the cores the server
 * is measured on. Not with consensus digests: a consensus record's place differs by rank. */
static void alike_terms(sim *s)
{
    const opts *o = &s->o;
    if (o->consensus || !o->digests)
        return;
    s->alike_steps = (int64_t)(o->seconds / o->step_s) + 2;
    s->alike = calloc((size_t)o->groups * (size_t)s->alike_steps, sizeof(*s->alike));
    if (!s->alike)
        abort();
    srank any = {.diverge_at = -1};
    for (int g = 0; g < o->groups; g++)
        for (int64_t step = 0; step < s->alike_steps; step++) {
            any.group = g;
            s->alike[(int64_t)g * s->alike_steps + step] = held_terms(s, &any, step, o->metrics + 1);
        }
    /* a rank's digest so made is the one of the records it sends when asked (send_held): checked on one */
    srank one = {.group = o->groups - 1, .rank = 1, .diverge_at = -1};
    int64_t step = s->alike_steps - 1;
    if (held_terms(s, &one, step, o->metrics + 1) != s->alike[(int64_t)one.group * s->alike_steps + step]) {
        fprintf(stderr, "bench/fleet: a step digest made from alike_terms is not its records'\n");
        abort();
    }
}

/* post - one batch, on the thread's connection to the rank's instance; the steps a digest-mode reply asks for in
 * `ask`. Returns the HTTP status. */
static long post(sim *s, fleet_conn *conns, const srank *sr, h_batch *b, long long *ask, int *n_ask, int on_demand)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records", s->run_ids[sr->group * 2 + sr->run]);
    fleet_conn *c = &conns[(sr->rank + sr->run) % s->o.instances];
    long code = fleet_post(c, path, "application/x-lockstep", b->buf, b->len);
    atomic_fetch_add(&s->requests, 1);
    if (code == 200) {
        atomic_fetch_add(&s->posts, 1);
        atomic_fetch_add(on_demand ? &s->bytes_on_demand : &s->bytes, b->len);
        if (ask)
            *n_ask = wire_obj_int_array(c->reply, "send_steps", ask, MAX_ASK);
    } else if (atomic_fetch_add(&s->fails, 1) == 0) {
        fprintf(stderr, "bench/fleet: a post failed (HTTP %ld): %s\n", code, c->reply);
    }
    return code;
}

/* batch_header - a batch stream header of this rank (flags: REC_HDR_HELD for records sent on demand). */
static void batch_header(h_batch *b, const srank *sr, uint64_t bseq, uint32_t flags)
{
    rec_header h;
    memset(&h, 0, sizeof(h));
    h.kind = REC_KIND_BATCH;
    h.rank = (uint32_t)sr->rank;
    h.batch_seq = bseq;
    h.flags = flags;
    snprintf(h.algo, sizeof(h.algo), "lsfp1");
    b->len = 0;
    size_t n = rec_header_size(&h);
    if (b->cap < n + 65536) {
        b->cap = n + 65536 + (size_t)0;
        b->buf = realloc(b->buf, b->cap);
        if (!b->buf)
            abort();
    }
    rec_header_encode(&h, b->buf);
    b->len = n;
}

/* send_held - a reply asked for step `step`: the records this rank held back, made again. */
static void send_held(sim *s, fleet_conn *conns, const srank *sr, int64_t step, h_batch *b)
{
    batch_header(b, sr, HELD_SEQ_BASE + (uint64_t)step * (uint64_t)s->o.per_step + (uint64_t)s->o.metrics,
                 REC_HDR_HELD);
    for (int i = s->o.metrics; i < s->o.per_step; i++) {
        rec_record r;
        unsigned char ext[REC_EXT_ENCODED_MAX];
        make_record(s, sr, step, i, &r, ext);
        h_batch_add(b, &r);
    }
    atomic_fetch_add(&s->on_demand_posts, 1);
    post(s, conns, sr, b, NULL, NULL, 1);
}

/* add_steps - the rank's steps first..last to batch b: in digest mode its scalars and one step digest of the other
 * records a step (it holds them back), else every record; with consensus digests, those. */
static void add_steps(sim *s, const srank *sr, int64_t first, int64_t last, int digests, h_batch *b, rec_record *rs,
                      unsigned char (*exts)[REC_EXT_ENCODED_MAX])
{
    const opts *o = &s->o;
    for (int64_t bs = first; bs <= last; bs++) {
        uint64_t digest = 0;
        int held = 0;
        if (digests && s->alike && bs < s->alike_steps && (sr->diverge_at < 0 || bs < sr->diverge_at)) {
            for (int i = 0; i <= o->metrics; i++) {
                make_record(s, sr, bs, i, &rs[i], exts[i]);
                if (i < o->metrics)
                    h_batch_add(b, &rs[i]);
            }
            digest = rec_digest_term(&rs[o->metrics]) ^ s->alike[(int64_t)sr->group * s->alike_steps + bs];
            held = o->per_step - o->metrics;
        }
        for (int i = held ? o->per_step : 0; i < o->per_step; i++) {
            make_record(s, sr, bs, i, &rs[i], exts[i]);
            if (digests && i >= o->metrics) { /* held back: only its digest term goes */
                digest ^= rec_digest_term(&rs[i]);
                held++;
                continue;
            }
            h_batch_add(b, &rs[i]);
        }
        if (held) {
            rec_record d;
            memset(&d, 0, sizeof(d));
            d.seq = (uint64_t)bs * (uint64_t)o->per_step + (uint64_t)o->per_step - 1;
            d.step = bs;
            d.nbytes = (uint64_t)held;
            d.fp = digest;
            d.flags = REC_STEP_DIGEST;
            d.dtype = LS_BYTES;
            d.name = REC_STEP_DIGEST_NAME;
            d.name_len = (uint16_t)strlen(REC_STEP_DIGEST_NAME);
            h_batch_add(b, &d);
        }
        if (o->consensus) /* in full in either mode, as the agent sends them */
            atomic_fetch_add(
                &s->cons_digests,
                (uint64_t)fleet_cons_add(&s->cons, b, (uint32_t)sr->rank, rs + o->metrics, o->per_step - o->metrics,
                                         (uint64_t)bs * (uint64_t)o->per_step + (uint64_t)o->per_step - 1));
    }
}

/* reference - --rerun: every rank of run A posts its whole run (the timed part's steps and two more) in one batch, and
 * ends. Its digests as a rank streaming them sends them, but for the rank its rerun diverges on, which sends every
 * record: an ended run's agent cannot send records when asked. Returns -1 when a post failed. */
static int reference(sim *s)
{
    const opts *o = &s->o;
    int64_t steps = (int64_t)(o->seconds / o->step_s) + 2;
    h_batch b = {0};
    rec_record *rs = calloc((size_t)o->per_step, sizeof(*rs));
    unsigned char(*exts)[REC_EXT_ENCODED_MAX] = calloc((size_t)o->per_step, sizeof(*exts));
    fleet_conn c;
    if (!rs || !exts || fleet_conn_init(&c, s->base) < 0)
        abort();
    int rc = 0;
    for (int i = 0; i < o->ranks && rc == 0; i++) {
        srank *sr = &s->r[i];
        if (sr->run != 0)
            continue;
        char path[160], body[64];
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records", s->run_ids[sr->group * 2]);
        int twin_diverges = sr->group < o->diverge && sr->rank == diverge_rank(s, sr->group);
        batch_header(&b, sr, sr->bseq++, 0);
        add_steps(s, sr, 0, steps - 1, o->digests && !twin_diverges, &b, rs, exts);
        long code = fleet_post(&c, path, "application/x-lockstep", b.buf, b.len);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/end", s->run_ids[sr->group * 2]);
        snprintf(body, sizeof(body), "{\"rank\": %d, \"exit_code\": 0}", sr->rank);
        long end = code == 200 ? fleet_post(&c, path, "application/json", body, strlen(body)) : 0;
        if (code != 200 || end != 200) {
            fprintf(stderr, "bench/fleet: run A's rank %d: HTTP %ld %ld: %s\n", sr->rank, code, end, c.reply);
            rc = -1;
        }
    }
    fleet_conn_close(&c);
    h_batch_free(&b);
    free(rs);
    free(exts);
    return rc;
}

static void sleep_until(double t)
{
    double d = t - h_now();
    if (d <= 0)
        return;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&ts, NULL);
}

static void keep(worker_t *w, double lag, double lat)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 4096;
        w->lag = realloc(w->lag, w->cap * sizeof(double));
        w->lat = realloc(w->lat, w->cap * sizeof(double));
        if (!w->lag || !w->lat)
            abort();
    }
    w->lag[w->n] = lag;
    w->lat[w->n++] = lat;
}

static int by_phase(const void *a, const void *b, void *arg)
{
    const sim *s = arg;
    double x = s->r[*(const int *)a].phase, y = s->r[*(const int *)b].phase;
    return x < y ? -1 : x > y;
}

/* node_end - one past the last rank index of the node whose first is `first` (--bundle: a run's ranks on nodes of
 * o->bundle, the last one smaller when they do not divide). */
static int node_end(const sim *s, int first)
{
    int run_end = (first / s->ranks_per_run + 1) * s->ranks_per_run;
    return first + s->o.bundle < run_end ? first + s->o.bundle : run_end;
}

/* post_bundle - the batches of ranks first..end-1 (step `step`'s, made by the caller in `u`, each after its 4-byte
 * little-endian length) as one bundle on the connection of the node's first rank; each rank's batch counted, its
 * batch_seq advanced when stored, the steps its reply asks for sent. Returns the HTTP status. */
static long post_bundle(sim *s, fleet_conn *conns, int first, int end, int64_t step, const h_batch *u, h_batch *hb)
{
    const srank *sr = &s->r[first];
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records", s->run_ids[sr->group * 2 + sr->run]);
    fleet_conn *c = &conns[(sr->rank + sr->run) % s->o.instances];
    long code = fleet_post(c, path, "application/x-lockstep-bundle", u->buf, u->len);
    atomic_fetch_add(&s->requests, 1);
    json_t *o = code == 200 ? json_loads(c->reply, 0, NULL) : NULL;
    json_t *each = json_object_get(o, "batches");
    if (json_array_size(each) != (size_t)(end - first)) {
        if (atomic_fetch_add(&s->fails, (uint64_t)(end - first)) == 0)
            fprintf(stderr, "bench/fleet: a bundle failed (HTTP %ld): %s\n", code, c->reply);
        json_decref(o);
        return code == 200 ? -1 : code;
    }
    double now = h_now();
    for (int k = first; k < end; k++) {
        srank *r = &s->r[k];
        json_t *e = json_array_get(each, (size_t)(k - first));
        if (json_integer_value(json_object_get(e, "status")) != 200) {
            if (atomic_fetch_add(&s->fails, 1) == 0)
                fprintf(stderr, "bench/fleet: a bundle's batch failed: %s\n", c->reply);
            continue;
        }
        atomic_fetch_add(&s->posts, 1);
        r->bseq++;
        r->posted = step;
        if (r->diverge_at >= 0 && step > r->diverge_at && s->div_ready[r->group][r->run] == 0)
            s->div_ready[r->group][r->run] = now;
        json_t *ask = json_object_get(e, "send_steps"), *v;
        size_t i;
        json_array_foreach(ask, i, v)
        {
            atomic_fetch_add(&s->asked, 1);
            send_held(s, conns, r, json_integer_value(v), hb);
        }
    }
    atomic_fetch_add(&s->bytes, u->len);
    json_decref(o);
    return code;
}

/* bundle_add - append batch `b` to bundle `u`, after its 4-byte little-endian length. */
static void bundle_add(h_batch *u, const h_batch *b)
{
    if (u->len + 4 + b->len > u->cap) {
        u->cap = 2 * (u->len + 4 + b->len);
        u->buf = realloc(u->buf, u->cap);
        if (!u->buf)
            abort();
    }
    uint32_t n = (uint32_t)b->len;
    wire_bundle_len_put(u->buf + u->len, n);
    memcpy(u->buf + u->len + 4, b->buf, b->len);
    u->len += 4 + b->len;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    sim *s = w->s;
    const opts *o = &s->o;
    int n = 0, *mine = malloc(((size_t)o->ranks / (size_t)o->threads + 2) * sizeof(int));
    int k_node = 0; /* --bundle: node leaders, dealt to the threads in turn */
    for (int r = 0; r < o->ranks; r++) {
        if (o->bundle > 1 && (r % s->ranks_per_run) % o->bundle != 0)
            continue; /* not the first rank of its node */
        if (k_node++ % o->threads == w->id)
            mine[n++] = r;
    }
    qsort_r(mine, (size_t)n, sizeof(int), by_phase, s);
    h_batch b = {0}, hb = {0}, u = {0};
    rec_record *rs = calloc((size_t)o->per_step, sizeof(*rs));
    unsigned char(*exts)[REC_EXT_ENCODED_MAX] = calloc((size_t)o->per_step, sizeof(*exts));
    if (!mine || !rs || !exts)
        abort();
    fleet_conn *conns = calloc((size_t)o->instances, sizeof(*conns));
    for (int i = 0; conns && i < o->instances; i++)
        if (fleet_conn_init(&conns[i], s->bases[i]) < 0) {
            fprintf(stderr, "bench/fleet: %s is not a plain http address of 127.0.0.1\n", s->bases[i]);
            abort();
        }
    if (!conns)
        abort();
    for (int64_t step = 0; n > 0; step++) { /* a thread no node leader was dealt to has nothing to post */
        for (int k = 0; k < n; k++) {
            srank *sr = &s->r[mine[k]];
            double due = s->t0 + (double)step * o->step_s + sr->phase;
            if (due >= s->t_end || h_now() >= s->t_end + o->step_s)
                goto out; /* the run is over (a server that fell behind leaves a backlog: not posted) */
            if (o->rerun && sr->run == 0)
                continue; /* it ran before (reference) */
            int64_t off = o->stagger ? sr->rank % o->batch_steps : 0;
            if ((step + 1 + off) % o->batch_steps != 0)
                continue; /* this rank's batch closes with a later step */
            sleep_until(due);
            double start = h_now();
            int64_t first = step + 1 - o->batch_steps < 0 ? 0 : step + 1 - o->batch_steps;
            if (o->bundle > 1) { /* the node's relay: every rank's batch of this step in one request */
                int end = node_end(s, mine[k]);
                u.len = 0;
                for (int q = mine[k]; q < end; q++) {
                    batch_header(&b, &s->r[q], s->r[q].bseq, 0);
                    add_steps(s, &s->r[q], first, step, o->digests, &b, rs, exts);
                    bundle_add(&u, &b);
                }
                atomic_fetch_add(&s->records_made,
                                 (uint64_t)(end - mine[k]) * (uint64_t)o->per_step * (uint64_t)(step + 1 - first));
                post_bundle(s, conns, mine[k], end, step, &u, &hb);
                keep(w, start - due, h_now() - start);
                continue;
            }
            batch_header(&b, sr, sr->bseq, 0);
            add_steps(s, sr, first, step, o->digests, &b, rs, exts);
            atomic_fetch_add(&s->records_made, (uint64_t)o->per_step * (uint64_t)(step + 1 - first));
            long long ask[MAX_ASK];
            int n_ask = 0;
            long code = post(s, conns, sr, &b, ask, &n_ask, 0);
            double end = h_now();
            keep(w, start - due, end - start);
            if (code != 200)
                continue; /* this step's batch is lost to the simulation: counted as failed */
            sr->bseq++;
            sr->posted = step;
            if (sr->diverge_at >= 0 && step > sr->diverge_at && s->div_ready[sr->group][sr->run] == 0)
                s->div_ready[sr->group][sr->run] = end; /* the batch that made the diverging step comparable */
            for (int a = 0; a < n_ask; a++) {
                atomic_fetch_add(&s->asked, 1);
                send_held(s, conns, sr, ask[a], &hb);
            }
        }
    }
out:
    h_batch_free(&b);
    h_batch_free(&hb);
    h_batch_free(&u);
    free(rs);
    for (int i = 0; i < o->instances; i++)
        fleet_conn_close(&conns[i]);
    free(conns);
    free(exts);
    free(mine);
    return NULL;
}

/* watch_one - group g as its twins read says it while the runs run: its first divergence, or else the step digest
 * difference lockstepd awaits the records of (awaiting_records: the diverging rank's entry, or the first); 1 when
 * either is there. */
static int watch_one(sim *s, int g)
{
    char url[300], *resp = NULL;
    snprintf(url, sizeof(url), "%s/api/v1/twins/%s", s->base, s->groups[g]);
    if (h_http("GET", url, NULL, NULL, 0, NULL, &resp) != 200) {
        free(resp);
        return 0;
    }
    json_t *j = json_loads(resp, 0, NULL), *seen = json_object_get(j, "first_divergence");
    free(resp);
    int64_t want_step = diverge_step(&s->o, g);
    int want_rank = diverge_rank(s, g);
    if (!json_is_object(seen)) {
        size_t i;
        json_t *e;
        seen = NULL;
        json_array_foreach(json_object_get(j, "awaiting_records"), i, e)
        {
            if (!seen || json_integer_value(json_object_get(e, "rank")) == want_rank)
                seen = e;
        }
    }
    if (seen) {
        s->found_ms[g] = json_number_value(json_object_get(seen, "detection_ms"));
        s->found_right[g] = json_integer_value(json_object_get(seen, "step")) == want_step &&
                            json_integer_value(json_object_get(seen, "rank")) == want_rank;
    }
    json_decref(j);
    return seen != NULL;
}

/* watch_main - while the runs run, each diverging group whose diverging rank made its diverging step comparable read
 * every 250 ms until it says the difference (watch_one): how soon a user learns where, its cause or not yet. */
static void *watch_main(void *arg)
{
    sim *s = arg;
    int left = s->o.diverge;
    while (left > 0 && h_now() < s->t_end + 20) {
        for (int g = 0; g < s->o.diverge; g++)
            if (s->found_ms[g] < 0 && (s->div_ready[g][0] > 0 || s->div_ready[g][1] > 0) && watch_one(s, g))
                left--;
        usleep(250000);
    }
    return NULL;
}

/* proc_cpu - CPU seconds of `pid` (with `children`: plus its live children's, as for the postmaster). */
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
        unsigned long long v[4] = {0};
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

/* postmaster_pid - the postmaster of the cluster in data directory `pgdata` (0: none running there). */
static pid_t postmaster_pid(const char *pgdata)
{
    char path[1100];
    snprintf(path, sizeof(path), "%s/postmaster.pid", pgdata);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

static double wal_bytes(PGconn *c)
{
    PGresult *r = PQexec(c, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')");
    double v = PQresultStatus(r) == PGRES_TUPLES_OK ? atof(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    return v;
}

/* The ranks handed to the look, by why, over the instances. */
typedef struct handed {
    json_t *by; /* reason -> count */
    double sum;
} handed;

/* add_reason - one `{reason="..."}` sample of lockstepd_compare_memory_handed_total into `arg` (a handed). */
static void add_reason(const char *rest, double value, void *arg)
{
    handed *h = arg;
    char reason[64];
    if (sscanf(rest, "{reason=\"%63[^\"]\"}", reason) != 1)
        return;
    json_object_set_new(h->by, reason,
                        json_integer(json_integer_value(json_object_get(h->by, reason)) + (json_int_t)value));
    h->sum += value;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
    return n ? v[(size_t)(p * (double)(n - 1) + 0.5)] : 0;
}

static double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* The end phase (--end): every rank of both runs posts its end, spread over the client threads, each on its
 * connection to the rank's instance; then every group is read until its status is no longer pending. */
typedef struct ender {
    sim *s;
    int id, threads;
    double *lat; /* seconds each end took */
    size_t n;
    int fails;
} ender;

static void *end_main(void *arg)
{
    ender *e = arg;
    sim *s = e->s;
    fleet_conn conns[4];
    for (int i = 0; i < s->o.instances; i++)
        if (fleet_conn_init(&conns[i], s->bases[i]) < 0)
            abort();
    e->lat = malloc(((size_t)s->o.ranks / (size_t)e->threads + 1) * sizeof(double));
    h_batch hb = {0};
    for (int i = e->id; i < s->o.ranks; i += e->threads) {
        const srank *sr = &s->r[i];
        char path[128], body[64];
        snprintf(path, sizeof(path), "/api/v1/runs/%s/end", s->run_ids[sr->group * 2 + sr->run]);
        int len = snprintf(body, sizeof(body), "{\"rank\": %d, \"exit_code\": 0}", sr->rank);
        double t = h_now();
        long code =
            fleet_post(&conns[(sr->rank + sr->run) % s->o.instances], path, "application/json", body, (size_t)len);
        e->lat[e->n++] = h_now() - t;
        if (code != 200 && e->fails++ == 0)
            fprintf(stderr, "bench/fleet: an end failed (HTTP %ld): %s\n", code, conns[0].reply);
        /* as an agent does before it exits: the held records of the steps the reply asks for */
        long long ask[MAX_ASK];
        int n_ask = code == 200 ? wire_obj_int_array(conns[(sr->rank + sr->run) % s->o.instances].reply, "send_steps",
                                                     ask, MAX_ASK)
                                : 0;
        for (int a = 0; a < n_ask; a++) {
            atomic_fetch_add(&s->asked, 1);
            send_held(s, conns, sr, ask[a], &hb);
        }
    }
    for (int i = 0; i < s->o.instances; i++)
        fleet_conn_close(&conns[i]);
    h_batch_free(&hb);
    return NULL;
}

/* group_status - group g's status and its reason as its twin page says them (empty when the read failed). */
static void group_status(const sim *s, int g, char *st, size_t st_cap, char *why, size_t why_cap)
{
    char url[300], *resp = NULL;
    st[0] = why[0] = 0;
    snprintf(url, sizeof(url), "%s/api/v1/twins/%s", s->base, s->groups[g]);
    if (h_http("GET", url, NULL, NULL, 0, NULL, &resp) == 200) {
        h_json_str(resp, "status", st, st_cap);
        h_json_str(resp, "status_reason", why, why_cap);
    }
    free(resp);
}

/* metric_sum - sample `name` of every instance's /metrics, summed; -1 when one lacks it. */
static double metric_sum(const sim *s, const char *name)
{
    double sum = 0;
    for (int i = 0; i < s->o.instances; i++) {
        double v = h_metric(s->bases[i], name, NULL);
        if (v < 0)
            return -1;
        sum += v;
    }
    return sum;
}

/* end_phase - the ends and the settling, as the line's end_* and settle_* fields into `out`. */
static void end_phase(sim *s, const pid_t *srv_pids, pid_t pm, char *out, size_t cap)
{
    const opts *o = &s->o;
    double cpu0 = 0, pg0 = pm ? proc_cpu(pm, 1) : 0;
    for (int i = 0; i < o->instances; i++)
        cpu0 += proc_cpu(srv_pids[i], 0);
    const char *vouched_name = "lockstepd_compare_ends_total{way=\"memory\"}";
    double vouched0 = metric_sum(s, vouched_name);
    ender *es = calloc((size_t)o->threads, sizeof(*es));
    pthread_t *th = calloc((size_t)o->threads, sizeof(*th));
    double t0 = h_now();
    for (int t = 0; t < o->threads; t++) {
        es[t] = (ender){.s = s, .id = t, .threads = o->threads};
        pthread_create(&th[t], NULL, end_main, &es[t]);
    }
    size_t n = 0;
    int fails = 0;
    for (int t = 0; t < o->threads; t++) {
        pthread_join(th[t], NULL);
        n += es[t].n;
        fails += es[t].fails;
    }
    double posted = h_now() - t0, vouched = metric_sum(s, vouched_name);
    vouched = vouched >= 0 && vouched0 >= 0 ? vouched - vouched0 : -1;
    double *lat = malloc((n + 1) * sizeof(double));
    for (int t = 0, k = 0; t < o->threads; k += (int)es[t].n, t++) {
        memcpy(lat + k, es[t].lat, es[t].n * sizeof(double));
        free(es[t].lat);
    }
    qsort(lat, n, sizeof(double), cmp_d);
    /* what each group must say: diverged where both runs' diverging rank stored a step past its diverging one (the
     * step was complete while they ran, and its records were asked for then); where the diverging step was their
     * last, only the ends complete it, and the run that ended first can no longer be asked for its held records
     * (they wait in its spool for `lockstep replay`): pending; match where the step was not reached */
    const char *want[64];
    double settled_at[64];
    const char *final[64] = {0};
    int left = 0;
    for (int g = 0; g < o->groups; g++) {
        int reached = 0, past = 0;
        for (int run = 0; run < 2 && g < o->diverge; run++) { /* s->r: group by group, run A's ranks, then B's */
            const srank *sr = &s->r[(g * 2 + run) * s->ranks_per_run + diverge_rank(s, g)];
            reached += sr->posted >= diverge_step(o, g);
            past += sr->posted > diverge_step(o, g);
        }
        want[g] = past == 2 ? "diverged" : reached == 2 ? "pending" : "match";
        settled_at[g] = -1;
        left += strcmp(want[g], "pending") != 0;
    }
    while (left > 0 && h_now() < t0 + posted + 120) {
        for (int g = 0; g < o->groups; g++) {
            if (settled_at[g] >= 0 || !strcmp(want[g], "pending"))
                continue;
            char st[32], why[400];
            group_status(s, g, st, sizeof(st), why, sizeof(why));
            if (*st && strcmp(st, "pending") != 0) {
                settled_at[g] = h_now() - t0;
                final[g] = !strcmp(st, "diverged") ? "diverged" : !strcmp(st, "match") ? "match" : "other";
                left--;
            }
        }
        if (left > 0)
            usleep(250000);
    }
    int settled = 0, right = 0, awaiting = 0;
    double last = 0;
    for (int g = 0; g < o->groups; g++) {
        char st[32], why[400];
        group_status(s, g, st, sizeof(st), why, sizeof(why));
        int ok = settled_at[g] >= 0 && !strcmp(final[g], want[g]);
        if (!strcmp(want[g], "pending")) { /* it says so, and names what sends the records */
            ok = !strcmp(st, "pending") && strstr(why, "lockstep replay");
            awaiting += ok;
            right += ok;
        }
        if (settled_at[g] >= 0) {
            settled++;
            right += ok;
            last = settled_at[g] > last ? settled_at[g] : last;
        }
        if (!ok) /* what the group says instead */
            fprintf(stderr, "bench/fleet: after the ends, group %s (%s) says %s: %s\n", s->groups[g], want[g], st, why);
    }
    double cpu = -cpu0, pg = pm ? proc_cpu(pm, 1) - pg0 : -1;
    for (int i = 0; i < o->instances; i++)
        cpu += proc_cpu(srv_pids[i], 0);
    snprintf(out, cap,
             ", \"ends\": %zu, \"end_failed\": %d, \"end_s\": %.1f, \"end_post_p50_ms\": %.2f, "
             "\"end_post_p99_ms\": %.2f, \"end_vouched\": %.0f, \"settled\": %d, \"awaiting_spool\": %d, "
             "\"settled_right\": %d, "
             "\"settle_s\": %.1f, "
             "\"end_lockstepd_cpu_s\": %.1f, \"end_postgres_cpu_s\": %.1f",
             n, fails, posted, pct(lat, n, 0.5) * 1e3, pct(lat, n, 0.99) * 1e3, vouched, settled, awaiting, right,
             settled + awaiting == o->groups ? last : -1.0, cpu, pg);
    free(lat);
    free(es);
    free(th);
}

int main(int argc, char **argv)
{
    static sim s;
    opts *o = &s.o;
    *o = (opts){.ranks = 10000,
                .groups = 10,
                .per_step = 100,
                .metrics = 4,
                .threads = 200,
                .diverge = 5,
                .step_s = 1.0,
                .seconds = 120,
                .digests = 1,
                .batch_steps = 1,
                .bundle = 1,
                .instances = 1};
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            k = "--help"; /* every option takes a value */
        if (!strcmp(k, "--ranks"))
            o->ranks = atoi(v);
        else if (!strcmp(k, "--groups"))
            o->groups = atoi(v);
        else if (!strcmp(k, "--per-step"))
            o->per_step = atoi(v);
        else if (!strcmp(k, "--metrics"))
            o->metrics = atoi(v);
        else if (!strcmp(k, "--threads"))
            o->threads = atoi(v);
        else if (!strcmp(k, "--diverge"))
            o->diverge = atoi(v);
        else if (!strcmp(k, "--step"))
            o->step_s = atof(v);
        else if (!strcmp(k, "--seconds"))
            o->seconds = atof(v);
        else if (!strcmp(k, "--batch-steps"))
            o->batch_steps = atoi(v);
        else if (!strcmp(k, "--stagger"))
            o->stagger = atoi(v) != 0;
        else if (!strcmp(k, "--mode"))
            o->digests = strcmp(v, "records") != 0;
        else if (!strcmp(k, "--consensus"))
            o->consensus = atoi(v);
        else if (!strcmp(k, "--solo"))
            o->solo = atoi(v) != 0;
        else if (!strcmp(k, "--db"))
            o->db = v;
        else if (!strcmp(k, "--state-dir"))
            o->state_dir = v;
        else if (!strcmp(k, "--pg-data"))
            o->pg_data = v;
        else if (!strcmp(k, "--server-threads"))
            o->srv_threads = v;
        else if (!strcmp(k, "--db-workers"))
            o->db_workers = atoi(v);
        else if (!strcmp(k, "--group-wait-ms"))
            o->group_wait = v;
        else if (!strcmp(k, "--instances"))
            o->instances = atoi(v);
        else if (!strcmp(k, "--rerun"))
            o->rerun = atoi(v) != 0;
        else if (!strcmp(k, "--bundle"))
            o->bundle = atoi(v);
        else if (!strcmp(k, "--end"))
            o->end = atoi(v) != 0;
        else {
            fprintf(
                stderr,
                "usage: %s [--ranks N] [--groups G] [--per-step R] [--metrics M] [--step S] "
                "[--seconds T] [--batch-steps K] [--stagger 0|1] [--mode digests|records] [--threads N] [--diverge G] "
                "[--server-threads N] [--db-workers N] [--group-wait-ms W] [--instances N] [--consensus K] [--solo "
                "0|1] [--rerun 0|1] [--bundle N] [--end 0|1] [--db URL [--pg-data DIR] | --state-dir DIR]\n",
                argv[0]);
            return 2;
        }
    }
    if (o->groups < 1 || o->groups > 64 || o->ranks < 2 * o->groups || o->metrics >= o->per_step || o->threads < 1 ||
        o->batch_steps < 1 || o->instances < 1 || o->instances > 4 || o->bundle < 1 || o->bundle > WIRE_BUNDLE_MAX ||
        (o->bundle > 1 && o->rerun)) {
        fprintf(stderr, "bench/fleet: need 1..64 groups, 2 ranks a group at least, metrics < per-step, 1..4 instances, "
                        "a bundle of 1..256 ranks (not with --rerun)\n");
        return 2;
    }
    if (o->diverge > o->groups)
        o->diverge = o->groups;
    if (o->solo && !o->consensus) {
        fprintf(stderr, "bench/fleet: --solo runs are consensus-mode runs: give --consensus K too\n");
        return 2;
    }
    if (o->solo)
        o->diverge = 0; /* no twin to diverge from */
    if (o->end && (o->solo || o->rerun)) {
        fprintf(stderr, "bench/fleet: --end ends the twins of the timed part: no --solo, no --rerun\n");
        return 2;
    }
    if (o->rerun && (o->solo || o->instances > 1)) {
        fprintf(stderr, "bench/fleet: --rerun compares twins on one lockstepd: no --solo, one instance\n");
        return 2;
    }
    s.ranks_per_run = o->ranks / (2 * o->groups);
    o->ranks = s.ranks_per_run * 2 * o->groups;
    if (o->consensus < 0 || o->consensus > 5 || (o->consensus > 1 && 4 << (o->consensus - 1) >= s.ranks_per_run)) {
        fprintf(stderr, "bench/fleet: --consensus K needs 0 <= K <= 5 and runs of more than 4 << (K - 1) ranks\n");
        return 2;
    }
    fleet_cons_init(&s.cons, o->consensus, (uint32_t)s.ranks_per_run);
    name_records(&s);
    alike_terms(&s);
    if (o->threads > o->ranks)
        o->threads = o->ranks;
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    char state[64] = "/tmp/lsfleet.XXXXXX";
    if (!mkdtemp(state))
        return 1;
    chmod(state, 0711);
    char state_dir[300];
    snprintf(state_dir, sizeof(state_dir), "%s", o->state_dir ? o->state_dir : "");
    if (!o->state_dir)
        snprintf(state_dir, sizeof(state_dir), "%s/state", state);
    /* The whole simulated fleet connects from 127.0.0.1: lockstepd's allowance of one address (one node's agents)
     * is off. */
    char conf[400];
    snprintf(conf, sizeof(conf), "%s/lockstepd.conf", state);
    FILE *cf = fopen(conf, "w");
    if (!cf || fputs("max_connections_per_ip = 0\n", cf) < 0 ||
        (o->db_workers > 0 && fprintf(cf, "db_workers = %d\n", o->db_workers) < 0) ||
        (o->group_wait && fprintf(cf, "db_group_wait_ms = %s\n", o->group_wait) < 0) || fclose(cf) != 0)
        return 1;
    const char *args_embedded[] = {"--config",     conf, "--state-dir", state_dir, o->srv_threads ? "--threads" : NULL,
                                   o->srv_threads, NULL};
    const char *args_db[] = {"--config",     conf, "--db", o->db, o->srv_threads ? "--threads" : NULL,
                             o->srv_threads, NULL};
    h_srv srv[4];
    if (h_srv_start(&srv[0], o->db ? args_db : args_embedded) < 0) {
        fprintf(stderr, "bench/fleet: lockstepd did not start\n");
        return 1;
    }
    char conninfo[700];
    if (o->db)
        snprintf(conninfo, sizeof(conninfo), "%s", o->db);
    else
        snprintf(conninfo, sizeof(conninfo), "host=%s/pgsock dbname=lockstep user=lockstep", state_dir);
    const char *args_more[] = {"--config",     conf, "--db", conninfo, o->srv_threads ? "--threads" : NULL,
                               o->srv_threads, NULL};
    for (int i = 1; i < o->instances; i++)
        if (h_srv_start(&srv[i], args_more) < 0) {
            fprintf(stderr, "bench/fleet: lockstepd instance %d did not start\n", i + 1);
            return 1;
        }
    for (int i = 0; i < o->instances; i++)
        snprintf(s.bases[i], sizeof(s.bases[i]), "%s", srv[i].base);
    snprintf(s.base, sizeof(s.base), "%s", srv[0].base);

    /* the twin groups: two runs each */
    s.run_ids = calloc((size_t)o->groups * 2, sizeof(*s.run_ids));
    char url[300], *resp = NULL;
    snprintf(url, sizeof(url), "%s/api/v1/runs", s.base);
    for (int g = 0; g < o->groups; g++) {
        snprintf(s.groups[g], sizeof(s.groups[g]), "fleet-%d-%d", (int)getpid(), g);
        for (int k = 0; k < 2; k++) {
            char body[300];
            if (o->solo)
                snprintf(body, sizeof(body), "{\"job_id\": \"%d\", \"ranks\": %d, \"mode\": \"consensus\"}",
                         1000 + 2 * g + k, s.ranks_per_run);
            else
                snprintf(body, sizeof(body),
                         "{\"job_id\": \"%d\", \"twin_group\": \"%s\", \"ranks\": %d, \"mode\": \"det\"}",
                         1000 + 2 * g + k, s.groups[g], s.ranks_per_run);
            if (h_http("POST", url, NULL, body, strlen(body), NULL, &resp) != 201 ||
                h_json_str(resp, "run_id", s.run_ids[g * 2 + k], 40) < 0) {
                fprintf(stderr, "bench/fleet: cannot register a run: %s\n", resp ? resp : "");
                return 1;
            }
            free(resp);
            resp = NULL;
        }
    }
    s.r = calloc((size_t)o->ranks, sizeof(*s.r));
    for (int i = 0; i < o->ranks; i++) {
        srank *sr = &s.r[i];
        sr->group = i / (2 * s.ranks_per_run);
        sr->run = (i / s.ranks_per_run) % 2;
        sr->rank = i % s.ranks_per_run;
        int lead = o->bundle > 1 ? i - (i % s.ranks_per_run) % o->bundle : i; /* a node posts at its first's phase */
        sr->phase = o->step_s * (double)(((uint64_t)lead * 0x9e3779b97f4a7c15ULL) >> 11) / (double)(1ULL << 53);
        sr->diverge_at = -1;
        sr->posted = -1;
        if (sr->group < o->diverge && sr->run == 1 && sr->rank == diverge_rank(&s, sr->group))
            sr->diverge_at = diverge_step(o, sr->group);
    }

    if (o->rerun) { /* run A streams and ends; a fresh lockstepd holds none of it in memory */
        if (reference(&s) < 0)
            return 1;
        h_srv_kill(&srv[0], SIGTERM);
        h_srv_cleanup(&srv[0]);
        if (h_srv_start(&srv[0], o->db ? args_db : args_embedded) < 0) {
            fprintf(stderr, "bench/fleet: lockstepd did not start again\n");
            return 1;
        }
        snprintf(s.bases[0], sizeof(s.bases[0]), "%s", srv[0].base);
        snprintf(s.base, sizeof(s.base), "%s", srv[0].base);
    }

    PGconn *adm = PQconnectdb(conninfo);
    char pgdata[1050];
    snprintf(pgdata, sizeof(pgdata), "%s/pgdata", state_dir);
    pid_t pm = o->db ? (o->pg_data ? postmaster_pid(o->pg_data) : 0) : postmaster_pid(pgdata);
    double wal0 = PQstatus(adm) == CONNECTION_OK ? wal_bytes(adm) : 0;
    double srv_cpu0 = 0, pg_cpu0 = pm ? proc_cpu(pm, 1) : 0, self0 = self_cpu();
    for (int i = 0; i < o->instances; i++)
        srv_cpu0 += proc_cpu(srv[i].pid, 0);

    worker_t *ws = calloc((size_t)o->threads, sizeof(*ws));
    pthread_t *th = calloc((size_t)o->threads, sizeof(*th));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    s.t0 = h_now() + 1.0;
    s.t_end = s.t0 + o->seconds;
    for (int t = 0; t < o->threads; t++) {
        ws[t] = (worker_t){.s = &s, .id = t};
        if (pthread_create(&th[t], &attr, worker_main, &ws[t]) != 0) {
            fprintf(stderr, "bench/fleet: cannot start thread %d\n", t);
            return 1;
        }
    }
    for (int g = 0; g < 64; g++)
        s.found_ms[g] = -1;
    pthread_t watcher;
    int watching = o->diverge > 0 && pthread_create(&watcher, &attr, watch_main, &s) == 0;
    for (int t = 0; t < o->threads; t++)
        pthread_join(th[t], NULL);
    double elapsed = h_now() - s.t0;
    double srv_cpu = -srv_cpu0, pg_cpu = pm ? proc_cpu(pm, 1) - pg_cpu0 : 0;
    for (int i = 0; i < o->instances; i++)
        srv_cpu += proc_cpu(srv[i].pid, 0);
    double sim_cpu = self_cpu() - self0;
    double wal = PQstatus(adm) == CONNECTION_OK ? wal_bytes(adm) - wal0 : 0;

    size_t n = 0;
    for (int t = 0; t < o->threads; t++)
        n += ws[t].n;
    double *lag = malloc((n + 1) * sizeof(double)), *lat = malloc((n + 1) * sizeof(double));
    size_t k = 0;
    for (int t = 0; t < o->threads; t++) {
        memcpy(lag + k, ws[t].lag, ws[t].n * sizeof(double));
        memcpy(lat + k, ws[t].lat, ws[t].n * sizeof(double));
        k += ws[t].n;
        free(ws[t].lag);
        free(ws[t].lat);
    }
    qsort(lag, n, sizeof(double), cmp_d);
    qsort(lat, n, sizeof(double), cmp_d);

    /* Consensus: the windows every run had judged (after a second for the last ones), and the runs that disagree:
     * none but the diverging runs (run B of a diverging group) may. */
    long long cons_checked = 0;
    int cons_disagree = 0;
    if (o->consensus) {
        sleep(1);
        for (int i = 0; i < 2 * o->groups; i++) {
            char cu[300], *body = NULL;
            snprintf(cu, sizeof(cu), "%s/api/v1/runs/%s/consensus", s.base, s.run_ids[i]);
            if (h_http("GET", cu, NULL, NULL, 0, NULL, &body) == 200) {
                json_t *j = json_loads(body, 0, NULL);
                cons_checked += json_integer_value(json_object_get(j, "checked"));
                cons_disagree += !strcmp(json_string_value(json_object_get(j, "status")) ?: "", "disagree");
                json_decref(j);
            }
            free(body);
        }
    }

    /* Divergences: each diverging group names its rank and step, with the time from commit to detection
     * (detection_ms), and from the later run's post of the step after it (which made the step complete) to
     * the divergence being stored (e2e). */
    if (watching)
        pthread_join(watcher, NULL);
    double found[64];
    int n_seen = 0, n_seen_right = 0;
    for (int g = 0; g < o->diverge; g++)
        if (s.found_ms[g] >= 0) {
            found[n_seen++] = s.found_ms[g];
            n_seen_right += s.found_right[g];
        }
    qsort(found, (size_t)n_seen, sizeof(double), cmp_d);
    double det[64], e2e[64];
    int n_found = 0, n_right = 0;
    for (int g = 0; g < o->diverge; g++) {
        snprintf(url, sizeof(url), "%s/api/v1/twins/%s", s.base, s.groups[g]);
        json_t *fd = NULL;
        for (int tries = 0; tries < 150 && !fd; tries++) {
            if (h_http("GET", url, NULL, NULL, 0, NULL, &resp) == 200) {
                json_t *j = json_loads(resp, 0, NULL);
                json_t *f = json_object_get(j, "first_divergence");
                if (json_is_object(f))
                    fd = json_incref(f);
                json_decref(j);
            }
            free(resp);
            resp = NULL;
            if (!fd)
                usleep(100000);
        }
        if (!fd)
            continue;
        int64_t want_step = diverge_step(o, g);
        int want_rank = diverge_rank(&s, g);
        n_right += json_integer_value(json_object_get(fd, "step")) == want_step &&
                   json_integer_value(json_object_get(fd, "rank")) == want_rank;
        det[n_found] = json_number_value(json_object_get(fd, "detection_ms"));
        /* the divergence's detected_at against the wall clock when the step became complete */
        const char *at = json_string_value(json_object_get(fd, "detected_at"));
        struct tm tm = {0};
        double frac = 0, ready = s.div_ready[g][0] > s.div_ready[g][1] ? s.div_ready[g][0] : s.div_ready[g][1];
        e2e[n_found] = -1;
        if (at && strptime(at, "%Y-%m-%dT%H:%M:%S", &tm)) {
            const char *dot = strchr(at, '.');
            frac = dot ? atof(dot) : 0;
            struct timespec mono, real;
            clock_gettime(CLOCK_MONOTONIC, &mono);
            clock_gettime(CLOCK_REALTIME, &real);
            double detected_wall = (double)timegm(&tm) + frac;
            double offset = ((double)real.tv_sec + real.tv_nsec / 1e9) - ((double)mono.tv_sec + mono.tv_nsec / 1e9);
            if (ready > 0)
                e2e[n_found] = (detected_wall - offset - ready) * 1e3;
        }
        n_found++;
        json_decref(fd);
    }
    /* the groups with no diverging rank must show no divergence */
    int n_false = 0;
    for (int g = o->diverge; g < o->groups && !o->solo; g++) {
        snprintf(url, sizeof(url), "%s/api/v1/twins/%s", s.base, s.groups[g]);
        if (h_http("GET", url, NULL, NULL, 0, NULL, &resp) == 200) {
            json_t *j = json_loads(resp, 0, NULL);
            n_false += json_is_object(json_object_get(j, "first_divergence"));
            json_decref(j);
        }
        free(resp);
        resp = NULL;
    }
    qsort(det, (size_t)n_found, sizeof(double), cmp_d);
    qsort(e2e, (size_t)n_found, sizeof(double), cmp_d);

    double load[3] = {0};
    if (getloadavg(load, 3) < 1)
        load[0] = -1;
    /* over the instances: the comparison's memory (ranks it marked, ranks it handed to the database's look), the
     * batches one commit of the database workers carried on average, and the step sums forwarded to the holders of
     * the groups' leases */
    double mem_marked = 0, mem_handed = 0, mem_read = 0, groups = 0, grouped = 0, forwarded = 0;
    handed by = {json_object(), 0}, put_off = {json_object(), 0}; /* whatever reasons lockstepd names */
    for (int i = 0; i < o->instances; i++) {
        mem_marked += h_metric(s.bases[i], "lockstepd_compare_memory_marked_total", NULL);
        mem_read += h_metric(s.bases[i], "lockstepd_compare_memory_read_total", NULL);
        h_metric_each(s.bases[i], "lockstepd_compare_memory_handed_total", NULL, add_reason, &by);
        h_metric_each(s.bases[i], "lockstepd_compare_memory_put_off_total", NULL, add_reason, &put_off);
        groups += h_metric(s.bases[i], "lockstepd_db_groups_total", NULL);
        grouped += h_metric(s.bases[i], "lockstepd_db_group_requests_total", NULL);
        forwarded += h_metric(s.bases[i], "lockstepd_compare_forwarded_total", NULL);
    }
    mem_handed = by.sum;
    char *by_text = json_dumps(by.by, JSON_SORT_KEYS), *put_off_text = json_dumps(put_off.by, JSON_SORT_KEYS);
    json_decref(by.by);
    json_decref(put_off.by);
    char ended[512] = "";
    if (o->end) {
        pid_t pids[4];
        for (int i = 0; i < o->instances; i++)
            pids[i] = srv[i].pid;
        end_phase(&s, pids, pm, ended, sizeof(ended));
    }
    PQfinish(adm);
    for (int i = o->instances - 1; i >= 0; i--) { /* the embedded cluster's own lockstepd last */
        h_srv_kill(&srv[i], SIGTERM);
        h_srv_cleanup(&srv[i]);
    }
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", state);
    if (system(cmd) != 0)
        fprintf(stderr, "bench/fleet: cannot remove %s\n", state);

    uint64_t posts = atomic_load(&s.posts), fails = atomic_load(&s.fails), made = atomic_load(&s.records_made);
    uint64_t on_demand = atomic_load(&s.on_demand_posts),
             steps_posted = o->bundle > 1 ? posts - on_demand : n; /* batches (n: requests, one a batch alone) */
    double offered = (o->rerun ? o->ranks / 2 : o->ranks) / o->step_s / o->batch_steps,
           rate = (double)(posts - on_demand) / o->seconds;
    double lag99 = pct(lag, n, 0.99) * 1e3;
    int keeps_up = fails == 0 && rate >= 0.97 * offered && lag99 < o->step_s * 500;
    printf(
        "{\"bench\": \"fleet\", \"mode\": \"%s\", \"ranks\": %d, \"groups\": %d, \"runs\": %d, \"step_s\": %.2f, "
        "\"seconds\": %.1f, \"records_per_rank_step\": %d, \"batch_steps\": %d, \"staggered\": %s, \"client_threads\": "
        "%d, "
        "\"offered_batches_per_s\": %.0f, "
        "\"batches_per_s\": %.1f, \"records_made_per_s\": %.0f, \"keeps_up\": %s, \"lag_p50_ms\": %.1f, "
        "\"lag_p99_ms\": %.1f, \"lag_max_ms\": %.1f, \"post_p50_ms\": %.2f, \"post_p99_ms\": %.2f, "
        "\"failed_posts\": %" PRIu64 ", \"steps_asked\": %" PRIu64 ", \"divergences_found\": %d, "
        "\"divergences_right\": %d, \"divergences_expected\": %d, \"false_divergences\": %d, \"detect_p50_ms\": %.1f, "
        "\"detect_max_ms\": %.1f, \"found_running\": %d, \"found_running_right\": %d, \"found_p50_ms\": %.1f, "
        "\"found_max_ms\": %.1f, "
        "\"e2e_p50_ms\": %.1f, \"e2e_max_ms\": %.1f, \"bytes_per_rank_step\": %.1f, \"on_demand_bytes\": %" PRIu64 ", "
        "\"lockstepd_cpu_s\": %.1f, \"postgres_cpu_s\": %.1f, \"server_cpu_us_per_batch\": %.0f, \"sim_cpu_s\": %.1f, "
        "\"wal_bytes_per_s\": %.0f, \"consensus_comms\": %d, \"consensus_digests_per_rank_step\": %.2f, "
        "\"solo\": %s, \"consensus_windows_checked\": %lld, \"consensus_disagreements\": %d, "
        "\"memory_marked\": %.0f, \"memory_handed\": %.0f, \"memory_handed_by\": %s, \"memory_put_off\": %s, "
        "\"memory_read\": %.0f, "
        "\"batches_per_commit\": %.2f, \"instances\": %d, \"forwarded\": %.0f, \"rerun\": %s, \"bundle\": %d, "
        "\"requests_per_s\": %.1f, \"load_avg_1m\": %.2f%s}\n",
        o->digests ? "digests" : "records", o->ranks, o->groups, 2 * o->groups, o->step_s, o->seconds, o->per_step,
        o->batch_steps, o->stagger ? "true" : "false", o->threads, offered, rate, (double)made / elapsed,
        keeps_up ? "true" : "false", pct(lag, n, 0.5) * 1e3, lag99, n ? lag[n - 1] * 1e3 : 0, pct(lat, n, 0.5) * 1e3,
        pct(lat, n, 0.99) * 1e3, fails, atomic_load(&s.asked), n_found, n_right, o->diverge, n_false,
        pct(det, (size_t)n_found, 0.5), n_found ? det[n_found - 1] : 0, n_seen, n_seen_right,
        pct(found, (size_t)n_seen, 0.5), n_seen ? found[n_seen - 1] : 0, pct(e2e, (size_t)n_found, 0.5),
        n_found ? e2e[n_found - 1] : 0,
        steps_posted ? (double)atomic_load(&s.bytes) / (double)steps_posted / o->batch_steps : 0,
        (uint64_t)atomic_load(&s.bytes_on_demand), srv_cpu, pg_cpu,
        posts ? (srv_cpu + pg_cpu) * 1e6 / (double)posts : 0, sim_cpu, wal / elapsed, o->consensus,
        steps_posted ? (double)atomic_load(&s.cons_digests) / (double)steps_posted / o->batch_steps : 0,
        o->solo ? "true" : "false", cons_checked, cons_disagree, mem_marked, mem_handed, by_text ? by_text : "{}",
        put_off_text ? put_off_text : "{}", mem_read,
        groups > 0 ? (o->bundle > 1 ? (double)posts : grouped) / groups : -1, o->instances, forwarded,
        o->rerun ? "true" : "false", o->bundle, (double)atomic_load(&s.requests) / o->seconds, load[0], ended);
    free(by_text);
    free(put_off_text);
    free(lag);
    free(lat);
    free(ws);
    free(th);
    return n_found == o->diverge && n_right == n_found && n_false == 0 && keeps_up ? 0 : 1;
}
