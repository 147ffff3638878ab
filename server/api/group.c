/* group.c - what every twin group read starts with: the group's runs, loaded once per request, and lookups into them. */
#include "server/api/group.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server/api/pgjson.h"
#include "server/core/state.h"
#include "server/http/auth.h"
#include "server/core/xalloc.h"
#include "server/http/reply.h"
#include "server/store/db.h"

char *group_names_json(const char *const *names, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(names[i]));
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

void group_register(void)
{
    /* The first GROUP_MAX_RUNS runs (a group holds no more since registration refuses the next one; older
     * data may), and how many there are. */
    db_register("grp_runs", "SELECT run_key, run_id, job_id, user_name, nodes, status, start_step, ranks, mode, "
                            TS("created_at") ", " TS("ended_at") ", count(*) OVER (), attested_user FROM runs WHERE twin_group = $1 "
                            "ORDER BY run_key LIMIT " GROUP_MAX_RUNS_TEXT);
    /* Runs by key, as an ad hoc group in the order asked (GET /api/v1/compare/records); the same columns. */
    db_register("grp_runs_keys", "SELECT run_key, run_id, job_id, user_name, nodes, status, start_step, ranks, mode, "
                                 TS("created_at") ", " TS("ended_at") ", count(*) OVER (), attested_user FROM runs "
                                 "WHERE run_key = ANY($1::bigint[]) ORDER BY array_position($1::bigint[], run_key) "
                                 "LIMIT " GROUP_MAX_RUNS_TEXT);
    /* The user a job's token reads as: the user slurmstepd attested for the job, else the one its first run
     * was attested or reported as. */
    db_register("grp_reader", "SELECT coalesce((SELECT user_name FROM attestations WHERE job_id = $1 LIMIT 1), "
                              "(SELECT coalesce(attested_user, user_name) FROM runs WHERE job_id = $1 "
                              "ORDER BY run_key LIMIT 1))");
    /* How many of the runs $1 (uuid[]) user $2 may not read: a run of a twin group through the group's owner and
     * shares, a run outside any group through its own user (attested, else reported). */
    db_register("grp_runs_hidden", "SELECT count(*) FROM runs r WHERE r.run_id = ANY($1::uuid[]) AND NOT CASE "
                                   "WHEN coalesce(r.twin_group, '') <> '' THEN EXISTS (SELECT 1 FROM twin_groups o "
                                   "WHERE o.twin_group = r.twin_group AND (o.owner = $2 OR $2 = ANY(o.shared_with) "
                                   "OR '*' = ANY(o.shared_with))) ELSE coalesce(r.attested_user, r.user_name) = $2 END");
    db_register("grp_visible", "SELECT 1 FROM twin_groups WHERE twin_group = $1 AND (owner = $2 OR "
                               "$2 = ANY(shared_with) OR '*' = ANY(shared_with))");
}

int group_reader(http_req *req, char *user, size_t cap)
{
    *user = 0;
    if (g_srv.cfg.read_open || http_is_admin(req))
        return 1;
    const char *job = http_query(req, "job");
    if (!job || !*job || !http_token_is_job(req, job))
        return http_auth_read(req) < 0 ? -1 : 1;
    char err[512];
    const char *p[] = {job};
    PGresult *r = db_exec("grp_reader", 1, p, err, sizeof(err));
    if (!r) {
        http_reply_db_down(req, err);
        return -1;
    }
    int known = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) && *PQgetvalue(r, 0, 0);
    if (known)
        snprintf(user, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (!known) {
        http_reply_error(req, 403, "no user for this job",
                         "the job of ?job= has no run (nor attestation) that says whose it is",
                         "read with the admin token, or from a job that registered a run");
        return -1;
    }
    return 0;
}

int group_readable(http_req *req, const char *group, const char *user)
{
    if (!*user)
        return 1;
    char err[512];
    const char *p[] = {group, user};
    PGresult *r = db_exec("grp_visible", 2, p, err, sizeof(err));
    if (!r) {
        http_reply_db_down(req, err);
        return 0;
    }
    int ok = PQntuples(r) > 0;
    PQclear(r);
    if (!ok)
        http_reply_error(req, 403, "twin group of another user",
                         "a job's token reads the twin groups its user owns or was shared with",
                         "see docs/server.md, \"Twin groups and owners\"");
    return ok;
}

int group_runs_readable(http_req *req, const char *user, const char *const *run_ids, int n)
{
    if (!*user || n <= 0)
        return 1;
    size_t cap = (size_t)n * 40 + 3, len = 0;
    char *arr = xmalloc(cap), err[512];
    arr[len++] = '{';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(arr + len, cap - len, "%s%.36s", i ? "," : "", run_ids[i]);
    snprintf(arr + len, cap - len, "}");
    const char *p[] = {arr, user};
    PGresult *r = db_exec("grp_runs_hidden", 2, p, err, sizeof(err));
    free(arr);
    if (!r) {
        http_reply_db_down(req, err);
        return 0;
    }
    int ok = PQntuples(r) == 1 && atoll(PQgetvalue(r, 0, 0)) == 0;
    PQclear(r);
    if (!ok)
        http_reply_error(req, 403, "run of another user",
                         "a job's token reads the runs of the twin groups its user owns or was shared with, and its "
                         "user's runs outside any group",
                         "see docs/server.md, \"Twin groups and owners\"");
    return ok;
}

int group_open_for(http_req *req, const char *group, group_runs *g, enum MHD_Result *sent)
{
    char user[256];
    int who = group_reader(req, user, sizeof(user));
    if (who < 0 || !group_readable(req, group, user)) {
        *sent = MHD_YES;
        return 0;
    }
    return group_open(req, group, g, sent);
}

static enum MHD_Result unknown_group(http_req *req, const char *group)
{
    char detail[320];
    snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", group);
    return http_reply_error(req, 404, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
}

/* open_with - group_open's body for statement `stmt` with its one parameter. */
static int open_with(http_req *req, const char *stmt, const char *param, const char *group, group_runs *g,
                     enum MHD_Result *sent)
{
    char err[512];
    const char *p[] = {param};
    g->res = db_exec(stmt, 1, p, err, sizeof(err));
    if (!g->res) {
        *sent = http_reply_db_down(req, err);
        return 0;
    }
    g->n = PQntuples(g->res) < GROUP_MAX_RUNS ? PQntuples(g->res) : GROUP_MAX_RUNS;
    g->total = g->n ? strtoll(PQgetvalue(g->res, 0, 11), NULL, 10) : 0;
    for (int i = 0; i < g->n; i++)
        g->keys[i] = strtoll(PQgetvalue(g->res, i, 0), NULL, 10);
    if (g->n == 0) {
        PQclear(g->res);
        *sent = group ? unknown_group(req, group)
                      : http_reply_error(req, 404, "unknown run", "none of the runs named exists",
                                         "list runs with GET /api/v1/runs");
        return 0;
    }
    return 1;
}

int group_open(http_req *req, const char *group, group_runs *g, enum MHD_Result *sent)
{
    return open_with(req, "grp_runs", group, group, g, sent);
}

int group_open_runs(http_req *req, const char *keys, group_runs *g, enum MHD_Result *sent)
{
    return open_with(req, "grp_runs_keys", keys, NULL, g, sent);
}

int group_run_index(const group_runs *g, int64_t key)
{
    for (int i = 0; i < g->n; i++)
        if (g->keys[i] == key)
            return i;
    return -1;
}

const char *group_run_id(const group_runs *g, int64_t key)
{
    int i = group_run_index(g, key);
    return i < 0 ? NULL : PQgetvalue(g->res, i, 1);
}

void group_keys(const group_runs *g, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "{");
    for (int i = 0; i < g->n && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%" PRId64, i ? "," : "", g->keys[i]);
    if (n < cap)
        snprintf(out + n, cap - n, "}");
}
