/* held.h - digest streaming: the records an agent held back are checked against the step digests they answer before
 * they are stored.
 *
 * An agent that streams digests sends, for each step, a step digest (the XOR of rec_digest_term over the records
 * it held back, and their count) and keeps the records; lockstepd asks for them when the step's digests differ
 * between twins. Whatever comes back must be the records the digest stood for: records that do not reproduce it
 * (a bug, a damaged spool, or a client that answers with its twin's records) would otherwise turn a real
 * difference into a match. The rule (rec_held_answers, common/recmatch.h): for each step of a held batch, the step's
 * stored records plus the batch's must not be more than the step digest counts, and when they are exactly as many,
 * their terms must XOR to it. Fewer is accepted: a step's held records may come in several blocks.
 *
 * The comparison checks the same rule again when it reads a step (server/twins/step.c: a run whose stored
 * records do not answer its digest is never taken as agreeing), which covers held batches of one step stored by
 * two requests at once.
 */
#ifndef SERVER_STORE_HELD_H
#define SERVER_STORE_HELD_H

#include <stddef.h>
#include <stdint.h>

#include "server/core/error.h"
#include "server/store/batch.h"
#include "server/store/runs.h"

/* store_held_register - this module's prepared statements. */
void store_held_register(void);

/* store_held_check - before a batch of held records `b` (b->held) of `run` is stored: each of its steps against
 * the step's digest and the records stored for it already (rec_held_answers, common/recmatch.h). A batch stored before
 * (the same rank and batch_seq: a replay) is not checked again. Returns 0 when it may be stored; -1 with `e` filled and
 * e->status 409 when it may not (counted: metrics_held_refused); -2 with `e` filled (status 0) on a database error. */
int store_held_check(const run_info *run, const srv_batch *b, srv_error *e);

#endif /* SERVER_STORE_HELD_H */
