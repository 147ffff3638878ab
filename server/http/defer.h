/* defer.h - hand a request to a database worker: its connection waits suspended, so HTTP threads never block on a commit. */
#ifndef SERVER_HTTP_DEFER_H
#define SERVER_HTTP_DEFER_H

#include <jansson.h>

#include "server/http/request.h"

/* The work deferred: run on a database worker with `arg`; returns the reply
 * (a new reference) and its HTTP status in *status. */
typedef json_t *(*defer_fn)(void *arg, int *status);

/* The same kind of work for several requests at once (one database
 * transaction for all): fill replies[i] (a new reference) and statuses[i]
 * for each of the `n` args. */
typedef void (*defer_group_fn)(void **args, size_t n, json_t **replies, int *statuses);

#define DEFER_GROUP_MAX 64 /* requests one group takes at most */

/* defer_start - start `workers` threads (each with its own PostgreSQL
 * connection). Returns 0 or -1. */
int defer_start(int workers);

/* defer_stop - let the workers finish every queued request (each is replied
 * to) and stop them. Called by http_stop once nothing can defer any more. */
void defer_stop(void);

/* http_defer - run `fn(arg)` on a worker: suspends req's connection and,
 * when fn returns, sets req->reply_status and req->reply and resumes the
 * connection, whose handler then sends the reply. `arg` is taken over and
 * handed to `release` (may be NULL) after fn ran. Returns 0, or -1 when the
 * workers are not running (nothing suspended, `arg` still the caller's). */
int http_defer(http_req *req, defer_fn fn, void (*release)(void *arg), void *arg);

/* http_defer_grouped - as http_defer, but a worker that takes this request
 * also takes the other queued requests deferred with the same `gfn` (up to
 * DEFER_GROUP_MAX) and runs them in one call: under load, many batches share
 * one transaction and one commit, and each is replied to only after it. */
int http_defer_grouped(http_req *req, defer_group_fn gfn, void (*release)(void *arg), void *arg);

#endif /* SERVER_HTTP_DEFER_H */
