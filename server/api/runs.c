/* runs.c - the run read endpoints: the runs list, one run with its manifests and ranks, a run's records. */
#include "server/api/runs.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/hostlist.h"
#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/api/run_ref.h"
#include "server/twins/glance.h"
#include "server/rules/outcome.h"
#include "server/twins/findings.h"
#include "server/api/recview.h"
#include "server/core/limits.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/consensus/cons_read.h"
#include "server/http/auth.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/frames.h"
#include "server/store/run_read.h"
#include "server/store/runs.h"
#include "server/store/write.h"

/* Most node names a run's "node_names" spells out; a longer list reads null there (its "nodes" is still whole). */
#define RUN_NODE_NAMES_MAX 4096

/* node_names_json - the node names Slurm node list `nodes` names (hostlist_expand, the one parser of node lists:
 * ranges keep their zero padding, each name once), so that no client parses a node list; null when the list is
 * malformed or names more than RUN_NODE_NAMES_MAX nodes. */
static json_t *node_names_json(const char *nodes)
{
    char(*names)[HOSTLIST_NAME_MAX] = xmalloc(sizeof(*names) * RUN_NODE_NAMES_MAX);
    int n = hostlist_expand(nodes, names, RUN_NODE_NAMES_MAX);
    json_t *a = n < 0 ? json_null() : json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(names[i]));
    free(names);
    return a;
}

/* run_json - a run object from the RUN_READ_NCOLS columns at `row` (server/store/run_read.h). */
static json_t *run_json(PGresult *r, int row)
{
    json_t *o = json_object();
    json_object_set_new(o, "run_id", json_string(PQgetvalue(r, row, 0)));
    json_object_set_new(o, "job_id", json_string(PQgetvalue(r, row, 1)));
    json_object_set_new(o, "step_id", json_string(PQgetvalue(r, row, 2)));
    json_object_set_new(o, "twin_group", *PQgetvalue(r, row, 3) ? json_string(PQgetvalue(r, row, 3)) : json_null());
    json_object_set_new(o, "ranks", json_integer(atoi(PQgetvalue(r, row, 4))));
    json_object_set_new(o, "start_step", json_integer(strtoll(PQgetvalue(r, row, 5), NULL, 10)));
    json_object_set_new(o, "user", json_string(PQgetvalue(r, row, 6)));
    json_object_set_new(o, "nodes", json_string(PQgetvalue(r, row, 7)));
    json_object_set_new(o, "node_names", node_names_json(PQgetvalue(r, row, 7)));
    json_object_set_new(o, "command", json_string(PQgetvalue(r, row, 8)));
    json_object_set_new(o, "mode", json_string(PQgetvalue(r, row, 9)));
    json_object_set_new(o, "status", json_string(PQgetvalue(r, row, 10)));
    json_object_set_new(o, "created_at", pg_str(r, row, 11));
    json_object_set_new(o, "ended_at", pg_str(r, row, 12));
    json_object_set_new(o, "partition", json_string(PQgetvalue(r, row, 13)));
    json_object_set_new(o, "resume", *PQgetvalue(r, row, 14) ? json_string(PQgetvalue(r, row, 14)) : json_null());
    json_t *argv = PQgetisnull(r, row, 15) ? NULL : json_loads(PQgetvalue(r, row, 15), 0, NULL);
    json_object_set_new(o, "argv", argv ? argv : json_null()); /* the words a replay runs; null: none registered */
    return o;
}

static const char *const LIST_RUNS = "list runs with GET /api/v1/runs";

/* set_outcomes - give each run of `runs` its twin group's status ("group_status": twin_status over the group's facts
 * from findings_facts, as GET /twins/G says it) and its own outcome in the group ("twin_outcome": as GET /twins/G's
 * runs say it, glance_run_outcomes); both null for a run outside any group. Returns 0, or -1 with the database's
 * message. */
static int set_outcomes(json_t *runs, char *err, size_t cap)
{
    size_t n = json_array_size(runs), i, k;
    const char **names = xcalloc(n + 1, sizeof(char *)), **groups = xcalloc(n + 1, sizeof(char *)),
               **ids = xcalloc(n + 1, sizeof(char *)), **statuses = xcalloc(n + 1, sizeof(char *)),
               **outcomes = xcalloc(n + 1, sizeof(char *));
    int m = 0;
    json_t *r;
    json_array_foreach(runs, i, r)
    {
        const char *g = json_string_value(json_object_get(r, "twin_group"));
        int seen = !g;
        for (k = 0; k < (size_t)m && !seen; k++)
            seen = !strcmp(names[k], g);
        if (!seen)
            names[m++] = g;
    }
    twin_facts *facts = xcalloc((size_t)m + 1, sizeof(twin_facts));
    int rc = findings_facts(names, m, facts, err, cap);
    json_array_foreach(runs, i, r)
    {
        const char *g = json_string_value(json_object_get(r, "twin_group"));
        char why[512];
        ids[i] = json_string_value(json_object_get(r, "run_id")) ?: "";
        for (k = 0; g && rc == 0 && k < (size_t)m && !groups[i]; k++)
            if (!strcmp(names[k], g)) {
                groups[i] = g;
                statuses[i] = twin_status(&facts[k], why, sizeof(why));
            }
    }
    if (rc == 0)
        rc = glance_run_outcomes(ids, groups, statuses, (int)n, outcomes, err, cap);
    json_array_foreach(runs, i, r)
    {
        json_object_set_new(r, "group_status", statuses[i] ? json_string(statuses[i]) : json_null());
        json_object_set_new(r, "twin_outcome", outcomes[i] ? json_string(outcomes[i]) : json_null());
        json_object_set_new(r, "twin_outcome_why",
                            outcomes[i] ? json_string(twin_outcome_why(outcomes[i])) : json_null());
    }
    free(names);
    free(groups);
    free(ids);
    free(statuses);
    free(outcomes);
    free(facts);
    return rc;
}

static enum MHD_Result read_runs(http_req *req, char **args)
{
    (void)args;
    /* With read_access = admin, a job's own token may still list that job's
     * runs (agents look their run up by job and step). */
    const char *job = http_query(req, "job");
    int job_ok = !g_srv.cfg.read_open && job && *job && http_token_is_job(req, job);
    if (!job_ok && http_auth_read(req) < 0)
        return MHD_YES;
    long long limit, offset;
    if (api_page(req, 50, 1000, "offset", 0, &limit, &offset) < 0)
        return MHD_YES;
    char err[512];
    const char *u = http_query(req, "user"), *j = http_query(req, "job"), *g = http_query(req, "group"),
               *s = http_query(req, "status"), *st = http_query(req, "step");
    run_filter f = {u ? u : "", j ? j : "", g ? g : "", s ? s : "", st ? st : ""};
    PGresult *r = run_read_list(&f, limit + 1, offset, err, sizeof(err)); /* one more: is there a next page? */
    PGresult *c = r ? run_read_count(&f, err, sizeof(err)) : NULL;
    if (!r || !c) {
        PQclear(r);
        return http_reply_db_down(req, err);
    }
    /* The total is counted up to LIST_TOTAL_MAX rows only (a count over a million runs took seconds); past
     * that it is null and total_at_least says so. */
    long long counted = strtoll(PQgetvalue(c, 0, 0), NULL, 10);
    PQclear(c);
    json_t *runs = json_array();
    size_t bytes = 0;
    int n = 0;
    for (; n < PQntuples(r) && n < limit; n++) {
        if (n > 0 && bytes > LIST_MAX_BYTES)
            break; /* the answer is big enough: the rest is on the next page */
        for (int col = 0; col < RUN_READ_NCOLS; col++)
            bytes += (size_t)PQgetlength(r, n, col) + 16;
        json_array_append_new(runs, run_json(r, n));
    }
    int more = n < PQntuples(r);
    PQclear(r);
    long long total = counted > LIST_TOTAL_MAX ? -1 : counted;
    if (set_outcomes(runs, err, sizeof(err)) < 0) {
        json_decref(runs);
        return http_reply_db_down(req, err);
    }
    json_t *o = api_list(runs, total, limit, more ? offset + n : -1);
    if (total < 0)
        json_object_set_new(o, "total_at_least", json_integer(LIST_TOTAL_MAX));
    return http_reply_json(req, 200, o);
}

/* run_attested - what slurmstepd (or the admin) attested of run `key`'s step: the user, the nodes, by whom, and
 * which node ran which ranks (at most RUN_DETAIL_MAX_RANKS nodes); JSON null when nothing was. A new reference,
 * or NULL with the database's message in `err`. */
static json_t *run_attested(const char *key, char *err, size_t cap)
{
    PGresult *r = run_read_attested(key, err, cap);
    if (!r)
        return NULL;
    json_t *placement = json_array(), *att = json_null();
    for (int i = 0; i < PQntuples(r) && i < RUN_DETAIL_MAX_RANKS; i++) {
        if (i == 0)
            att = json_pack("{s:s, s:s, s:s}", "user", PQgetvalue(r, 0, 2), "nodes", PQgetvalue(r, 0, 3), "by",
                            PQgetvalue(r, 0, 4));
        json_array_append_new(placement, json_pack("{s:s, s:o}", "node", PQgetvalue(r, i, 0), "ranks",
                                                   pg_int_array(PQgetvalue(r, i, 1), 0)));
    }
    PQclear(r);
    if (json_is_object(att))
        json_object_set_new(att, "placement", placement);
    else
        json_decref(placement);
    return att;
}

static enum MHD_Result read_run(http_req *req, char **args)
{
    const char *run_id = args[0];
    if (!store_uuid_valid(run_id))
        return api_run_reply_unknown(req, run_id, LIST_RUNS);
    char err[512];
    PGresult *r = run_read_one(run_id, err, sizeof(err));
    if (!r)
        return http_reply_db_down(req, err);
    if (PQntuples(r) != 1) {
        PQclear(r);
        return api_run_reply_unknown(req, run_id, LIST_RUNS);
    }
    json_t *o = run_json(r, 0);
    char key[32];
    snprintf(key, sizeof(key), "%s", PQgetvalue(r, 0, 16));
    /* set aside from its twin group when the group's owner claimed it: from where, why, when */
    json_object_set_new(o, "set_aside",
                        PQgetisnull(r, 0, 17) ? json_null()
                                              : json_pack("{s:s, s:s, s:o}", "group", PQgetvalue(r, 0, 17), "reason",
                                                          PQgetvalue(r, 0, 18), "at", pg_str(r, 0, 19)));
    PQclear(r);
    /* One page of ranks: at most RUN_DETAIL_MAX_MANIFESTS manifests (and LIST_MAX_BYTES of them) and
     * RUN_DETAIL_MAX_RANKS rank states from ?rank_from=; next_rank_from says where the next page starts. */
    long long rank_from;
    if (api_int_arg(req, "rank_from", 0, INT32_MAX, 0, &rank_from) < 0) {
        json_decref(o);
        return MHD_YES;
    }
    json_t *manifests = json_array(), *ranks = json_array();
    long long next = -1;
    r = run_read_manifests(key, rank_from, RUN_DETAIL_MAX_MANIFESTS + 1, err, sizeof(err));
    if (!r)
        goto out_down;
    size_t bytes = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        if (i == RUN_DETAIL_MAX_MANIFESTS || (i > 0 && bytes > LIST_MAX_BYTES)) {
            next = strtoll(PQgetvalue(r, i, 0), NULL, 10);
            break;
        }
        bytes += (size_t)PQgetlength(r, i, 1);
        json_t *m = json_loads(PQgetvalue(r, i, 1), 0, NULL);
        json_array_append_new(
            manifests, json_pack("{s:i, s:o}", "rank", atoi(PQgetvalue(r, i, 0)), "manifest", m ? m : json_null()));
    }
    PQclear(r);
    r = run_read_ranks(key, rank_from, RUN_DETAIL_MAX_RANKS + 1, err, sizeof(err));
    if (!r)
        goto out_down;
    for (int i = 0; i < PQntuples(r); i++) {
        long long rk = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        if (i == RUN_DETAIL_MAX_RANKS || (next >= 0 && rk >= next)) {
            if (next < 0 || rk < next)
                next = rk;
            break;
        }
        json_t *x = json_pack("{s:i}", "rank", atoi(PQgetvalue(r, i, 0)));
        static const char *const names[] = {"min_step", "max_step", "max_seq", "records", "exit_code"};
        for (int c = 1; c <= 5; c++)
            json_object_set_new(x, names[c - 1],
                                PQgetisnull(r, i, c) ? json_null()
                                                     : json_integer(strtoll(PQgetvalue(r, i, c), NULL, 10)));
        json_object_set_new(x, "ended", json_boolean(!PQgetisnull(r, i, 5)));
        json_array_append_new(ranks, x);
    }
    PQclear(r);
    while (next >= 0 && json_array_size(manifests) &&
           json_integer_value(json_object_get(json_array_get(manifests, json_array_size(manifests) - 1), "rank")) >=
               next)
        json_array_remove(manifests, json_array_size(manifests) - 1); /* both lists cover the same ranks */
    json_object_set_new(o, "manifests", manifests);
    json_object_set_new(o, "rank_status", ranks);
    json_t *att = run_attested(key, err, sizeof(err));
    if (!att)
        goto out_down_attach;
    json_object_set_new(o, "attested", att);
    json_t *cons = cons_read_json(strtoll(key, NULL, 10), err, sizeof(err)); /* the run against itself */
    if (!cons)
        goto out_down_attach;
    json_object_set_new(o, "consensus", cons);
    json_object_set_new(o, "rank_from", json_integer(rank_from));
    json_object_set_new(o, "next_rank_from", next >= 0 ? json_integer(next) : json_null());
    return http_reply_json(req, 200, o);
out_down:
    json_decref(manifests);
    json_decref(ranks);
out_down_attach:
    json_decref(o);
    return http_reply_db_down(req, err);
}

static enum MHD_Result read_run_records(http_req *req, char **args)
{
    const char *run_id = args[0];
    run_info run;
    if (api_run_find(req, run_id, &run, LIST_RUNS) < 0)
        return MHD_YES;
    long long rank, from, to, limit, offset;
    if (api_int_arg(req, "rank", 0, INT32_MAX, 0, &rank) < 0 ||
        api_int_arg(req, "from", INT64_MIN, INT64_MAX, INT64_MIN, &from) < 0 ||
        api_int_arg(req, "to", INT64_MIN, INT64_MAX, INT64_MAX, &to) < 0 ||
        api_page(req, 1000, 100000, NULL, 0, &limit, &offset) < 0)
        return MHD_YES;
    const char *step = http_query(req, "step");
    if (step && api_int_arg(req, "step", INT64_MIN, INT64_MAX, 0, &from) < 0)
        return MHD_YES;
    if (step)
        to = from;
    frame_set set = {0};
    char err[512];
    /* one more than the page: is there a next one? */
    int rc = frames_read_range(run.key, (uint32_t)rank, from, to, offset, limit + 1, &set, err, sizeof(err));
    if (rc < 0) {
        frame_set_release(&set);
        return rv_reply_read_error(req, rc, err);
    }
    json_t *recs = json_array();
    int more = (long long)set.n > limit;
    for (size_t i = 0; i < set.n && (long long)i < limit; i++)
        json_array_append_new(recs, rv_record(&set.recs[i]));
    frame_set_release(&set);
    json_t *o = api_list(recs, -1, limit, more ? offset + limit : -1);
    json_object_set_new(o, "run_id", json_string(run.run_id));
    json_object_set_new(o, "rank", json_integer(rank));
    return http_reply_json(req, 200, o);
}

/* read_run_wanted - GET /api/v1/runs/{id}/wanted?rank=R: the steps of the rank whose held-back records lockstepd
 * has asked for and not received (digest streaming; `lockstep replay --steps asked` reads it). The job's own
 * token may read it, as may any reader. */
static enum MHD_Result read_run_wanted(http_req *req, char **args)
{
    run_info run;
    srv_error e;
    if (api_run_find(req, args[0], &run, LIST_RUNS) < 0)
        return MHD_YES;
    if (!(g_srv.secret && http_token_is_job(req, run.job_id)) && http_auth_read(req) < 0)
        return MHD_YES;
    long long rank;
    if (api_int_arg(req, "rank", 0, INT32_MAX, 0, &rank) < 0)
        return MHD_YES;
    int64_t want[1000];
    int n = store_wanted_steps(&run, (int)rank, want, 1000, &e);
    if (n < 0)
        return http_reply_srv_error(req, 503, &e);
    json_t *steps = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(steps, json_integer(want[i]));
    return http_reply_json(
        req, 200, json_pack("{s:s, s:I, s:o}", "run_id", run.run_id, "rank", (json_int_t)rank, "steps", steps));
}

static const route ROUTES[] = {
    {"GET", "/api/v1/runs", MR_READ, AUTH_SELF, read_runs, .reads = 1},
    {"GET", "/api/v1/runs/{}", MR_READ, AUTH_READ, read_run, .reads = 1},
    {"GET", "/api/v1/runs/{}/records", MR_READ, AUTH_READ, read_run_records, .reads = 1},
    {"GET", "/api/v1/runs/{}/wanted", MR_READ, AUTH_SELF, read_run_wanted},
};

void api_runs_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
