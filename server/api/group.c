/* group.c - what every twin group read starts with: the group's runs, loaded once per request, and lookups into them. */
#include "server/api/group.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server/api/pgjson.h"
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
    db_register("grp_runs", "SELECT run_key, run_id, job_id, user_name, nodes, status, start_step, ranks, mode, "
                            TS("created_at") ", " TS("ended_at") " FROM runs WHERE twin_group = $1 ORDER BY run_key");
    db_register("grp_runs_keys", "SELECT run_key, run_id, job_id, user_name, nodes, status, start_step, ranks, mode, "
                                 TS("created_at") ", " TS("ended_at") " FROM runs WHERE run_key = ANY($1::bigint[]) "
                                 "ORDER BY array_position($1::bigint[], run_key)");
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
