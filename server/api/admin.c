/* admin.c - lockstepd's admin endpoints: minting job tokens, retention now. */
#include "server/api/admin.h"

#include <stdio.h>
#include <string.h>

#include "common/crypto/token.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/retention.h"

/* admin_mint_token - POST /api/v1/admin/tokens {"job_id": "123"} -> 200 {"job_id", "token"}: the ingest token
 * of a job, for an admin who launches work outside the SPANK plugin (409 when ingest is open: no token is needed). */
static enum MHD_Result admin_mint_token(http_req *req, char **args)
{
    (void)args;
    if (!g_srv.secret)
        return http_reply_error(req, 409, "ingest is open", "lockstepd runs without --secret, so no token is needed",
                                "start lockstepd with --secret FILE to require job tokens");
    json_t *o = req->len ? json_loadb(req->body, req->len, 0, NULL) : NULL;
    const char *job = json_string_value(json_object_get(o, "job_id"));
    size_t n = job ? strlen(job) : 0;
    int digits = n > 0 && n <= 32;
    for (size_t i = 0; digits && i < n; i++)
        digits = job[i] >= '0' && job[i] <= '9';
    if (!digits) {
        json_decref(o);
        return http_reply_error(req, 400, "bad request", "the body is {\"job_id\": \"<decimal Slurm job id>\"}",
                                "e.g. {\"job_id\": \"4242\"}");
    }
    char tok[TOKEN_HEX_LEN + 1];
    if (token_compute(g_srv.secret, g_srv.secret_len, job, tok) < 0) {
        json_decref(o);
        return http_reply_error(req, 500, "cannot compute the token", "OpenSSL's HMAC failed", "see the server log");
    }
    json_t *reply = json_pack("{s:s, s:s}", "job_id", job, "token", tok);
    json_decref(o);
    return http_reply_json(req, 200, reply);
}

/* admin_retention - POST /api/v1/admin/retention: drop record partitions older than retain_days now. */
static enum MHD_Result admin_retention(http_req *req, char **args)
{
    (void)args;
    int keep = g_srv.cfg.retain_days;
    if (req->len) {
        json_t *o = json_loadb(req->body, req->len, 0, NULL);
        json_t *d = o ? json_object_get(o, "retain_days") : NULL;
        if (!o || (d && (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > 100000))) {
            json_decref(o);
            return http_reply_error(req, 400, "bad request", "the body is {\"retain_days\": N} with N >= 0",
                                    "omit the body to use retain_days from lockstepd.conf");
        }
        if (d)
            keep = (int)json_integer_value(d);
        json_decref(o);
    }
    if (keep <= 0)
        return http_reply_error(req, 400, "no retention configured", "retain_days is 0 (keep everything)",
                                "set retain_days in lockstepd.conf or send {\"retain_days\": N}");
    char err[512];
    int dropped = retention_drop_old(keep, err, sizeof(err));
    if (dropped < 0)
        return http_reply_db_down(req, err);
    return http_reply_json(req, 200, json_pack("{s:i, s:i}", "retain_days", keep, "dropped_partitions", dropped));
}

static const route ROUTES[] = {
    {"POST", "/api/v1/admin/tokens", MR_ADMIN, AUTH_ADMIN, admin_mint_token},
    {"POST", "/api/v1/admin/retention", MR_ADMIN, AUTH_ADMIN, admin_retention},
};

void api_admin_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
