/* auth.h - who may do what: the admin token, a job's token (HMAC of its job id), read access. */
#ifndef SERVER_HTTP_AUTH_H
#define SERVER_HTTP_AUTH_H

#include "server/http/request.h"

/* http_is_admin - 1 when the request carries the configured admin token. */
int http_is_admin(http_req *req);

/* http_auth_admin - check that the request carries the admin token. Returns
 * 0 when it does; else replies 401 (no token) or 403 (another token) and
 * returns -1. */
int http_auth_admin(http_req *req);

/* http_auth_job - check that the request may write for `job_id`: the job's
 * token, its attestation token, the admin token, or no secret configured. Returns 0 when
 * allowed; else replies 401 (no token) or 403 (a wrong one) and returns -1. */
int http_auth_job(http_req *req, const char *job_id);

/* http_auth_present - with a site secret configured, check that the request
 * carries some bearer token (which job it must be for is not known yet).
 * Returns 0, else replies 401 and returns -1. */
int http_auth_present(http_req *req);

/* http_token_is_job - 1 when the request's bearer token is the token of
 * `job_id` (never with no secret configured); else 0. Replies nothing. */
int http_token_is_job(http_req *req, const char *job_id);

/* http_token_is_attest - 1 when the bearer token is the attestation token of
 * `job_id` (common/crypto/token.h: token_compute_attest); never without a
 * secret. */
int http_token_is_attest(http_req *req, const char *job_id);

/* http_attests - 1 when the request may vouch for `job_id`'s facts (its
 * user, nodes, rank placement): the admin token or the job's attestation
 * token. */
int http_attests(http_req *req, const char *job_id);

/* http_auth_attest - as http_attests; else replies 401 (no token) or 403 and
 * returns -1. */
int http_auth_attest(http_req *req, const char *job_id);

/* http_auth_read - check read access (open, or the admin token when
 * read_access = admin). Returns 0, else replies 401/403 and returns -1. */
int http_auth_read(http_req *req);

#endif /* SERVER_HTTP_AUTH_H */
