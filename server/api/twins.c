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
#include "server/api/list.h"
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
    json_t *o = json_pack("{s:s, s:s, s:o, s:I, s:o, s:o}", "group", group, "status", status, "runs", runs,
                          "runs_total", (json_int_t)g.total, "first_divergence", first, "per_rank", per_rank);
    PQclear(u);
    PQclear(d);
    PQclear(g.res);
    return http_reply_json(req, 200, o);
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
    /* One window of ranks per answer (DIFF_MAX_RANKS from ?rank_from=); a stored manifest larger than a
     * manifest may be now is left out ("skipped"). */
    long long rank_from;
    if (api_int_arg(req, "rank_from", 0, INT32_MAX, 0, &rank_from) < 0) {
        PQclear(g.res);
        return MHD_YES;
    }
    char rf[24], rt[24], mx[16];
    snprintf(rf, sizeof(rf), "%lld", rank_from);
    snprintf(rt, sizeof(rt), "%lld", rank_from + DIFF_MAX_RANKS - 1);
    snprintf(mx, sizeof(mx), "%d", MANIFEST_BODY_MAX);
    const char *p[] = {group, rf, rt, mx};
    PGresult *r = db_exec("grp_manifests", 4, p, err, sizeof(err));
    PGresult *more = r ? db_exec("grp_manifest_more", 2, (const char *[]){group, rt}, err, sizeof(err)) : NULL;
    if (!r || !more) {
        PQclear(r);
        PQclear(g.res);
        return http_reply_db_down(req, err);
    }
    int more_ranks = PQntuples(more) > 0;
    PQclear(more);
    json_t *diffs = json_array(), *skipped = json_array();
    int n = PQntuples(r);
    for (int i = 0; i < n;) {
        int rank = atoi(PQgetvalue(r, i, 1));
        int j = i;
        json_t *flat[GROUP_MAX_RUNS];
        const char *ids[GROUP_MAX_RUNS];
        int m = 0;
        while (j < n && atoi(PQgetvalue(r, j, 1)) == rank) {
            if (PQgetisnull(r, j, 2)) {
                json_array_append_new(skipped, json_pack("{s:s, s:i, s:s}", "run_id", PQgetvalue(r, j, 0), "rank",
                                                         rank, "why", "larger than a manifest may be"));
            } else if (m < GROUP_MAX_RUNS) {
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
    json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:I}", "group", group, "runs", run_ids, "diffs", diffs, "skipped",
                          skipped, "rank_from", (json_int_t)rank_from);
    json_object_set_new(o, "next_rank_from", more_ranks ? json_integer(rank_from + DIFF_MAX_RANKS) : json_null());
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/twins/{}", MR_READ, AUTH_READ, read_twins},
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
    db_register("grp_manifests", "SELECT r.run_id, m.rank, CASE WHEN pg_column_size(m.manifest) <= $4::int "
                                 "THEN m.manifest::text END FROM manifests m JOIN runs r USING (run_key) "
                                 "WHERE r.twin_group = $1 AND m.rank BETWEEN $2::int AND $3::int "
                                 "ORDER BY m.rank, r.run_key");
    db_register("grp_manifest_more", "SELECT 1 FROM manifests m JOIN runs r USING (run_key) "
                                     "WHERE r.twin_group = $1 AND m.rank > $2::int LIMIT 1");
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
