/* http.h - a small HTTP client for the agent and `lockstep replay`: libcurl, loaded with dlopen on first use. */
#ifndef AGENT_HTTP_H
#define AGENT_HTTP_H

#include <stddef.h>
#include <stdint.h>

typedef struct http_client http_client;

/* http_global_init - load libcurl and run curl_global_init, once per process
 * (later calls return the first result). Call it from a thread that is not
 * racing exit(): the TLS library it initializes registers its own exit
 * handler. Returns 0, or -1 with a reason in `why`. */
int http_global_init(char *why, size_t cap);

/* http_open - a client for `base_url` (http://host:port or https://...,
 * without a trailing path; or several, separated by commas: common/servers.h,
 * each request goes to the current one, and the next request to the next one
 * after a request that got no answer or 502-504). `token` (may be NULL or "") is sent as
 * "Authorization: Bearer TOKEN"; `ca_file` (may be NULL) verifies an https
 * server. libcurl is loaded with dlopen, so a process that never streams
 * never loads it. Returns a client (one connection, kept alive between
 * requests; use it from one thread at a time) or NULL with a reason in
 * `why`. */
http_client *http_open(const char *base_url, const char *token, const char *ca_file, char *why, size_t cap);

/* http_set_abort - make every request give up once CLOCK_MONOTONIC passes
 * *abort_at_ns (read atomically; 0 means never). The pointer is borrowed. */
void http_set_abort(http_client *c, const int64_t *abort_at_ns);

/* http_request - send METHOD base_url+path with `body` (len bytes, may be
 * NULL) of type `ctype`, waiting at most timeout_ms. Returns the HTTP status,
 * with up to resp_cap-1 bytes of the response body NUL-terminated in `resp`
 * (may be NULL); or -1 when no response came (refused, timed out, aborted),
 * with a reason in `why`. */
long http_request(http_client *c, const char *method, const char *path, const char *ctype, const void *body, size_t len,
                  long timeout_ms, char *resp, size_t resp_cap, char *why, size_t cap);

/* http_close - close the connection and free the client; NULL is fine. */
void http_close(http_client *c);

/* mono_ns - CLOCK_MONOTONIC in nanoseconds. */
int64_t mono_ns(void);

#endif /* AGENT_HTTP_H */
