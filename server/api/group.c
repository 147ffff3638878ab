/* group.c - what every twin group read starts with: the group's runs, loaded once per request, and lookups into them.
 */
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
#include "server/store/group_read.h"

char *group_names_json(const char *const *names, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(names[i]));
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

int group_job_viewer(http_req *req, const char *job, group_viewer *v)
{
    memset(v, 0, sizeof(*v));
    char err[512];
    PGresult *r = group_read_job_user(job, err, sizeof(err));
    if (!r) {
        http_reply_db_down(req, err);
        return -1;
    }
    int att = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) && *PQgetvalue(r, 0, 0);
    int col = att ? 0 : 1;
    int known = PQntuples(r) == 1 && !PQgetisnull(r, 0, col) && *PQgetvalue(r, 0, col);
    if (known) {
        snprintf(v->user, sizeof(v->user), "%s", PQgetvalue(r, 0, col));
        v->attested = att;
    }
    PQclear(r);
    return known;
}

int group_reader(http_req *req, group_viewer *v)
{
    memset(v, 0, sizeof(*v));
    if (g_srv.cfg.read_open || http_is_admin(req))
        return 1;
    const char *job = http_query(req, "job");
    if (!job || !*job || !http_token_is_job(req, job))
        return http_auth_read(req) < 0 ? -1 : 1;
    int known = group_job_viewer(req, job, v);
    if (known < 0)
        return -1;
    if (!known) {
        http_reply_error(req, 403, "no user for this job",
                         "the job of ?job= has no run (nor attestation) that says whose it is",
                         "read with the admin token, or from a job that registered a run");
        return -1;
    }
    return 0;
}

int group_resolve(http_req *req, const char *name, const group_viewer *v, char *key, size_t cap)
{
    char err[512];
    PGresult *r = group_read_resolve(name, v->user, v->attested, err, sizeof(err));
    if (!r) {
        http_reply_db_down(req, err);
        return 0;
    }
    int n = PQntuples(r);
    snprintf(key, cap, "%s", n == 1 ? PQgetvalue(r, 0, 0) : name);
    if (n > 1) {
        char detail[1200];
        size_t len = (size_t)snprintf(detail, sizeof(detail), "%d twin groups are named \"%.255s\":", n, name);
        for (int i = 0; i < n && len < sizeof(detail); i++)
            len += (size_t)snprintf(detail + len, sizeof(detail) - len, "%s %.255s (%.64s%s)", i ? "," : "",
                                    PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
                                    PQgetvalue(r, i, 2)[0] == 't' ? ", attested" : "");
        http_reply_error(req, 409, "ambiguous twin group name", detail,
                         "name one of them by its key, or as OWNER/NAME (docs/server.md, \"Twin groups and owners\")");
    }
    PQclear(r);
    return n <= 1;
}

int group_readable(http_req *req, const char *key, const group_viewer *v)
{
    if (!*v->user)
        return 1;
    char err[512];
    PGresult *r = group_read_visible(key, v->user, v->attested, err, sizeof(err));
    if (!r) {
        http_reply_db_down(req, err);
        return 0;
    }
    int ok = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!ok)
        http_reply_error(req, 403, "twin group of another user",
                         v->attested ? "a job's token reads the twin groups its user owns or was shared with"
                                     : "a job's token reads the twin groups its user owns or was shared with; this "
                                       "job's user is not attested, so it reads only groups whose owner is not "
                                       "attested either",
                         "see docs/server.md, \"Twin groups and owners\"");
    return ok;
}

int group_runs_readable(http_req *req, const group_viewer *v, const char *const *run_ids, int n)
{
    if (!*v->user || n <= 0)
        return 1;
    size_t cap = (size_t)n * 40 + 3, len = 0;
    char *arr = xmalloc(cap), err[512];
    arr[len++] = '{';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(arr + len, cap - len, "%s%.36s", i ? "," : "", run_ids[i]);
    snprintf(arr + len, cap - len, "}");
    PGresult *r = group_read_hidden_runs(arr, v->user, v->attested, err, sizeof(err));
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

int group_find(http_req *req, const char *name, char *key, size_t cap)
{
    group_viewer v;
    return group_reader(req, &v) >= 0 && group_resolve(req, name, &v, key, cap) && group_readable(req, key, &v);
}

int group_open_for(http_req *req, const char *name, group_runs *g, enum MHD_Result *sent)
{
    if (!group_find(req, name, g->key, sizeof(g->key))) {
        *sent = MHD_YES;
        return 0;
    }
    return group_open(req, g->key, g, sent);
}

static enum MHD_Result unknown_group(http_req *req, const char *group)
{
    char detail[320];
    snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", group);
    return http_reply_error(req, 404, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
}

/* open_with - group_open's body: `g` from the runs read (g->res; NULL when the read failed, with `err`). */
static int open_with(http_req *req, const char *err, const char *group, group_runs *g, enum MHD_Result *sent)
{
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
    char err[512];
    g->res = group_read_runs(group, err, sizeof(err));
    return open_with(req, err, group, g, sent);
}

int group_open_runs(http_req *req, const char *keys, group_runs *g, enum MHD_Result *sent)
{
    char err[512];
    g->res = group_read_runs_keys(keys, err, sizeof(err));
    return open_with(req, err, NULL, g, sent);
}

int group_run_index(const group_runs *g, int64_t key)
{
    for (int i = 0; i < g->n; i++)
        if (g->keys[i] == key)
            return i;
    return -1;
}

void group_keys(const group_runs *g, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "{");
    for (int i = 0; i < g->n && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%" PRId64, i ? "," : "", g->keys[i]);
    if (n < cap)
        snprintf(out + n, cap - n, "}");
}
