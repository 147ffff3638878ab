/* consensus.c - GET /api/v1/runs/{id}/consensus: the run checked against itself, with no twin. */
#include "server/api/consensus.h"

#include "server/api/list.h"
#include "server/api/run_ref.h"
#include "server/consensus/cons_read.h"
#include "server/core/metrics.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/runs.h"

static enum MHD_Result read_run_consensus(http_req *req, char **args)
{
    run_info run;
    if (api_run_find(req, args[0], &run, "list runs with GET /api/v1/runs") < 0)
        return MHD_YES;
    char err[512];
    json_t *o = cons_read_json(run.key, err, sizeof(err));
    if (!o)
        return http_reply_db_down(req, err);
    json_object_set_new(o, "run_id", json_string(run.run_id));
    return http_reply_json(req, 200, o);
}

/* read_consensus_list - GET /api/v1/consensus?limit=50: the runs whose consensus disagreed, newest first. */
static enum MHD_Result read_consensus_list(http_req *req, char **args)
{
    (void)args;
    long long limit;
    if (api_int_arg(req, "limit", 1, 1000, 50, &limit) < 0)
        return MHD_YES;
    char err[512];
    json_t *o = cons_read_list((int)limit, err, sizeof(err));
    if (!o)
        return http_reply_db_down(req, err);
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/runs/{}/consensus", MR_READ, AUTH_READ, read_run_consensus, .reads = 1},
    {"GET", "/api/v1/consensus", MR_READ, AUTH_READ, read_consensus_list, .reads = 1},
};

void api_consensus_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
