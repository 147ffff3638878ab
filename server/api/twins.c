/* twins.c - the twin group read endpoints: group status and divergences, per-step map, manifest diff. */
#include "server/api/twins.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/recmatch.h"
#include "common/text.h"
#include "server/api/group.h"
#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/compare/members.h"
#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/core/state.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/http/auth.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/batch.h"
#include "server/store/db.h"
#include "server/store/groups.h"

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

/* twins_group_status - the one place a twin group's status is decided, from what the comparison stored:
 * "diverged" when a rank diverged; "match" when at least two runs are compared, every run has ended and
 * every rank was compared up to its end since its last record or end; else "pending". `reason` says why
 * in words (what it waits for, or why nothing can be compared). */
static const char *twins_group_status(int ndivs, int ncompared, int nruns, int all_ended, long unchecked, char *reason,
                                      size_t cap)
{
    if (ndivs > 0) {
        snprintf(reason, cap, "%d rank%s diverged", ndivs, ndivs == 1 ? "" : "s");
        return "diverged";
    }
    if (ncompared < 2) {
        snprintf(reason, cap, "%s", nruns < 2 ? "a twin group needs two runs"
                                              : "fewer than two runs share steps to compare (see each run's left_out)");
        return "pending";
    }
    if (!all_ended) {
        snprintf(reason, cap, "some runs are still running");
        return "pending";
    }
    if (unchecked > 0) {
        snprintf(reason, cap, "%ld rank%s not compared to the end yet", unchecked, unchecked == 1 ? " is" : "s are");
        return "pending";
    }
    snprintf(reason, cap, "%d runs matched on every step they share", ncompared);
    return "match";
}

static enum MHD_Result read_twins(http_req *req, char **args)
{
    const char *group = args[0];
    char err[512], keys[GROUP_KEYS_CAP];
    group_runs g;
    enum MHD_Result sent;
    if (!group_open(req, group, &g, &sent))
        return sent;
    group_keys(&g, keys, sizeof(keys));
    const char *p[] = {group}, *pk[] = {group, keys}, *pf[] = {keys};
    PGresult *d = db_exec("grp_divs", 1, p, err, sizeof(err));
    PGresult *u = d ? db_exec("grp_unchecked", 2, pk, err, sizeof(err)) : NULL;
    PGresult *f = u ? db_exec("grp_facts", 1, pf, err, sizeof(err)) : NULL;
    srv_error e;
    PGresult *own = f ? store_group_get(group, &e) : NULL;
    if (!own) {
        PQclear(d);
        PQclear(u);
        PQclear(f);
        PQclear(g.res);
        return http_reply_db_down(req, f ? e.detail : err);
    }
    /* Which runs the comparison takes, by the rule it applies to each rank (server/compare/members.h), here
     * to whole runs: whether it recorded anything, how far, whether it ended. */
    cmp_member m[GROUP_MAX_RUNS];
    int all_ended = 1;
    for (int i = 0; i < g.n; i++) {
        int ended = strcmp(PQgetvalue(g.res, i, 5), "running") != 0;
        all_ended &= ended;
        m[i] = (cmp_member){strtoll(PQgetvalue(g.res, i, 6), NULL, 10), 0, 0, 0, ended, 0, NULL};
        for (int k = 0; k < PQntuples(f); k++)
            if (strtoll(PQgetvalue(f, k, 0), NULL, 10) == g.keys[i]) {
                m[i].has_records = m[i].has_any_records = 1;
                m[i].max_step = strtoll(PQgetvalue(f, k, 1), NULL, 10);
            }
    }
    int64_t lo;
    int ncompared = cmp_members_pick(m, g.n, &lo);
    json_t *runs = json_array();
    for (int i = 0; i < g.n; i++) {
        PGresult *r = g.res;
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:i, s:s, s:s, s:o, s:b}", "run_id", PQgetvalue(r, i, 1),
                              "job_id", PQgetvalue(r, i, 2), "user", PQgetvalue(r, i, 3), "nodes", PQgetvalue(r, i, 4),
                              "status", PQgetvalue(r, i, 5), "start_step",
                              (json_int_t)strtoll(PQgetvalue(r, i, 6), NULL, 10), "ranks", atoi(PQgetvalue(r, i, 7)),
                              "mode", PQgetvalue(r, i, 8), "created_at", PQgetvalue(r, i, 9), "ended_at",
                              PQgetisnull(r, i, 10) ? json_null() : json_string(PQgetvalue(r, i, 10)), "compared",
                              m[i].in);
        json_object_set_new(o, "left_out", m[i].in ? json_null() : json_string(m[i].why));
        json_object_set_new(o, "attested_user", PQgetisnull(r, i, 12) ? json_null() : json_string(PQgetvalue(r, i, 12)));
        json_array_append_new(runs, o);
    }
    json_t *per_rank = json_array();
    for (int i = 0; i < PQntuples(d); i++)
        json_array_append_new(per_rank, divergence_json(d, i, &g));
    char reason[200];
    const char *status = twins_group_status(PQntuples(d), ncompared, g.n, all_ended,
                                            strtol(PQgetvalue(u, 0, 0), NULL, 10), reason, sizeof(reason));
    json_t *first = json_array_size(per_rank) ? json_incref(json_array_get(per_rank, 0)) : json_null();
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:I, s:o, s:o}", "group", group, "status", status, "status_reason",
                          reason, "runs", runs, "runs_total", (json_int_t)g.total, "first_divergence", first,
                          "per_rank", per_rank);
    if (PQntuples(own) == 1) {
        json_t *shared = json_loads(PQgetvalue(own, 0, 2), 0, NULL);
        json_object_set_new(o, "owner", json_pack("{s:s, s:b, s:o}", "user", PQgetvalue(own, 0, 0), "attested",
                                                  PQgetvalue(own, 0, 1)[0] == 't', "shared_with",
                                                  shared ? shared : json_array()));
    } else {
        json_object_set_new(o, "owner", json_null());
    }
    PQclear(own);
    PQclear(f);
    PQclear(u);
    PQclear(d);
    PQclear(g.res);
    return http_reply_json(req, 200, o);
}

/* check_share - before the body: the admin token, or the token of job ?job=J (whose run in the group must
 * belong to the owner, which the store checks). */
static int check_share(http_req *req, char **args)
{
    (void)args;
    const char *job = http_query(req, "job");
    if (http_is_admin(req) || !g_srv.secret ||
        (job && *job && (http_token_is_job(req, job) || http_token_is_attest(req, job))))
        return 0;
    if (http_auth_present(req) < 0)
        return -1; /* 401 */
    http_reply_error(req, 403, "not the group's owner",
                     "send ?job=J with the token of J, a job of the group's owner that has a run in it, or the admin "
                     "token",
                     "see docs/server.md, \"Twin groups and owners\"");
    return -1;
}

/* share_group - POST /api/v1/twins/{group}/share {"users": ["bob", ...]} ("*": anyone): the users whose runs
 * may join the group as well (replacing the list). The owner (the token of one of the owner's jobs with a run
 * in the group) or the admin. */
static enum MHD_Result share_group(http_req *req, char **args)
{
    const char *group = args[0];
    json_t *o = req->len ? json_loadb(req->body, req->len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    json_t *users = json_object_get(o, "users");
    int ok = json_is_array(users) && json_array_size(users) <= GROUP_MAX_SHARED;
    size_t i;
    json_t *v;
    json_array_foreach(users, i, v) ok &= json_is_string(v) && json_string_length(v) >= 1 &&
                                          json_string_length(v) <= USER_MAX &&
                                          text_line_valid(json_string_value(v), json_string_length(v));
    if (!ok) {
        json_decref(o);
        return http_reply_error(req, 400, "bad share",
                                "the body is {\"users\": [\"name\", ...]} with at most " GROUP_MAX_SHARED_TEXT
                                " user names (\"*\" = anyone)",
                                "see docs/server.md, \"Twin groups and owners\"");
    }
    char *list = json_dumps(users, JSON_COMPACT);
    json_decref(o);
    const char *job = http_query(req, "job");
    int admin = http_is_admin(req);
    PGresult *r = NULL;
    srv_error e;
    int got = store_group_share(group, list, job, admin, &r, &e);
    free(list);
    if (got < 0)
        return http_reply_srv_error(req, e.status ? e.status : 503, &e);
    if (got == 0) {
        char detail[320];
        snprintf(detail, sizeof(detail), "no twin group \"%.255s\"", group);
        return http_reply_error(req, 404, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
    }
    json_t *shared = json_loads(PQgetvalue(r, 0, 2), 0, NULL);
    json_t *reply = json_pack("{s:s, s:{s:s, s:b, s:o}}", "group", group, "owner", "user", PQgetvalue(r, 0, 0),
                              "attested", PQgetvalue(r, 0, 1)[0] == 't', "shared_with", shared ? shared : json_array());
    log_info("twin group %s shared with %s", group, PQgetvalue(r, 0, 2));
    PQclear(r);
    return http_reply_json(req, 200, reply);
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
    {"POST", "/api/v1/twins/{}/share", MR_ADMIN, AUTH_SELF, share_group, HTTP_BODY_DEFAULT, check_share},
};

void api_twins_register(void)
{
    group_register();
    db_register("grp_divs", "SELECT rank, step, seq, name, occ, kind, odd_run_key, runs::text, " TS("committed_at")
                            ", " TS("detected_at") ", extract(epoch FROM detected_at - committed_at) * 1000 "
                            "FROM divergences WHERE twin_group = $1 ORDER BY step, rank");
    /* Ranks (with records in any of the group's runs $2) whose comparison is missing, short of its target, or
     * older than their last record or end (cmp_check marks checked_at under the lock those commit under). */
    db_register("grp_unchecked",
                "SELECT count(*) FROM (SELECT p.rank, max(p.updated_at) AS t FROM rank_progress p "
                "WHERE p.run_key = ANY($2::bigint[]) GROUP BY p.rank) x "
                "LEFT JOIN group_checks c ON c.twin_group = $1 AND c.rank = x.rank "
                "WHERE c.rank IS NULL OR c.checked_at < x.t "
                "OR (c.target IS NOT NULL AND (c.checked_upto IS NULL OR c.checked_upto < c.target)) "
                "OR c.checked_at < (SELECT max(e.ended_at) FROM rank_ends e WHERE e.run_key = ANY($2::bigint[]) "
                "AND e.rank = x.rank) "
                "OR c.checked_at < (SELECT max(r.ended_at) FROM runs r WHERE r.run_key = ANY($2::bigint[]))");
    db_register("grp_facts", "SELECT run_key, max(max_step) FROM rank_progress WHERE run_key = ANY($1::bigint[]) "
                             "GROUP BY run_key");
    db_register("grp_manifests", "SELECT r.run_id, m.rank, CASE WHEN pg_column_size(m.manifest) <= $4::int "
                                 "THEN m.manifest::text END FROM manifests m JOIN runs r USING (run_key) "
                                 "WHERE r.twin_group = $1 AND m.rank BETWEEN $2::int AND $3::int "
                                 "ORDER BY m.rank, r.run_key");
    db_register("grp_manifest_more", "SELECT 1 FROM manifests m JOIN runs r USING (run_key) "
                                     "WHERE r.twin_group = $1 AND m.rank > $2::int LIMIT 1");
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
