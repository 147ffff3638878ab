/* dbq.h - database workers that store record batches while their HTTP connection waits suspended, so HTTP threads never block on a commit. */
#ifndef SERVER_DBQ_H
#define SERVER_DBQ_H

#include "server/http.h"
#include "server/store.h"

/* dbq_start - start `workers` threads (each with its own PostgreSQL
 * connection). Returns 0 or -1. */
int dbq_start(int workers);

/* dbq_stop - finish the queued batches and stop the threads. Call after
 * http_stop, when no request can submit any more. */
void dbq_stop(void);

/* dbq_running - 1 between dbq_start and dbq_stop. */
int dbq_running(void);

/* dbq_submit - store batch `b` of `run` on a worker: suspends req's
 * connection, takes `b` over (the caller's copy is cleared), and when the
 * batch is committed (or failed) sets req->reply_status and req->reply and
 * resumes the connection, whose handler then sends the reply. Returns 0, or
 * -1 when the workers are not running (nothing suspended or taken). */
int dbq_submit(http_req *req, const run_info *run, srv_batch *b);

#endif /* SERVER_DBQ_H */
