/* reply.c - lockstepd's HTTP answers: JSON bodies, errors as {"error", "detail", "hint"}, the headers every answer
 * carries. */
#include "server/http/reply.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/text.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"

/* The dashboard's policy: its own scripts, styles, images and API only, never inside another site's frame. */
#define CSP                                                                                                            \
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "                  \
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

void http_common_headers(struct MHD_Response *resp)
{
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Content-Security-Policy", CSP);
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
}

/* from_replica - whether this request's answer came from the read replica (route.h: reads). */
static int from_replica(const http_req *req)
{
    return req->reads_on && req->reads_on();
}

enum MHD_Result http_reply(http_req *req, int status, const char *ctype, char *body, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    if (ctype)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    http_common_headers(resp);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == 405 && req->allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, req->allow);
    if (from_replica(req)) { /* what a reader may miss of the primary's last commits */
        char lag[32] = "unknown";
        if (req->read_lag >= 0)
            snprintf(lag, sizeof(lag), "%.3f", req->read_lag);
        MHD_add_response_header(resp, "Lockstep-Read-From", "replica");
        MHD_add_response_header(resp, "Lockstep-Read-Lag", lag);
    }
    if (req->hold_reply) { /* built on a slow thread: the connection's own thread queues it (server.c) */
        if (req->held)
            MHD_destroy_response(req->held);
        req->held = resp;
        req->status = status;
        return MHD_YES;
    }
    enum MHD_Result r = MHD_queue_response(req->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    req->status = status;
    return r;
}

enum MHD_Result http_reply_json(http_req *req, int status, json_t *obj)
{
    if (from_replica(req) && json_is_object(obj) && status < 300) {
        json_object_set_new(obj, "read_from", json_string("replica"));
        json_object_set_new(obj, "read_lag_s", req->read_lag >= 0 ? json_real(req->read_lag) : json_null());
    }
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (!s) {
        /* Never text/plain: a reply that cannot be serialized is still a JSON error. */
        static const char what[] = "{\"error\":\"cannot serialize the reply\",\"detail\":\"the reply could not be "
                                   "built as JSON\",\"hint\":\"see the lockstepd log\"}\n";
        return http_reply(req, 500, "application/json", xstrdup(what), sizeof(what) - 1);
    }
    size_t n = strlen(s);
    char *body = xrealloc(s, n + 2); /* room for a trailing newline */
    body[n] = '\n';
    body[n + 1] = 0;
    return http_reply(req, status, "application/json", body, n + 1);
}

json_t *http_error_json(const char *error, const char *detail, const char *hint)
{
    /* The parts may quote what a client sent: only clean UTF-8 goes out (and Jansson takes nothing else). */
    char e[256], d[1024], h[512];
    return json_pack("{s:s, s:s, s:s}", "error", text_sanitize(error ? error : "", e, sizeof(e)), "detail",
                     text_sanitize(detail ? detail : "", d, sizeof(d)), "hint",
                     text_sanitize(hint ? hint : "", h, sizeof(h)));
}

#define INTERNAL_LOG_PERIOD_S 10 /* one log line per period for the details of failures answered 5xx */

json_t *http_internal_error_json(const char *error, const char *detail, const char *hint)
{
    static atomic_long last, suppressed;
    long now = (long)time(NULL), then = atomic_load(&last);
    if (now - then >= INTERNAL_LOG_PERIOD_S && atomic_compare_exchange_strong(&last, &then, now)) {
        long n = atomic_exchange(&suppressed, 0);
        log_warn("answered \"%s\" (5xx): %s%s", error ? error : "", detail ? detail : "",
                 n ? " (and more such answers since, not logged)" : "");
    } else {
        atomic_fetch_add(&suppressed, 1);
    }
    return http_error_json(error,
                           "lockstepd could not complete the request; the reason (the database's own "
                           "message) is in the lockstepd log, not in this answer",
                           hint);
}

enum MHD_Result http_reply_error(http_req *req, int status, const char *error, const char *detail, const char *hint)
{
    return http_reply_json(req, status, http_error_json(error, detail, hint));
}

enum MHD_Result http_reply_srv_error(http_req *req, int status, const srv_error *e)
{
    if (status >= 500)
        return http_reply_json(req, status, http_internal_error_json(e->error, e->detail, e->hint));
    return http_reply_error(req, status, e->error, e->detail, e->hint);
}

enum MHD_Result http_reply_db_down(http_req *req, const char *err)
{
    return http_reply_json(
        req, 503,
        http_internal_error_json("database error", err, "retry later; check PostgreSQL and the lockstepd log"));
}
