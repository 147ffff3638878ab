/* group.c - what every twin group read starts with: the group's runs, loaded once per request, and lookups into them. */
#include "server/api/group.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/api/pgjson.h"
#include "server/http/reply.h"
#include "server/store/db.h"

void group_register(void)
{
    /* The first GROUP_MAX_RUNS runs (a group holds no more since registration refuses the next one; older
     * data may), and how many there are. */
    db_register("grp_runs", "SELECT run_key, run_id, job_id, user_name, nodes, status, start_step, ranks, mode, "
                            TS("created_at") ", " TS("ended_at") ", count(*) OVER (), attested_user FROM runs WHERE twin_group = $1 "
                            "ORDER BY run_key LIMIT " GROUP_MAX_RUNS_TEXT);
}

static enum MHD_Result unknown_group(http_req *req, const char *group)
{
    char detail[320];
    snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", group);
    return http_reply_error(req, 404, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
}

int group_open(http_req *req, const char *group, group_runs *g, enum MHD_Result *sent)
{
    char err[512];
    const char *p[] = {group};
    g->res = db_exec("grp_runs", 1, p, err, sizeof(err));
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
        *sent = unknown_group(req, group);
        return 0;
    }
    return 1;
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
