/* compare.c - twin comparison as records arrive: per-step digests first, then the records of the first differing step. */
#include "server/compare.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/dtype.h"
#include "server/db.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/suspects.h"

#define MAX_RUNS 64
#define SWEEP_S 5

typedef struct pending {
    char group[256];
    int rank;
    double commit_s;
} pending;

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static pending *queue;
static size_t q_len, q_cap;
static atomic_int stopping;
static pthread_t thread;
static int running;

void cmp_register(void)
{
    db_register("cmp_runs",
                "SELECT r.run_key, r.run_id, r.start_step, p.max_step, "
                "(e.run_key IS NOT NULL OR r.status <> 'running') AS ended "
                "FROM runs r LEFT JOIN rank_progress p ON p.run_key = r.run_key AND p.rank = $2 "
                "LEFT JOIN rank_ends e ON e.run_key = r.run_key AND e.rank = $2 "
                "WHERE r.twin_group = $1 ORDER BY r.run_key");
    db_register("cmp_checked", "SELECT checked_upto FROM group_checks WHERE twin_group = $1 AND rank = $2");
    /* The mark is written only if no run joined the group after the runs this check compared
     * ($4 = the newest run key seen): a joining run resets the group's checks, and a mark computed
     * without it must not overwrite that reset, or its early steps would never be compared. */
    db_register("cmp_mark", "INSERT INTO group_checks (twin_group, rank, checked_upto) SELECT $1, $2, $3 "
                            "WHERE NOT EXISTS (SELECT 1 FROM runs WHERE twin_group = $1 AND run_key > $4::bigint) "
                            "ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto");
    db_register("cmp_steps", "SELECT step FROM step_digests WHERE run_key = ANY($1::bigint[]) AND rank = $2 "
                             "AND step BETWEEN $3 AND $4 GROUP BY step HAVING count(*) < $5 "
                             "OR min(digest) <> max(digest) OR min(n) <> max(n) ORDER BY step LIMIT 1");
    db_register("cmp_recs", "SELECT run_key, seq, name, occ, fp, value, dtype, shape::text FROM records "
                            "WHERE run_key = ANY($1::bigint[]) AND rank = $2 AND step = $3 ORDER BY run_key, seq");
    db_register("cmp_store",
                "INSERT INTO divergences AS d (twin_group, rank, step, seq, name, occ, kind, odd_run_key, runs, "
                "committed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, to_timestamp($10)) "
                "ON CONFLICT (twin_group, rank) DO UPDATE SET step = excluded.step, seq = excluded.seq, "
                "name = excluded.name, occ = excluded.occ, kind = excluded.kind, odd_run_key = excluded.odd_run_key, "
                "runs = excluded.runs, committed_at = excluded.committed_at, detected_at = clock_timestamp() "
                "WHERE (excluded.step, excluded.seq) < (d.step, d.seq) OR ((excluded.step, excluded.seq) = "
                "(d.step, d.seq) AND excluded.runs IS DISTINCT FROM d.runs) RETURNING 1");
    db_register("cmp_backlog",
                "SELECT x.twin_group, x.rank FROM (SELECT r.twin_group, p.rank, max(r.start_step) AS lo, "
                "min(p.max_step) AS hi, count(*) AS n FROM rank_progress p JOIN runs r USING (run_key) "
                "WHERE r.twin_group IS NOT NULL GROUP BY 1, 2) x LEFT JOIN group_checks g USING (twin_group, rank) "
                "WHERE x.n >= 2 AND x.lo <= x.hi AND (g.checked_upto IS NULL OR g.checked_upto < x.hi)");
    db_register("cmp_active",
                "SELECT DISTINCT r.twin_group, p.rank FROM rank_progress p JOIN runs r USING (run_key) "
                "WHERE r.twin_group IS NOT NULL AND p.updated_at > now() - $1::interval "
                "UNION SELECT DISTINCT r.twin_group, e.rank FROM rank_ends e JOIN runs r USING (run_key) "
                "WHERE r.twin_group IS NOT NULL AND e.ended_at > now() - $1::interval");
}

void cmp_notify(const char *group, int rank, double commit_s)
{
    if (!group || !*group)
        return;
    pthread_mutex_lock(&q_lock);
    size_t i;
    for (i = 0; i < q_len; i++)
        if (queue[i].rank == rank && strcmp(queue[i].group, group) == 0)
            break;
    if (i < q_len) {
        if (commit_s > 0 && (queue[i].commit_s == 0 || commit_s < queue[i].commit_s))
            queue[i].commit_s = commit_s;
    } else {
        if (q_len == q_cap) {
            q_cap = q_cap ? q_cap * 2 : 64;
            queue = realloc(queue, q_cap * sizeof(*queue));
            if (!queue)
                abort();
        }
        snprintf(queue[q_len].group, sizeof(queue[q_len].group), "%s", group);
        queue[q_len].rank = rank;
        queue[q_len].commit_s = commit_s;
        q_len++;
    }
    pthread_cond_signal(&q_cond);
    pthread_mutex_unlock(&q_lock);
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One record of the first differing step, from any run. */
typedef struct crec {
    int run;      /* index into the group's runs */
    int64_t seq;
    const char *name;
    int occ;
    const char *fp, *value, *shape; /* as PostgreSQL text; value NULL when absent */
    int dtype;
} crec;

static int cmp_key(const void *a, const void *b)
{
    const crec *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    if (x->occ != y->occ)
        return x->occ < y->occ ? -1 : 1;
    return x->run - y->run;
}

static int same_content(const crec *a, const crec *b)
{
    return a && b && strcmp(a->fp, b->fp) == 0 && a->dtype == b->dtype && strcmp(a->shape, b->shape) == 0 &&
           ((!a->value && !b->value) || (a->value && b->value && strcmp(a->value, b->value) == 0));
}

static json_t *run_entry(const char *run_id, const crec *r)
{
    if (!r)
        return json_pack("{s:s, s:b, s:n, s:n, s:n}", "run_id", run_id, "present", 0, "seq", "fp", "value");
    char fp[17], vb[17];
    snprintf(fp, sizeof(fp), "%016" PRIx64, (uint64_t)strtoll(r->fp, NULL, 10));
    json_t *o = json_pack("{s:s, s:b, s:I, s:s, s:s}", "run_id", run_id, "present", 1, "seq", (json_int_t)r->seq,
                          "fp", fp, "dtype", dtype_name((unsigned)r->dtype));
    if (r->value) {
        uint64_t bits = (uint64_t)strtoll(r->value, NULL, 10);
        double d = dtype_value_to_double((unsigned)r->dtype, bits);
        snprintf(vb, sizeof(vb), "%016" PRIx64, bits);
        json_object_set_new(o, "value", isfinite(d) ? json_real(d) : json_null());
        json_object_set_new(o, "value_bits", json_string(vb));
    } else {
        json_object_set_new(o, "value", json_null());
    }
    return o;
}

/* find_divergence - the records of step `step` on `rank` for the group's
 * runs; store the earliest differing one. Returns 1 stored, 0 none, -1 error. */
static int find_divergence(const char *group, int rank, int64_t step, int nruns, const int64_t *keys,
                           char ids[][40], const char *keyarr, double commit_s)
{
    char rk[16], st[32], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(st, sizeof(st), "%" PRId64, step);
    const char *p[] = {keyarr, rk, st};
    PGresult *r = db_exec("cmp_recs", 3, p, err, sizeof(err));
    if (!r)
        return -1;
    int n = PQntuples(r), rc = 0;
    crec *recs = calloc((size_t)n + 1, sizeof(*recs));
    if (!recs)
        abort();
    for (int i = 0; i < n; i++) {
        int64_t key = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        int run = 0;
        while (run < nruns && keys[run] != key)
            run++;
        recs[i].run = run;
        recs[i].seq = strtoll(PQgetvalue(r, i, 1), NULL, 10);
        recs[i].name = PQgetvalue(r, i, 2);
        recs[i].occ = atoi(PQgetvalue(r, i, 3));
        recs[i].fp = PQgetvalue(r, i, 4);
        recs[i].value = PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5);
        recs[i].dtype = atoi(PQgetvalue(r, i, 6));
        recs[i].shape = PQgetvalue(r, i, 7);
    }
    qsort(recs, (size_t)n, sizeof(*recs), cmp_key);

    /* Walk the keys; keep the differing one with the smallest seq. */
    const crec *best[MAX_RUNS] = {0};
    int64_t best_seq = INT64_MAX;
    for (int i = 0; i < n;) {
        int j = i;
        const crec *by_run[MAX_RUNS] = {0};
        while (j < n && strcmp(recs[j].name, recs[i].name) == 0 && recs[j].occ == recs[i].occ) {
            if (recs[j].run < nruns && !by_run[recs[j].run])
                by_run[recs[j].run] = &recs[j];
            j++;
        }
        int differs = 0;
        int64_t seq = INT64_MAX;
        for (int k = 0; k < nruns; k++) {
            if (!by_run[k] || !same_content(by_run[k], by_run[0]))
                differs = 1;
            if (by_run[k] && by_run[k]->seq < seq)
                seq = by_run[k]->seq;
        }
        if (differs && seq < best_seq) {
            best_seq = seq;
            memcpy(best, by_run, sizeof(best));
        }
        i = j;
    }
    if (best_seq == INT64_MAX)
        goto out_free;

    /* Majority: the content most runs share; with 3+ runs, one run outside it is the odd one. */
    int missing = 0, odd = -1, majority = -1;
    for (int k = 0; k < nruns; k++) {
        if (!best[k])
            missing = 1;
        int votes = 0;
        for (int m = 0; m < nruns; m++)
            if ((!best[k] && !best[m]) || same_content(best[k], best[m]))
                votes++;
        if (2 * votes > nruns)
            majority = k;
    }
    json_t *runs = json_array();
    for (int k = 0; k < nruns; k++) {
        json_t *e = run_entry(ids[k], best[k]);
        if (majority >= 0) {
            int agrees = (!best[k] && !best[majority]) || same_content(best[k], best[majority]);
            json_object_set_new(e, "majority", json_boolean(agrees));
            if (!agrees)
                odd = odd == -1 ? k : -2; /* -2: more than one odd run */
        }
        json_array_append_new(runs, e);
    }
    const crec *any = NULL;
    for (int k = 0; k < nruns && !any; k++)
        any = best[k];
    char *runs_text = json_dumps(runs, JSON_COMPACT);
    json_decref(runs);
    char seq_s[32], occ_s[16], odd_s[32], commit[48];
    snprintf(seq_s, sizeof(seq_s), "%" PRId64, best_seq);
    snprintf(occ_s, sizeof(occ_s), "%d", any->occ);
    snprintf(odd_s, sizeof(odd_s), "%" PRId64, odd >= 0 && nruns >= 3 ? keys[odd] : 0);
    snprintf(commit, sizeof(commit), "%.6f", commit_s > 0 ? commit_s : wall_s());
    const char *q[] = {group, rk, st, seq_s, any->name, occ_s, missing ? "missing" : "mismatch",
                       odd >= 0 && nruns >= 3 ? odd_s : NULL, runs_text, commit};
    PGresult *s = db_exec("cmp_store", 10, q, err, sizeof(err));
    free(runs_text);
    if (!s) {
        rc = -1;
        goto out_free;
    }
    if (PQntuples(s) > 0) {
        rc = 1;
        double lat = commit_s > 0 ? wall_s() - commit_s : 0;
        metrics_divergence(lat > 0 ? lat : 0);
        log_info("divergence in group %s rank %d at step %" PRId64 " seq %" PRId64 " (%s, %s occ %d)", group, rank,
                 step, best_seq, missing ? "missing" : "mismatch", any->name, any->occ);
        susp_notify(group); /* evidence, suspects and the group's alert */
    }
    PQclear(s);
out_free:
    free(recs);
    PQclear(r);
    return rc;
}

int cmp_check(const char *group, int rank, double commit_s)
{
    char rk[16], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {group, rk};
    PGresult *r = db_exec("cmp_runs", 2, p, err, sizeof(err));
    if (!r)
        return -1;
    int64_t keys[MAX_RUNS], lo = INT64_MIN, hi = INT64_MAX, newest = 0;
    char ids[MAX_RUNS][40];
    int nruns = 0, with_records = 0;
    for (int i = 0; i < PQntuples(r) && nruns < MAX_RUNS; i++) {
        int ended = PQgetvalue(r, i, 4)[0] == 't';
        int empty = PQgetisnull(r, i, 3);
        if (empty && !ended) {
            PQclear(r);
            return 0; /* a twin has not reached this rank yet */
        }
        keys[nruns] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        if (keys[nruns] > newest)
            newest = keys[nruns];
        snprintf(ids[nruns], sizeof(ids[nruns]), "%s", PQgetvalue(r, i, 1));
        int64_t start = strtoll(PQgetvalue(r, i, 2), NULL, 10);
        if (start > lo)
            lo = start;
        if (!empty) {
            /* an ended run without records on this rank bounds nothing: all of it is missing */
            int64_t max_step = strtoll(PQgetvalue(r, i, 3), NULL, 10);
            int64_t complete = ended ? max_step : max_step - 1;
            if (complete < hi)
                hi = complete;
            with_records++;
        }
        nruns++;
    }
    PQclear(r);
    if (nruns < 2 || with_records < 1 || lo > hi)
        return 0;

    r = db_exec("cmp_checked", 2, p, err, sizeof(err));
    if (!r)
        return -1;
    int64_t from = lo;
    if (PQntuples(r) == 1) {
        int64_t done = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        if (done >= from)
            from = done + 1;
    }
    PQclear(r);
    if (from > hi)
        return 0;

    char keyarr[MAX_RUNS * 22 + 3], from_s[32], hi_s[32], n_s[16];
    size_t len = 0;
    keyarr[len++] = '{';
    for (int k = 0; k < nruns; k++)
        len += (size_t)snprintf(keyarr + len, sizeof(keyarr) - len, "%s%" PRId64, k ? "," : "", keys[k]);
    snprintf(keyarr + len, sizeof(keyarr) - len, "}");
    snprintf(from_s, sizeof(from_s), "%" PRId64, from);
    snprintf(hi_s, sizeof(hi_s), "%" PRId64, hi);
    snprintf(n_s, sizeof(n_s), "%d", nruns);
    const char *q[] = {keyarr, rk, from_s, hi_s, n_s};
    r = db_exec("cmp_steps", 5, q, err, sizeof(err));
    if (!r)
        return -1;
    int rc = 0;
    if (PQntuples(r) == 1) {
        int64_t step = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        rc = find_divergence(group, rank, step, nruns, keys, ids, keyarr, commit_s);
    }
    PQclear(r);
    if (rc < 0)
        return -1;
    char newest_s[32];
    snprintf(newest_s, sizeof(newest_s), "%" PRId64, newest);
    const char *m[] = {group, rk, hi_s, newest_s};
    r = db_exec("cmp_mark", 4, m, err, sizeof(err));
    if (!r)
        return -1;
    PQclear(r);
    return rc;
}

/* sweep - queue the groups with recent activity; at start (`backlog`), every
 * group and rank whose shared steps are not all compared yet (work a killed
 * lockstepd left undone). */
static void sweep(int backlog)
{
    char err[256];
    const char *p[] = {"15 seconds"};
    PGresult *r = backlog ? db_exec("cmp_backlog", 0, NULL, err, sizeof(err))
                          : db_exec("cmp_active", 1, p, err, sizeof(err));
    if (!r)
        return;
    for (int i = 0; i < PQntuples(r); i++)
        cmp_notify(PQgetvalue(r, i, 0), atoi(PQgetvalue(r, i, 1)), 0);
    PQclear(r);
}

static void *cmp_main(void *arg)
{
    (void)arg;
    struct timespec next;
    clock_gettime(CLOCK_REALTIME, &next);
    sweep(1);
    for (;;) {
        pthread_mutex_lock(&q_lock);
        while (!q_len && !stopping) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            if (now.tv_sec >= next.tv_sec)
                break;
            pthread_cond_timedwait(&q_cond, &q_lock, &next);
        }
        pending *work = queue;
        size_t n = q_len;
        int stop = stopping && !q_len;
        queue = NULL;
        q_len = q_cap = 0;
        pthread_mutex_unlock(&q_lock);
        int failed = 0;
        for (size_t i = 0; i < n; i++) {
            if (cmp_check(work[i].group, work[i].rank, work[i].commit_s) < 0 && !stopping) {
                cmp_notify(work[i].group, work[i].rank, work[i].commit_s); /* try again shortly */
                failed = 1;
            }
        }
        free(work);
        if (stop || stopping)
            break;
        if (failed)
            usleep(200000);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (now.tv_sec >= next.tv_sec) {
            sweep(0);
            next.tv_sec = now.tv_sec + SWEEP_S;
        }
    }
    return NULL;
}

int cmp_start(void)
{
    if (pthread_create(&thread, NULL, cmp_main, NULL) != 0)
        return -1;
    running = 1;
    return 0;
}

void cmp_stop(void)
{
    if (!running)
        return;
    pthread_mutex_lock(&q_lock);
    stopping = 1;
    pthread_cond_signal(&q_cond);
    pthread_mutex_unlock(&q_lock);
    pthread_join(thread, NULL);
    running = 0;
}
