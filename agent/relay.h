/* relay.h - the ranks of one job step on one node share their requests to lockstepd (LOCKSTEP_RELAY=DIR).
 *
 * One request a rank-step costs lockstepd more than the batch it carries (docs/scale.md, "Bundles"). So the rank
 * whose agent holds DIR/relay.lock leads: its relay thread takes the batches of the node's ranks (its own included)
 * over a unix socket (DIR/relay.sock) and posts those of one moment as one bundle (application/x-lockstep-bundle,
 * docs/server.md), then answers each rank with its batch's own reply. Whatever the relay cannot do for a rank (no
 * relay now, its post failed, another job's relay) the rank posts itself, as without one. DIR must be this user's and
 * private (mode 0700; made so when missing): the relay serves only its own user's processes (the socket's peer
 * credentials) and only ranks of its own job and step, so a batch goes to lockstepd with the token of the job that made
 * it, and no token leaves its process. When the leader ends, its followers post themselves, and one of them takes the
 * lead at its next batch. See docs/agent.md, "Node relay".
 */
#ifndef AGENT_RELAY_H
#define AGENT_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "agent/spool.h"

#define RELAY_BATCH_MAX (64u << 20) /* a batch larger than this is posted by its rank itself */

typedef struct relay relay;

/* relay_open - join the relay of DIR for the job and step of `m` (server, token and CA for the leader's posts):
 * lead it when no other rank does (its thread starts), else follow it. `wait_ms`: how long a leader waits after a
 * batch for the other ranks' (LOCKSTEP_RELAY_MS). `abort_at` (borrowed, may be NULL): the exit's deadline, which the
 * leader's posts keep too. Returns the relay, or NULL with the reason in `why` (DIR not private to this user, or
 * its path too long). */
relay *relay_open(const char *dir, const spool_meta *m, long wait_ms, const int64_t *abort_at, char *why, size_t cap);

/* relay_post - a batch (`len` bytes framed as application/x-lockstep, for run `run_id`) through the relay,
 * waiting at most timeout_ms. Returns 1 when the relay answered for it: the HTTP status lockstepd gave the batch in
 * *status, its reply in `resp` (NUL-terminated). Returns 0 when the caller must post it itself: no relay answers
 * (this rank, or another, may lead by the next batch), the relay serves another job, or its post failed. */
int relay_post(relay *r, const char *run_id, const unsigned char *buf, size_t len, long timeout_ms, long *status,
               char *resp, size_t cap);

/* relay_close - a leader answers what it holds (posting it first), stops its thread and gives up the lead; a
 * follower disconnects. NULL is fine. */
void relay_close(relay *r);

#endif /* AGENT_RELAY_H */
