/* twins.c - the twin group read endpoints: group status and divergences, per-step map, manifest diff. */
#include "server/twins.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/db.h"
#include "server/read.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define MAX_RUNS 256

void twins_register(void)
{
    db_register("grp_runs", "SELECT run_key, run_id, job_id, user_name, nodes, status, start_step, ranks, mode, "
                            TS("created_at") ", " TS("ended_at") " FROM runs WHERE twin_group = $1 ORDER BY run_key");
    db_register("grp_divs", "SELECT rank, step, seq, name, occ, kind, odd_run_key, runs::text, " TS("committed_at")
                            ", " TS("detected_at") ", extract(epoch FROM detected_at - committed_at) * 1000 "
                            "FROM divergences WHERE twin_group = $1 ORDER BY step, rank");
    db_register("grp_unchecked",
                "SELECT count(*) FROM (SELECT p.rank, max(r.start_step) AS lo, min(p.max_step) AS hi "
                "FROM rank_progress p JOIN runs r USING (run_key) WHERE r.twin_group = $1 GROUP BY p.rank) x "
                "LEFT JOIN group_checks g ON g.twin_group = $1 AND g.rank = x.rank "
                "WHERE x.lo <= x.hi AND (g.checked_upto IS NULL OR g.checked_upto < x.hi)");
    db_register("grp_progress", "SELECT p.run_key, p.rank, p.max_step, e.run_key IS NOT NULL OR r.status <> 'running' "
                                "FROM rank_progress p JOIN runs r USING (run_key) LEFT JOIN rank_ends e "
                                "ON e.run_key = p.run_key AND e.rank = p.rank WHERE r.twin_group = $1");
    /* No ORDER BY: the rows are sorted in C, which spares PostgreSQL an on-disk sort of a
     * 500-step x 64-rank window (see bench/api). */
    db_register("grp_steps", "SELECT run_key, rank, step, n, digest FROM step_digests "
                             "WHERE run_key = ANY($1::bigint[]) AND step BETWEEN $2 AND $3");
    db_register("grp_manifests", "SELECT r.run_id, m.rank, m.manifest::text FROM manifests m JOIN runs r "
                                 "USING (run_key) WHERE r.twin_group = $1 ORDER BY m.rank, r.run_key");
}

static enum MHD_Result db_down(http_req *req, const char *err)
{
    return http_reply_error(req, 503, "database error", err, "retry later; check PostgreSQL and the lockstepd log");
}

static enum MHD_Result unknown_group(http_req *req, const char *group)
{
    char detail[320];
    snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", group);
    return http_reply_error(req, 404, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
}

/* The group's runs, loaded once per request. */
typedef struct group_runs {
    PGresult *res;
    int n;
    int64_t keys[MAX_RUNS];
} group_runs;

static int load_runs(const char *group, group_runs *g, char *err, size_t cap)
{
    const char *p[] = {group};
    g->res = db_exec("grp_runs", 1, p, err, cap);
    if (!g->res)
        return -1;
    g->n = PQntuples(g->res) < MAX_RUNS ? PQntuples(g->res) : MAX_RUNS;
    for (int i = 0; i < g->n; i++)
        g->keys[i] = strtoll(PQgetvalue(g->res, i, 0), NULL, 10);
    return 0;
}

static const char *run_id_of(const group_runs *g, int64_t key)
{
    for (int i = 0; i < g->n; i++)
        if (g->keys[i] == key)
            return PQgetvalue(g->res, i, 1);
    return NULL;
}

static json_t *divergence_json(PGresult *r, int i, const group_runs *g)
{
    json_t *runs = json_loads(PQgetvalue(r, i, 7), 0, NULL);
    const char *odd = PQgetisnull(r, i, 6) ? NULL : run_id_of(g, strtoll(PQgetvalue(r, i, 6), NULL, 10));
    json_t *o = json_pack("{s:I, s:i, s:s, s:i, s:I, s:s, s:o, s:s, s:s, s:f}", "step",
                          (json_int_t)strtoll(PQgetvalue(r, i, 1), NULL, 10), "rank", atoi(PQgetvalue(r, i, 0)),
                          "name", PQgetvalue(r, i, 3), "occurrence", atoi(PQgetvalue(r, i, 4)), "seq",
                          (json_int_t)strtoll(PQgetvalue(r, i, 2), NULL, 10), "kind", PQgetvalue(r, i, 5), "runs",
                          runs ? runs : json_array(), "committed_at", PQgetvalue(r, i, 8), "detected_at",
                          PQgetvalue(r, i, 9), "detection_ms", atof(PQgetvalue(r, i, 10)));
    json_object_set_new(o, "odd_run_id", odd ? json_string(odd) : json_null());
    return o;
}

/* open_group - what every group read starts with: read access, then the
 * group's runs. Returns 1 with `g` loaded (the caller PQclears g->res), or 0
 * after replying (401/403, 503, or 404 for a group without runs) with MHD's
 * result in `sent`. */
static int open_group(http_req *req, const char *group, group_runs *g, enum MHD_Result *sent)
{
    char err[512];
    if (http_auth_read(req) < 0) {
        *sent = MHD_YES;
        return 0;
    }
    if (load_runs(group, g, err, sizeof(err)) < 0) {
        *sent = db_down(req, err);
        return 0;
    }
    if (g->n == 0) {
        PQclear(g->res);
        *sent = unknown_group(req, group);
        return 0;
    }
    return 1;
}

enum MHD_Result read_twins(http_req *req, const char *group)
{
    char err[512];
    group_runs g;
    enum MHD_Result sent;
    if (!open_group(req, group, &g, &sent))
        return sent;
    const char *p[] = {group};
    PGresult *d = db_exec("grp_divs", 1, p, err, sizeof(err));
    PGresult *u = d ? db_exec("grp_unchecked", 1, p, err, sizeof(err)) : NULL;
    if (!d || !u) {
        PQclear(d);
        PQclear(g.res);
        return db_down(req, err);
    }
    int all_ended = 1;
    json_t *runs = json_array();
    for (int i = 0; i < g.n; i++) {
        PGresult *r = g.res;
        const char *status = PQgetvalue(r, i, 5);
        if (!strcmp(status, "running"))
            all_ended = 0;
        json_array_append_new(
            runs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:i, s:s, s:s, s:o}", "run_id", PQgetvalue(r, i, 1),
                            "job_id", PQgetvalue(r, i, 2), "user", PQgetvalue(r, i, 3), "nodes", PQgetvalue(r, i, 4),
                            "status", status, "start_step", (json_int_t)strtoll(PQgetvalue(r, i, 6), NULL, 10),
                            "ranks", atoi(PQgetvalue(r, i, 7)), "mode", PQgetvalue(r, i, 8), "created_at",
                            PQgetvalue(r, i, 9), "ended_at",
                            PQgetisnull(r, i, 10) ? json_null() : json_string(PQgetvalue(r, i, 10))));
    }
    json_t *per_rank = json_array();
    for (int i = 0; i < PQntuples(d); i++)
        json_array_append_new(per_rank, divergence_json(d, i, &g));
    long unchecked = strtol(PQgetvalue(u, 0, 0), NULL, 10);
    const char *status = PQntuples(d) > 0                            ? "diverged"
                         : g.n >= 2 && all_ended && unchecked == 0 ? "match"
                                                                    : "pending";
    json_t *first = json_array_size(per_rank) ? json_incref(json_array_get(per_rank, 0)) : json_null();
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o}", "group", group, "status", status, "runs", runs,
                          "first_divergence", first, "per_rank", per_rank);
    PQclear(u);
    PQclear(d);
    PQclear(g.res);
    return http_reply_json(req, 200, o);
}

/* Progress of one run on one rank. */
/* One step digest row, parsed. */
typedef struct dig {
    int64_t step;
    int rank;
    int run; /* index into the group's runs */
    int64_t n, digest;
} dig;

static int by_step_rank(const void *a, const void *b)
{
    const dig *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int run_index(const group_runs *g, int64_t key)
{
    for (int i = 0; i < g->n; i++)
        if (g->keys[i] == key)
            return i;
    return -1;
}

/* Per run and rank: how far it got (progress), -1 for none. */
typedef struct prog {
    int64_t max_step;
    int state; /* 0: no records, 1: running, 2: ended */
} prog;

enum MHD_Result read_twin_steps(http_req *req, const char *group)
{
    char err[512];
    group_runs g;
    enum MHD_Result sent;
    if (!open_group(req, group, &g, &sent))
        return sent;
    int64_t lo = INT64_MIN;
    for (int i = 0; i < g.n; i++) {
        int64_t s = strtoll(PQgetvalue(g.res, i, 6), NULL, 10);
        if (s > lo)
            lo = s;
    }
    const char *fs = http_query(req, "from"), *ts = http_query(req, "to"), *cs = http_query(req, "compact");
    int compact = cs && (!strcmp(cs, "1") || !strcmp(cs, "true"));
    int64_t from = fs && *fs ? strtoll(fs, NULL, 10) : lo;
    int64_t to = ts && *ts ? strtoll(ts, NULL, 10) : from + 999;
    if (to < from || to - from > 100000) {
        PQclear(g.res);
        return http_reply_error(req, 400, "bad step range", "?from= and ?to= must satisfy from <= to <= from + 100000",
                                "ask for fewer steps at a time");
    }
    if (from < lo)
        from = lo; /* steps before the latest start are not shared */
    char f[32], t[32], keys[MAX_RUNS * 22 + 3];
    snprintf(f, sizeof(f), "%" PRId64, from);
    snprintf(t, sizeof(t), "%" PRId64, to);
    size_t kl = 0;
    keys[kl++] = '{';
    for (int i = 0; i < g.n; i++)
        kl += (size_t)snprintf(keys + kl, sizeof(keys) - kl, "%s%" PRId64, i ? "," : "", g.keys[i]);
    snprintf(keys + kl, sizeof(keys) - kl, "}");
    const char *p1[] = {group};
    const char *p2[] = {keys, f, t};
    PGresult *pr = db_exec("grp_progress", 1, p1, err, sizeof(err));
    PGresult *sr = pr ? db_exec("grp_steps", 3, p2, err, sizeof(err)) : NULL;
    if (!pr || !sr) {
        PQclear(pr);
        PQclear(g.res);
        return db_down(req, err);
    }

    /* Parse the rows and the progress into arrays indexed by run and rank. */
    int n = PQntuples(sr), np = PQntuples(pr), nranks = 0;
    dig *rows = malloc(((size_t)n + 1) * sizeof(*rows));
    if (!rows)
        abort();
    for (int i = 0; i < n; i++) {
        rows[i].run = run_index(&g, strtoll(PQgetvalue(sr, i, 0), NULL, 10));
        rows[i].rank = atoi(PQgetvalue(sr, i, 1));
        rows[i].step = strtoll(PQgetvalue(sr, i, 2), NULL, 10);
        rows[i].n = strtoll(PQgetvalue(sr, i, 3), NULL, 10);
        rows[i].digest = strtoll(PQgetvalue(sr, i, 4), NULL, 10);
        if (rows[i].rank >= nranks)
            nranks = rows[i].rank + 1;
    }
    for (int i = 0; i < np; i++)
        if (atoi(PQgetvalue(pr, i, 1)) >= nranks)
            nranks = atoi(PQgetvalue(pr, i, 1)) + 1;
    PQclear(sr);
    prog *progs = calloc((size_t)g.n * (size_t)(nranks ? nranks : 1), sizeof(*progs));
    if (!progs)
        abort();
    for (int i = 0; i < np; i++) {
        int run = run_index(&g, strtoll(PQgetvalue(pr, i, 0), NULL, 10));
        int rank = atoi(PQgetvalue(pr, i, 1));
        if (run < 0 || rank < 0)
            continue;
        prog *x = &progs[(size_t)run * (size_t)nranks + (size_t)rank];
        x->max_step = strtoll(PQgetvalue(pr, i, 2), NULL, 10);
        x->state = PQgetvalue(pr, i, 3)[0] == 't' ? 2 : 1;
    }
    PQclear(pr);
    qsort(rows, (size_t)n, sizeof(*rows), by_step_rank);

    json_t *steps = json_array(), *cur_ranks = NULL;
    int64_t cur_step = 0;
    int have_cur = 0;
    for (int i = 0; i < n;) {
        int64_t step = rows[i].step;
        int rank = rows[i].rank;
        int j = i, present = 0, differs = 0;
        for (; j < n && rows[j].step == step && rows[j].rank == rank; j++) {
            if (rows[j].digest != rows[i].digest || rows[j].n != rows[i].n)
                differs = 1;
            present++;
        }
        int pending = 0, runs_in = 0;
        for (int k = 0; k < g.n; k++) {
            const prog *pg = &progs[(size_t)k * (size_t)nranks + (size_t)rank];
            if (!pg->state) {
                /* no records on this rank: pending while that run runs, missing once it has ended */
                if (!strcmp(PQgetvalue(g.res, k, 5), "running"))
                    pending = 1;
                else if (step >= strtoll(PQgetvalue(g.res, k, 6), NULL, 10))
                    runs_in++;
                continue;
            }
            runs_in++;
            if (pg->state == 2 ? step > pg->max_step : step >= pg->max_step)
                pending = 1;
        }
        const char *status = pending ? "pending" : present < runs_in ? "missing" : differs ? "diverged" : "match";
        if (!have_cur || step != cur_step) {
            cur_ranks = json_array();
            json_array_append_new(steps, json_pack("{s:I, s:o}", "step", (json_int_t)step, "ranks", cur_ranks));
            cur_step = step;
            have_cur = 1;
        }
        if (compact) { /* ranks[r] is rank r's status; null where no run recorded that rank */
            while ((int)json_array_size(cur_ranks) < rank)
                json_array_append_new(cur_ranks, json_null());
            json_array_append_new(cur_ranks, json_string(status));
        } else {
            json_array_append_new(cur_ranks,
                                  json_pack("{s:i, s:s, s:i}", "rank", rank, "status", status, "runs", present));
        }
        i = j;
    }
    free(progs);
    free(rows);
    PQclear(g.res);
    return http_reply_json(req, 200,
                           json_pack("{s:s, s:I, s:I, s:i, s:o}", "group", group, "from", (json_int_t)from, "to",
                                     (json_int_t)to, "ranks", nranks, "steps", steps));
}

/* flatten - add every leaf of `v` under `path` to `out` (path -> value). */
static void flatten(json_t *out, const char *path, json_t *v)
{
    if (json_is_object(v) && json_object_size(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            char sub[1024];
            snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
            flatten(out, sub, x);
        }
        return;
    }
    json_object_set(out, path, v);
}

enum MHD_Result read_manifest_diff(http_req *req, const char *group)
{
    char err[512];
    group_runs g;
    enum MHD_Result sent;
    if (!open_group(req, group, &g, &sent))
        return sent;
    const char *p[] = {group};
    PGresult *r = db_exec("grp_manifests", 1, p, err, sizeof(err));
    if (!r) {
        PQclear(g.res);
        return db_down(req, err);
    }
    json_t *diffs = json_array();
    int n = PQntuples(r);
    for (int i = 0; i < n;) {
        int rank = atoi(PQgetvalue(r, i, 1));
        int j = i;
        json_t *flat[MAX_RUNS];
        const char *ids[MAX_RUNS];
        int m = 0;
        while (j < n && atoi(PQgetvalue(r, j, 1)) == rank) {
            if (m < MAX_RUNS) {
                json_t *doc = json_loads(PQgetvalue(r, j, 2), 0, NULL);
                flat[m] = json_object();
                flatten(flat[m], "", doc);
                json_decref(doc);
                ids[m] = PQgetvalue(r, j, 0);
                m++;
            }
            j++;
        }
        json_t *keys = json_object();
        for (int k = 0; k < m; k++) {
            const char *key;
            json_t *v;
            json_object_foreach(flat[k], key, v) json_object_set_new(keys, key, json_true());
        }
        const char *key;
        json_t *unused;
        json_object_foreach(keys, key, unused)
        {
            if (!strcmp(key, "rank"))
                continue;
            int same = 1;
            for (int k = 1; k < m && same; k++) {
                json_t *a = json_object_get(flat[0], key), *b = json_object_get(flat[k], key);
                same = (a && b) ? json_equal(a, b) : (!a && !b);
            }
            if (same)
                continue;
            json_t *vals = json_array();
            for (int k = 0; k < m; k++) {
                json_t *v = json_object_get(flat[k], key);
                json_array_append_new(vals, json_pack("{s:s, s:O}", "run_id", ids[k], "value", v ? v : json_null()));
            }
            json_array_append_new(diffs, json_pack("{s:i, s:s, s:o}", "rank", rank, "key", key, "values", vals));
        }
        json_decref(keys);
        for (int k = 0; k < m; k++)
            json_decref(flat[k]);
        i = j;
    }
    json_t *run_ids = json_array();
    for (int i = 0; i < g.n; i++)
        json_array_append_new(run_ids, json_string(PQgetvalue(g.res, i, 1)));
    PQclear(r);
    PQclear(g.res);
    return http_reply_json(req, 200, json_pack("{s:s, s:o, s:o}", "group", group, "runs", run_ids, "diffs", diffs));
}
