/* reply.c - lockstepd's HTTP answers: JSON bodies, and errors as {"error", "detail", "hint"}. */
#include "server/http/reply.h"

#include <string.h>

#include "server/core/xalloc.h"

enum MHD_Result http_reply(http_req *req, int status, const char *ctype, char *body, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    if (ctype)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == 405 && req->allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, req->allow);
    enum MHD_Result r = MHD_queue_response(req->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    req->status = status;
    return r;
}

enum MHD_Result http_reply_json(http_req *req, int status, json_t *obj)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (!s) {
        static const char what[] = "cannot serialize the reply\n";
        return http_reply(req, 500, "text/plain", xstrdup(what), sizeof(what) - 1);
    }
    size_t n = strlen(s);
    char *body = xrealloc(s, n + 2); /* room for a trailing newline */
    body[n] = '\n';
    body[n + 1] = 0;
    return http_reply(req, status, "application/json", body, n + 1);
}

json_t *http_error_json(const char *error, const char *detail, const char *hint)
{
    return json_pack("{s:s, s:s, s:s}", "error", error ? error : "", "detail", detail ? detail : "", "hint",
                     hint ? hint : "");
}

enum MHD_Result http_reply_error(http_req *req, int status, const char *error, const char *detail,
                                 const char *hint)
{
    return http_reply_json(req, status, http_error_json(error, detail, hint));
}

enum MHD_Result http_reply_srv_error(http_req *req, int status, const srv_error *e)
{
    return http_reply_error(req, status, e->error, e->detail, e->hint);
}

enum MHD_Result http_reply_db_down(http_req *req, const char *err)
{
    return http_reply_error(req, 503, "database error", err, "retry later; check PostgreSQL and the lockstepd log");
}
