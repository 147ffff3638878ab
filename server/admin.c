/* admin.c - lockstepd's admin endpoints beside retention: minting job tokens. */
#include "server/admin.h"

#include <string.h>

#include "common/crypto/token.h"

enum MHD_Result admin_mint_token(http_req *req)
{
    if (!http_is_admin(req)) {
        int none = !http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
        return http_reply_error(req, none ? 401 : 403, none ? "authentication required" : "admin token required",
                                "minting job tokens is an admin action",
                                "send Authorization: Bearer <admin token> (lockstep token --token-file FILE)");
    }
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
