/* defer.h - hand a request to a database worker: its connection waits suspended, so HTTP threads never block on a
 * commit. */
#ifndef SERVER_HTTP_DEFER_H
#define SERVER_HTTP_DEFER_H

#include <jansson.h>

#include "server/http/request.h"

/* The work deferred, for one or several requests at once (one database
 * transaction for all): fill replies[i] (a new reference) and statuses[i]
 * for each of the `n` args. */
typedef void (*defer_group_fn)(void **args, size_t n, json_t **replies, int *statuses);

#define DEFER_GROUP_MAX 64 /* requests one group takes at most */

/* defer_start - start `workers` threads (each with its own PostgreSQL connection). While one of them is storing, a
 * queued request waits up to `group_wait_s` for others to share its transaction (0: never waits). Returns 0 or -1. */
int defer_start(int workers, double group_wait_s);

/* defer_stop - let the workers finish every queued request (each is replied
 * to) and stop them. Called by http_stop once nothing can defer any more. */
void defer_stop(void);

/* http_defer_grouped - run `gfn` on a worker for this request and the other
 * queued requests deferred with the same `gfn` (up to DEFER_GROUP_MAX), in one
 * call: under load, many batches share one transaction and one commit. Suspends
 * req's connection; when gfn returns, sets each request's reply_status and
 * reply and resumes its connection, whose handler then sends the reply. `arg`
 * is taken over and handed to `release` (may be NULL) after gfn ran. Returns 0,
 * or -1 when the workers are not running (nothing suspended, `arg` still the
 * caller's). */
int http_defer_grouped(http_req *req, defer_group_fn gfn, void (*release)(void *arg), void *arg);

#endif /* SERVER_HTTP_DEFER_H */
