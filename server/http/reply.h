/* reply.h - lockstepd's HTTP answers: JSON bodies, and errors as {"error", "detail", "hint"}. */
#ifndef SERVER_HTTP_REPLY_H
#define SERVER_HTTP_REPLY_H

#include <stddef.h>
#include <jansson.h>
#include <microhttpd.h>

#include "server/core/error.h"
#include "server/http/request.h"

/* http_common_headers - add what every answer carries (nosniff, the
 * dashboard's Content-Security-Policy with frame-ancestors 'none',
 * X-Frame-Options, Referrer-Policy). */
void http_common_headers(struct MHD_Response *resp);

/* http_reply - send `status` with `body` (malloc'd, taken over; may be NULL
 * with len 0) of `ctype`. Returns MHD's result. */
enum MHD_Result http_reply(http_req *req, int status, const char *ctype, char *body, size_t len);

/* http_reply_json - send `status` with `obj` serialized (the reference is
 * stolen). */
enum MHD_Result http_reply_json(http_req *req, int status, json_t *obj);

/* http_error_json - a new {"error", "detail", "hint"} object. */
json_t *http_error_json(const char *error, const char *detail, const char *hint);

/* http_internal_error_json - the error object of a failure inside lockstepd (a 5xx: the database failed or is
 * away): `detail`, which may quote PostgreSQL's message and the SQL it ran, goes to the log (one line per 10 s,
 * the rest counted), never to the client, whose detail says where to look. A new object. */
json_t *http_internal_error_json(const char *error, const char *detail, const char *hint);

/* http_reply_error - send `status` with {"error", "detail", "hint"}. */
enum MHD_Result http_reply_error(http_req *req, int status, const char *error, const char *detail, const char *hint);

/* http_reply_srv_error - the same from a filled srv_error; a 5xx as http_internal_error_json (its detail only
 * logged). */
enum MHD_Result http_reply_srv_error(http_req *req, int status, const srv_error *e);

/* http_reply_db_down - 503 for a database call that failed with `err` (logged, not sent). */
enum MHD_Result http_reply_db_down(http_req *req, const char *err);

#endif /* SERVER_HTTP_REPLY_H */
