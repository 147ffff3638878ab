/* slow.h - requests whose handler takes long (GET /api/v1/compare reads and judges many runs) run on a few threads of
 * their own while their connection waits suspended: no HTTP thread computes one. */
#ifndef SERVER_HTTP_SLOW_H
#define SERVER_HTTP_SLOW_H

#include <microhttpd.h>

#include "server/http/request.h"

/* The work: answer `req` as a handler does (http_reply_*), with `arg`. Its answer is built on the slow thread and
 * sent by the connection's own thread once it resumes. */
typedef enum MHD_Result (*slow_fn)(http_req *req, void *arg);

/* slow_start - start `workers` threads (each with its own PostgreSQL connection). Returns 0 or -1. */
int slow_start(int workers);

/* slow_stop - let the threads answer every queued request and stop them (http_stop, before the daemon stops). */
void slow_stop(void);

/* http_defer_slow - run `fn(req, arg)` on a slow thread: suspends req's connection, queues the work (in arrival
 * order; it waits while every slow thread is busy), and resumes the connection once `fn` answered; `arg` is
 * handed to `release` (may be NULL) after. Returns 0, or -1 when the threads are not running (nothing
 * suspended, `arg` still the caller's). */
int http_defer_slow(http_req *req, slow_fn fn, void (*release)(void *arg), void *arg);

#endif /* SERVER_HTTP_SLOW_H */
