/* narrows.c - the replay endpoints: start a narrow of a twin group, report its jobs, read it; and the checkpoints a run
 * declares (docs/server.md, "Narrows"). */
#include "server/api/narrows.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"
#include "server/api/group.h"
#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/api/run_ref.h"
#include "server/core/metrics.h"
#include "server/replay/narrow.h"
#include "server/replay/narrow_read.h"
#include "server/http/auth.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/db.h"
#include "server/store/runs.h"

static const char *const NARROW_HINT = "see docs/server.md, Narrows";

/* body_object - the request body as a JSON object, or NULL after replying 400. */
static json_t *body_object(http_req *req)
{
    json_error_t jerr;
    json_t *o = req->len ? json_loadb(req->body, req->len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (!json_is_object(o)) {
        char detail[300];
        if (!req->len)
            snprintf(detail, sizeof(detail), "this endpoint takes a JSON object");
        else if (!o)
            snprintf(detail, sizeof(detail), "line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
        else
            snprintf(detail, sizeof(detail), "the body is not a JSON object");
        json_decref(o);
        http_reply_error(req, 400, req->len ? "malformed JSON" : "empty body", detail, NARROW_HINT);
        return NULL;
    }
    return o;
}

/* narrow_id_arg - a narrow id from the path, or -1 after replying 404. */
static long long narrow_id_arg(http_req *req, const char *arg)
{
    char *end;
    long long id = strtoll(arg, &end, 10);
    if (*end || id <= 0) {
        http_reply_error(req, 404, "unknown narrow", "narrow ids are positive integers", NARROW_HINT);
        return -1;
    }
    return id;
}

/* start_narrow - POST /api/v1/twins/{group}/narrows (admin): design and store a replay experiment; 201 with the
 * narrow, whose placements the client submits to Slurm. */
static enum MHD_Result start_narrow(http_req *req, char **args)
{
    group_viewer admin = {"", 0};
    char group[GROUP_NAME_MAX + 1];
    if (!group_resolve(req, args[0], &admin, group, sizeof(group)))
        return MHD_YES;
    json_t *o = body_object(req);
    if (!o)
        return MHD_YES;
    int status = 500;
    srv_error e;
    long long id = narrow_create(group, o, &status, &e);
    json_decref(o);
    if (id < 0)
        return http_reply_srv_error(req, status, &e);
    json_t *doc = narrow_json(id, &status, &e);
    if (!doc)
        return http_reply_srv_error(req, status, &e);
    return http_reply_json(req, 201, json_pack("{s:o}", "narrow", doc));
}

/* set_jobs - POST /api/v1/narrows/{id}/jobs (admin): the Slurm job of each placement, or why it was not submitted. */
static enum MHD_Result set_jobs(http_req *req, char **args)
{
    long long id = narrow_id_arg(req, args[0]);
    if (id < 0)
        return MHD_YES;
    json_t *o = body_object(req);
    if (!o)
        return MHD_YES;
    int status = 500;
    srv_error e;
    int rc = narrow_set_jobs(id, o, &status, &e);
    json_decref(o);
    if (rc < 0)
        return http_reply_srv_error(req, status, &e);
    json_t *doc = narrow_json(id, &status, &e);
    if (!doc)
        return http_reply_srv_error(req, status, &e);
    return http_reply_json(req, 200, json_pack("{s:o}", "narrow", doc));
}

/* read_narrow - GET /api/v1/narrows/{id}: the experiment, its placements and outcomes, its verdict. */
static enum MHD_Result read_narrow(http_req *req, char **args)
{
    group_viewer user; /* a job's token reads the narrows of its user's groups */
    if (group_reader(req, &user) < 0)
        return MHD_YES;
    long long id = narrow_id_arg(req, args[0]);
    if (id < 0)
        return MHD_YES;
    int status = 500;
    srv_error e;
    json_t *doc = narrow_json(id, &status, &e);
    if (!doc)
        return http_reply_srv_error(req, status, &e);
    const char *group = json_string_value(json_object_get(doc, "group"));
    if (group && !group_readable(req, group, &user)) {
        json_decref(doc);
        return MHD_YES;
    }
    return http_reply_json(req, 200, json_pack("{s:o}", "narrow", doc));
}

/* list_narrows - GET /api/v1/twins/{group}/narrows: the group's narrows, newest first (?cursor= an id). */
static enum MHD_Result list_narrows(http_req *req, char **args)
{
    long long limit, cursor;
    char group[GROUP_NAME_MAX + 1];
    if (!group_find(req, args[0], group, sizeof(group)) || api_page(req, 50, 500, "before", 0, &limit, &cursor) < 0)
        return MHD_YES;
    srv_error e;
    json_t *items = narrow_list(group, limit, cursor, &e);
    if (!items)
        return http_reply_srv_error(req, 503, &e);
    long long next = -1;
    if ((long long)json_array_size(items) == limit)
        next = json_integer_value(json_object_get(json_array_get(items, json_array_size(items) - 1), "id"));
    json_t *doc = api_list(items, -1, limit, next);
    json_object_set_new(doc, "group", json_string(group));
    return http_reply_json(req, 200, doc);
}

/* declare_checkpoint - POST /api/v1/runs/{id}/checkpoints (the job's token): {"step": N, "path": "...", "rank": R}:
 * the run wrote the state after step N there; a replay of a later step may start from it. */
static enum MHD_Result declare_checkpoint(http_req *req, char **args)
{
    run_info run;
    if (api_run_find(req, args[0], &run, "register the run first with POST /api/v1/runs") < 0 ||
        http_auth_job(req, run.job_id) < 0)
        return MHD_YES;
    json_t *o = body_object(req);
    if (!o)
        return MHD_YES;
    json_t *step = json_object_get(o, "step"), *path = json_object_get(o, "path"), *rank = json_object_get(o, "rank");
    enum MHD_Result res;
    if (!json_is_integer(step) || json_integer_value(step) < 0 ||
        (path && !json_is_null(path) && !json_is_string(path)) ||
        (rank && (!json_is_integer(rank) || json_integer_value(rank) < 0 || json_integer_value(rank) >= run.ranks))) {
        res =
            http_reply_error(req, 400, "bad checkpoint",
                             "\"step\" must be an integer >= 0 (the last step the checkpoint holds), \"path\" a string "
                             "(its path), \"rank\" one of the run's ranks",
                             NARROW_HINT);
        goto out_decref;
    }
    char why[200]; /* (the body's JSON holds no NUL: json_loadb refuses \u0000) */
    if (json_is_string(path) && wire_ckpt_path_check(json_string_value(path), why, sizeof(why)) < 0) {
        res = http_reply_error(req, 400, "bad checkpoint path", why,
                               "a checkpoint's path is one line of UTF-8 text naming a file or directory; a replay "
                               "puts it in the run's resume template as one word (docs/server.md, Narrows)");
        goto out_decref;
    }
    srv_error e;
    if (store_checkpoint(&run, json_integer_value(step), json_string_value(path),
                         rank ? (int)json_integer_value(rank) : 0, &e) < 0) {
        res = http_reply_srv_error(req, 503, &e);
        goto out_decref;
    }
    res = http_reply_json(req, 200, json_pack("{s:s, s:I}", "run_id", run.run_id, "step", json_integer_value(step)));
out_decref:
    json_decref(o);
    return res;
}

/* read_checkpoints - GET /api/v1/runs/{id}/checkpoints: what the run declared, newest step first. */
static enum MHD_Result read_checkpoints(http_req *req, char **args)
{
    run_info run;
    group_viewer user;
    if (group_reader(req, &user) < 0 || api_run_find(req, args[0], &run, "list runs with GET /api/v1/runs") < 0)
        return MHD_YES;
    const char *ids[] = {run.run_id};
    if (!group_runs_readable(req, &user, ids, 1))
        return MHD_YES;
    long long limit, cursor;
    if (api_page(req, 100, 10000, NULL, 0, &limit, &cursor) < 0)
        return MHD_YES;
    char err[512];
    PGresult *r = store_checkpoints_read(run.key, limit, cursor, err, sizeof(err));
    if (!r)
        return http_reply_db_down(req, err);
    json_t *items = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(
            items, json_pack("{s:I, s:s, s:i, s:o}", "step", (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10), "path",
                             PQgetvalue(r, i, 1), "rank", atoi(PQgetvalue(r, i, 2)), "declared_at", pg_str(r, i, 3)));
    long long total = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 4), NULL, 10) : 0;
    PQclear(r);
    long long next =
        cursor + (long long)json_array_size(items) < total ? cursor + (long long)json_array_size(items) : -1;
    json_t *doc = api_list(items, total, limit, next);
    json_object_set_new(doc, "run_id", json_string(run.run_id));
    return http_reply_json(req, 200, doc);
}

static const route ROUTES[] = {
    {"POST", "/api/v1/twins/{}/narrows", MR_ADMIN, AUTH_ADMIN, start_narrow},
    {"GET", "/api/v1/twins/{}/narrows", MR_READ, AUTH_SELF, list_narrows, .reads = 1},
    {"GET", "/api/v1/narrows/{}", MR_READ, AUTH_SELF, read_narrow, .reads = 1},
    {"POST", "/api/v1/narrows/{}/jobs", MR_ADMIN, AUTH_ADMIN, set_jobs},
    {"POST", "/api/v1/runs/{}/checkpoints", MR_OTHER, AUTH_SELF, declare_checkpoint},
    {"GET", "/api/v1/runs/{}/checkpoints", MR_READ, AUTH_SELF, read_checkpoints, .reads = 1},
};

void api_narrows_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
