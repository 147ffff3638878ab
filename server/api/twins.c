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
#include "server/compare/verdict.h"
#include "server/fleet/narrow.h"
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

/* read_twins - GET /api/v1/twins/{group}: the group's status (with why), its runs and their exits, its first
 * divergence with cause, origin ranks and call site, and each rank's first divergence (server/compare/verdict.h). */
static enum MHD_Result read_twins(http_req *req, char **args)
{
    const char *group = args[0];
    char err[512];
    grp_verdict v;
    int got = verdict_load(group, &v, err, sizeof(err));
    if (got < 0)
        return http_reply_db_down(req, err);
    if (got == 0) {
        char detail[320];
        snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", group);
        return http_reply_error(req, 404, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
    }
    size_t i;
    json_t *d;
    json_array_foreach(v.per_rank, i, d) add_ulps(json_object_get(d, "runs"));
    if (json_is_object(v.first))
        add_ulps(json_object_get(v.first, "runs"));
    json_t *o = json_pack("{s:s, s:s, s:s, s:O, s:O, s:O, s:{s:O, s:O}}", "group", group, "status", v.status,
                          "status_reason", v.status_why, "runs", v.runs, "first_divergence", v.first, "per_rank",
                          v.per_rank, "manifest_diff", "explains", json_object_get(v.mdiff, "explains"), "summary",
                          json_object_get(v.mdiff, "summary"));
    verdict_release(&v);
    /* Replays: the group's newest narrow and its verdict, or the group it replays (server/fleet/narrow.h). */
    if (narrow_twin_fields(group, o, err, sizeof(err)) < 0) {
        json_decref(o);
        return http_reply_db_down(req, err);
    }
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

/* read_manifest_diff - GET /api/v1/twins/{group}/manifest-diff: common/json/mdiff.h over the group's runs. */
static enum MHD_Result read_manifest_diff(http_req *req, char **args)
{
    const char *group = args[0];
    char err[512];
    grp_verdict v;
    int got = verdict_load(group, &v, err, sizeof(err));
    if (got < 0)
        return http_reply_db_down(req, err);
    if (got == 0) {
        char detail[320];
        snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", group);
        return http_reply_error(req, 404, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
    }
    json_t *ids = json_array(), *r;
    size_t i;
    json_array_foreach(v.runs, i, r) json_array_append(ids, json_object_get(r, "run_id"));
    json_t *o = json_deep_copy(v.mdiff);
    json_object_set_new(o, "group", json_string(group));
    json_object_set_new(o, "runs", ids);
    verdict_release(&v);
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/twins/{}", MR_READ, AUTH_READ, read_twins},
    {"GET", "/api/v1/twins/{}/steps", MR_READ, AUTH_READ, read_twin_steps},
    {"GET", "/api/v1/twins/{}/manifest-diff", MR_READ, AUTH_READ, read_manifest_diff},
};

void api_twins_register(void)
{
    group_register();
    db_register("grp_progress", "SELECT p.run_key, p.rank, p.max_step, e.run_key IS NOT NULL OR r.status <> 'running' "
                                "FROM rank_progress p JOIN runs r USING (run_key) LEFT JOIN rank_ends e "
                                "ON e.run_key = p.run_key AND e.rank = p.rank WHERE r.twin_group = $1");
    /* No ORDER BY: the rows are sorted in C, which spares PostgreSQL an on-disk sort of a
     * 500-step x 64-rank window (see bench/api). */
    db_register("grp_steps", "SELECT run_key, rank, step, n, digest FROM step_digests "
                             "WHERE run_key = ANY($1::bigint[]) AND step BETWEEN $2 AND $3");
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
