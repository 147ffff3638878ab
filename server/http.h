/* http.h - lockstepd's HTTP layer on libmicrohttpd: daemon, request bodies, JSON replies, errors, auth. */
#ifndef SERVER_HTTP_H
#define SERVER_HTTP_H

#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/batch.h"
#include "server/config.h"

/* What every request handler may read; set up once by main. */
typedef struct srv_state {
    srv_config cfg;
    unsigned char *secret; /* NULL: ingest is open */
    size_t secret_len;
    char admin_token[256]; /* "": no admin token configured */
    char web_dir[4096];    /* "": no dashboard */
} srv_state;

extern srv_state g_srv;

/* One request while it is being received and handled. */
typedef struct http_req {
    struct MHD_Connection *conn;
    const char *method;
    const char *url;
    char *body;
    size_t len, cap;
    int too_large;
    int busy;   /* the server-wide body budget was exhausted */
    int route;  /* metrics route (enum metric_route) */
    int status; /* the status replied */
    double t0;  /* monotonic seconds at arrival */
    int reply_status; /* set by a database worker before it resumes the connection */
    json_t *reply;
} http_req;

/* http_start - bind and start the daemon with the settings in g_srv.cfg
 * (thread pool, limits, TLS). Returns 0, or -1 after logging. The bound port
 * goes to `*port`. */
int http_start(int *port);

/* http_stop - stop accepting, let in-flight requests finish (up to
 * `grace_s` seconds), then stop the daemon. */
void http_stop(int grace_s);

/* http_reply - send `status` with `body` (malloc'd, taken over; may be NULL
 * with len 0) of `ctype`. Returns MHD's result. */
enum MHD_Result http_reply(http_req *req, int status, const char *ctype, char *body, size_t len);

/* http_reply_json - send `status` with `obj` serialized (the reference is
 * stolen). */
enum MHD_Result http_reply_json(http_req *req, int status, json_t *obj);

/* http_error_json - a new {"error", "detail", "hint"} object. */
json_t *http_error_json(const char *error, const char *detail, const char *hint);

/* http_reply_error - send `status` with {"error", "detail", "hint"}. */
enum MHD_Result http_reply_error(http_req *req, int status, const char *error, const char *detail,
                                 const char *hint);

/* http_reply_srv_error - the same from a filled srv_error. */
enum MHD_Result http_reply_srv_error(http_req *req, int status, const srv_error *e);

/* http_query - the query argument `key`, or NULL. Borrowed from MHD. */
const char *http_query(http_req *req, const char *key);

/* http_header - the request header `key`, or NULL. */
const char *http_header(http_req *req, const char *key);

/* http_is_admin - 1 when the request carries the configured admin token. */
int http_is_admin(http_req *req);

/* http_auth_job - check that the request may write for `job_id`: the job's
 * token, or the admin token, or no secret configured. Returns 0 when
 * allowed; else replies 401 (no token) or 403 (a wrong one) and returns -1. */
int http_auth_job(http_req *req, const char *job_id);

/* http_token_is_job - 1 when the request's bearer token is the token of
 * `job_id` (never with no secret configured); else 0. Replies nothing. */
int http_token_is_job(http_req *req, const char *job_id);

/* http_auth_read - check read access (open, or the admin token when
 * read_access = admin). Returns 0, else replies 401/403 and returns -1. */
int http_auth_read(http_req *req);

/* route_dispatch - handle a fully received request (route.c). */
enum MHD_Result route_dispatch(http_req *req);

#endif /* SERVER_HTTP_H */
