/* attest.c - POST /api/v1/attest: slurmstepd (or the admin) vouches for a job step's user, node list and which ranks
 * ran on which node.
 *
 * The SPANK plugin posts one attestation per node of each step, from slurmstepd (as root) with the job's
 * attestation token (common/crypto/token.h), which is derived from the site secret and never given to the
 * job. What it says decides two things a job must not: whose run it is (the owner of a twin group,
 * server/store/groups.h), and which hardware ran each rank (hardware evidence, server/fleet/suspects.c).
 */
#include "server/api/attest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/fleet/fleet_thread.h"
#include "server/http/auth.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/attest.h"
#include "server/store/db.h"

/* text_field - the string member `key` of `o`: 0 with *out set (NULL when absent and optional), or -1 after
 * replying 400 when it is not one line of text of 1..max bytes. */
static int text_field(http_req *req, const json_t *o, const char *key, size_t max, int required, const char **out)
{
    const json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v && !required)
        return 0;
    const char *s = json_string_value(v);
    size_t n = s ? json_string_length(v) : 0;
    if (!s || n == 0 || n > max || !text_line_valid(s, n)) {
        char detail[200];
        snprintf(detail, sizeof(detail), "\"%s\" must be one line of text of 1 to %zu bytes", key, max);
        http_reply_error(req, 400, "bad attestation", detail, "see docs/server.md, \"Attested identity\"");
        return -1;
    }
    *out = s;
    return 0;
}

static enum MHD_Result attest_post(http_req *req, char **args)
{
    (void)args;
    json_error_t jerr;
    json_t *o = req->len ? json_loadb(req->body, req->len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        return http_reply_error(req, 400, "malformed JSON", "the body is one JSON object",
                                "see docs/server.md, \"Attested identity\"");
    }
    enum MHD_Result res = MHD_YES;
    const char *job, *step, *node, *user, *nodes, *gpus;
    if (text_field(req, o, "job_id", JOB_ID_MAX, 1, &job) < 0 || http_auth_attest(req, job) < 0 ||
        text_field(req, o, "step_id", STEP_ID_MAX, 0, &step) < 0 || text_field(req, o, "node", 255, 1, &node) < 0 ||
        text_field(req, o, "user", USER_MAX, 1, &user) < 0 || text_field(req, o, "nodes", NODES_MAX, 0, &nodes) < 0 ||
        text_field(req, o, "gpus", 1024, 0, &gpus) < 0)
        goto out_decref;
    if (strchr(user, '/')) { /* a group's OWNER/NAME key needs owners without '/' */
        res = http_reply_error(req, 400, "bad attestation", "\"user\" holds a '/'; user names hold none",
                               "see docs/server.md, \"Attested identity\"");
        goto out_decref;
    }
    const json_t *ranks = json_object_get(o, "ranks"), *idx = json_object_get(o, "node_index");
    if (!json_is_array(ranks) || json_array_size(ranks) > ATTEST_MAX_RANKS ||
        (idx && (!json_is_integer(idx) || json_integer_value(idx) < 0 || json_integer_value(idx) > 1000000))) {
        res = http_reply_error(req, 400, "bad attestation",
                               "\"ranks\" must be an array of at most " ATTEST_MAX_RANKS_TEXT
                               " global ranks, \"node_index\" a non-negative integer",
                               "see docs/server.md, \"Attested identity\"");
        goto out_decref;
    }
    char list[ATTEST_MAX_RANKS * 8 + 3];
    size_t len = (size_t)snprintf(list, sizeof(list), "{");
    size_t i;
    json_t *v;
    json_array_foreach(ranks, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= RUN_MAX_RANKS) {
            res = http_reply_error(req, 400, "bad attestation", "every rank is an integer from 0 to 65535",
                                   "see docs/server.md, \"Limits\"");
            goto out_decref;
        }
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", i ? "," : "", (int)json_integer_value(v));
    }
    snprintf(list + len, sizeof(list) - len, "}");
    char index[24] = "";
    if (idx)
        snprintf(index, sizeof(index), "%d", (int)json_integer_value(idx));
    char err[512];
    if (!step)
        step = ""; /* a run registered without a step id */
    store_attestation a = {job,
                           step,
                           node,
                           idx ? index : NULL,
                           list,
                           user,
                           nodes ? nodes : "",
                           gpus ? gpus : "",
                           http_is_admin(req) ? "admin" : "slurmstepd"};
    if (store_attest_put(&a, err, sizeof(err)) < 0) {
        res = http_reply_db_down(req, err);
        goto out_decref;
    }
    /* Its twin groups are evaluated again with the facts now known. */
    PGresult *r = store_attested_groups(job, step, err, sizeof(err));
    for (int k = 0; r && k < PQntuples(r); k++)
        fleet_notify(PQgetvalue(r, k, 0));
    PQclear(r);
    log_info("job %s step %s attested on node %s (%zu ranks, user %s)", job, step, node, json_array_size(ranks), user);
    res = http_reply_json(req, 200,
                          json_pack("{s:s, s:s, s:s, s:i}", "job_id", job, "step_id", step, "node", node, "ranks",
                                    (int)json_array_size(ranks)));
out_decref:
    json_decref(o);
    return res;
}

/* check_token_present - with a site secret, no body is read from a request without any token. */
static int check_token_present(http_req *req, char **args)
{
    (void)args;
    return http_auth_present(req);
}

static const route ROUTES[] = {
    {"POST", "/api/v1/attest", MR_RUNS_CREATE, AUTH_SELF, attest_post, HTTP_BODY_DEFAULT, check_token_present},
};

void api_attest_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
