/* run_ref.c - the run a URL names (/api/v1/runs/{id}/...): found through the store's cache, or a 404 that says so. */
#include "server/api/run_ref.h"

#include <stdio.h>

#include "server/http/reply.h"

enum MHD_Result api_run_reply_unknown(http_req *req, const char *run_id, const char *hint)
{
    char detail[160];
    snprintf(detail, sizeof(detail), "no run has the id \"%.64s\"", run_id);
    return http_reply_error(req, 404, "unknown run", detail, hint);
}

int api_run_find(http_req *req, const char *run_id, run_info *run, const char *hint)
{
    srv_error e;
    int got = store_run_lookup(run_id, run, &e);
    if (got < 0)
        http_reply_srv_error(req, 503, &e);
    else if (got == 0)
        api_run_reply_unknown(req, run_id, hint);
    return got == 1 ? 0 : -1;
}
