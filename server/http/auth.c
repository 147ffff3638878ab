/* auth.c - who may do what: the admin token, a job's token (HMAC of its job id), read access. */
#include "server/http/auth.h"

#include <stdio.h>
#include <string.h>

#include "common/crypto/token.h"
#include "server/core/state.h"
#include "server/http/reply.h"

/* bearer - the token of "Authorization: Bearer TOKEN", or NULL. */
static const char *bearer(http_req *req)
{
    const char *h = http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    return *h ? h : NULL;
}

int http_is_admin(http_req *req)
{
    const char *t = bearer(req);
    return t && g_srv.admin_token[0] && token_equal(t, g_srv.admin_token);
}

int http_auth_admin(http_req *req)
{
    if (http_is_admin(req))
        return 0;
    int none = !bearer(req);
    http_reply_error(req, none ? 401 : 403, none ? "authentication required" : "admin token required",
                     "this is an admin endpoint",
                     "send Authorization: Bearer <admin token> (the file of lockstepd's --admin-token)");
    return -1;
}

int http_auth_job(http_req *req, const char *job_id)
{
    if (!g_srv.secret)
        return 0;
    const char *t = bearer(req);
    if (!t) {
        http_reply_error(req, 401, "authentication required", "this endpoint needs the job's token",
                         "send Authorization: Bearer <token>; the SPANK plugin sets LOCKSTEP_TOKEN");
        return -1;
    }
    if (http_is_admin(req) || http_token_is_attest(req, job_id))
        return 0;
    char want[TOKEN_HEX_LEN + 1];
    if (token_compute(g_srv.secret, g_srv.secret_len, job_id, want) < 0) {
        http_reply_error(req, 500, "cannot compute token", "OpenSSL HMAC failed", "see the server log");
        return -1;
    }
    if (!token_equal(t, want)) {
        char detail[300];
        snprintf(detail, sizeof(detail), "the token is not the one for job %.200s", job_id);
        http_reply_error(req, 403, "token does not match the job", detail,
                         "use the token minted for this job (HMAC-SHA256 of the job id under the site secret)");
        return -1;
    }
    return 0;
}

int http_auth_present(http_req *req)
{
    if (!g_srv.secret || bearer(req))
        return 0;
    http_reply_error(req, 401, "authentication required", "this endpoint needs a job's token",
                     "send Authorization: Bearer <token>; the SPANK plugin sets LOCKSTEP_TOKEN");
    return -1;
}

int http_token_is_job(http_req *req, const char *job_id)
{
    const char *t = bearer(req);
    char want[TOKEN_HEX_LEN + 1];
    if (!t || !g_srv.secret || token_compute(g_srv.secret, g_srv.secret_len, job_id, want) < 0)
        return 0;
    return token_equal(t, want);
}

int http_token_is_attest(http_req *req, const char *job_id)
{
    const char *t = bearer(req);
    char want[TOKEN_HEX_LEN + 1];
    if (!t || !g_srv.secret || token_compute_attest(g_srv.secret, g_srv.secret_len, job_id, want) < 0)
        return 0;
    int ok = token_equal(t, want);
    explicit_bzero(want, sizeof(want));
    return ok;
}

int http_attests(http_req *req, const char *job_id)
{
    return http_is_admin(req) || http_token_is_attest(req, job_id);
}

int http_auth_attest(http_req *req, const char *job_id)
{
    if (http_attests(req, job_id))
        return 0;
    int none = !bearer(req);
    http_reply_error(req, none ? 401 : 403, none ? "authentication required" : "attestation credential required",
                     "only slurmstepd (the SPANK plugin, with the site secret) or the admin may attest a job step",
                     "a job's own token cannot attest; see docs/server.md, \"Attested identity\"");
    return -1;
}

int http_auth_read(http_req *req)
{
    if (g_srv.cfg.read_open || http_is_admin(req))
        return 0;
    if (!bearer(req))
        http_reply_error(req, 401, "authentication required", "read_access = admin: reads need the admin token",
                         "send Authorization: Bearer <admin token>");
    else
        http_reply_error(req, 403, "admin token required", "read_access = admin: reads need the admin token",
                         "send the admin token, not a job token");
    return -1;
}
