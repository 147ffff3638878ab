/* twins.c - the twin group read endpoints: group status and divergences, per-step map, manifest diff. */
#include "server/api/twins.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/recmatch.h"
#include "server/api/group.h"
#include "server/api/pgjson.h"
#include "server/core/limits.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/batch.h"
#include "server/store/db.h"

/* ulp_of - the ULP distance between two scalars given as value_bits hex strings of `dtype` (a name), as JSON:
 * null when it does not apply (no value on one side, a NaN, an unknown dtype). */
static json_t *ulp_of(const char *a, const char *b, const char *dtype)
{
    uint64_t x, y;
    int dt = dtype ? dtype_parse(dtype) : -1;
    if (!a || !b || dt < 0 || dt == LS_BYTES || batch_parse_hex64(a, &x) < 0 || batch_parse_hex64(b, &y) < 0)
        return json_null();
    uint64_t d = dtype_ulp_distance((unsigned)dt, x, y);
    return d == UINT64_MAX ? json_null() : json_integer((json_int_t)d);
}

/* add_ulps - give each run entry of a divergence its "ulp" distance from the reference entry: the first
 * run of the majority when there is one, else the first run that holds the record. */
static void add_ulps(json_t *runs)
{
    json_t *ref = NULL, *e;
    size_t i;
    json_array_foreach(runs, i, e) if (!ref && json_is_true(json_object_get(e, "majority")) &&
                                       json_is_true(json_object_get(e, "present"))) ref = e;
    json_array_foreach(runs, i, e) if (!ref && json_is_true(json_object_get(e, "present"))) ref = e;
    const char *rb = ref ? json_string_value(json_object_get(ref, "value_bits")) : NULL;
    json_array_foreach(runs, i, e)
    {
        const char *vb = json_string_value(json_object_get(e, "value_bits"));
        json_object_set_new(e, "ulp", e == ref ? json_null()
                                               : ulp_of(rb, vb, json_string_value(json_object_get(e, "dtype"))));
    }
}

static json_t *divergence_json(PGresult *r, int i, const group_runs *g)
{
    json_t *runs = json_loads(PQgetvalue(r, i, 7), 0, NULL);
    if (runs)
        add_ulps(runs);
    const char *odd = PQgetisnull(r, i, 6) ? NULL : group_run_id(g, strtoll(PQgetvalue(r, i, 6), NULL, 10));
    json_t *o = json_pack("{s:I, s:i, s:s, s:i, s:I, s:s, s:o, s:s, s:s, s:f}", "step",
                          (json_int_t)strtoll(PQgetvalue(r, i, 1), NULL, 10), "rank", atoi(PQgetvalue(r, i, 0)),
                          "name", PQgetvalue(r, i, 3), "occurrence", atoi(PQgetvalue(r, i, 4)), "seq",
                          (json_int_t)strtoll(PQgetvalue(r, i, 2), NULL, 10), "kind", PQgetvalue(r, i, 5), "runs",
                          runs ? runs : json_array(), "committed_at", PQgetvalue(r, i, 8), "detected_at",
                          PQgetvalue(r, i, 9), "detection_ms", atof(PQgetvalue(r, i, 10)));
    json_object_set_new(o, "odd_run_id", odd ? json_string(odd) : json_null());
    return o;
}

static enum MHD_Result read_twins(http_req *req, char **args)
{
    const char *group = args[0];
    char err[512];
    group_runs g;
    enum MHD_Result sent;
    if (!group_open(req, group, &g, &sent))
        return sent;
    const char *p[] = {group};
    PGresult *d = db_exec("grp_divs", 1, p, err, sizeof(err));
    PGresult *u = d ? db_exec("grp_unchecked", 1, p, err, sizeof(err)) : NULL;
    if (!d || !u) {
        PQclear(d);
        PQclear(g.res);
        return http_reply_db_down(req, err);
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
    /* Digest streaming: steps whose records agents hold back and lockstepd asked for, not received yet (an agent
     * that ended keeps them in its spool: `lockstep replay --steps asked DIR` sends them). */
    char keys[GROUP_KEYS_CAP];
    group_keys(&g, keys, sizeof(keys));
    const char *k[] = {keys};
    PGresult *w = db_exec("grp_awaiting", 1, k, err, sizeof(err));
    if (w && PQntuples(w) > 0) {
        json_t *aw = json_array();
        for (int i = 0; i < PQntuples(w); i++)
            json_array_append_new(aw, json_pack("{s:s, s:i, s:I, s:s}", "run_id",
                                                group_run_id(&g, strtoll(PQgetvalue(w, i, 0), NULL, 10)) ?: "",
                                                "rank", atoi(PQgetvalue(w, i, 1)), "step",
                                                (json_int_t)strtoll(PQgetvalue(w, i, 2), NULL, 10), "requested_at",
                                                PQgetvalue(w, i, 3)));
        json_object_set_new(o, "awaiting_records", aw);
    }
    PQclear(w);
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

/* Per run and rank: how far it got (progress), -1 for none. */
typedef struct prog {
    int64_t max_step;
    int state; /* 0: no records, 1: running, 2: ended */
} prog;

static enum MHD_Result read_twin_steps(http_req *req, char **args)
{
    const char *group = args[0];
    char err[512];
    group_runs g;
    enum MHD_Result sent;
    if (!group_open(req, group, &g, &sent))
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
    char f[32], t[32], keys[GROUP_KEYS_CAP];
    snprintf(f, sizeof(f), "%" PRId64, from);
    snprintf(t, sizeof(t), "%" PRId64, to);
    group_keys(&g, keys, sizeof(keys));
    const char *p1[] = {group};
    const char *p2[] = {keys, f, t};
    PGresult *pr = db_exec("grp_progress", 1, p1, err, sizeof(err));
    PGresult *sr = pr ? db_exec("grp_steps", 3, p2, err, sizeof(err)) : NULL;
    if (!pr || !sr) {
        PQclear(pr);
        PQclear(g.res);
        return http_reply_db_down(req, err);
    }

    /* Parse the rows and the progress into arrays indexed by run and rank. */
    int n = PQntuples(sr), np = PQntuples(pr), nranks = 0;
    dig *rows = xmalloc(((size_t)n + 1) * sizeof(*rows));
    for (int i = 0; i < n; i++) {
        rows[i].run = group_run_index(&g, strtoll(PQgetvalue(sr, i, 0), NULL, 10));
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
    prog *progs = xcalloc((size_t)g.n * (size_t)(nranks ? nranks : 1), sizeof(*progs));
    for (int i = 0; i < np; i++) {
        int run = group_run_index(&g, strtoll(PQgetvalue(pr, i, 0), NULL, 10));
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

static enum MHD_Result read_manifest_diff(http_req *req, char **args)
{
    const char *group = args[0];
    char err[512];
    group_runs g;
    enum MHD_Result sent;
    if (!group_open(req, group, &g, &sent))
        return sent;
    const char *p[] = {group};
    PGresult *r = db_exec("grp_manifests", 1, p, err, sizeof(err));
    if (!r) {
        PQclear(g.res);
        return http_reply_db_down(req, err);
    }
    json_t *diffs = json_array();
    int n = PQntuples(r);
    for (int i = 0; i < n;) {
        int rank = atoi(PQgetvalue(r, i, 1));
        int j = i;
        json_t *flat[GROUP_MAX_RUNS];
        const char *ids[GROUP_MAX_RUNS];
        int m = 0;
        while (j < n && atoi(PQgetvalue(r, j, 1)) == rank) {
            if (m < GROUP_MAX_RUNS) {
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

static const route ROUTES[] = {
    {"GET", "/api/v1/twins/{}", MR_READ, AUTH_READ, read_twins},
    {"GET", "/api/v1/twins/{}/steps", MR_READ, AUTH_READ, read_twin_steps},
    {"GET", "/api/v1/twins/{}/manifest-diff", MR_READ, AUTH_READ, read_manifest_diff},
};

void api_twins_register(void)
{
    group_register();
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
    db_register("grp_awaiting", "SELECT run_key, rank, step, " TS("requested_at") " FROM record_requests "
                                "WHERE run_key = ANY($1::bigint[]) AND NOT answered ORDER BY step, rank, run_key "
                                "LIMIT 100");
    db_register("grp_manifests", "SELECT r.run_id, m.rank, m.manifest::text FROM manifests m JOIN runs r "
                                 "USING (run_key) WHERE r.twin_group = $1 ORDER BY m.rank, r.run_key");
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
