/* step_read.h - what the per-step view of a twin group reads: how far each run got on each rank, and its step digests.
 */
#ifndef SERVER_TWINS_STEP_READ_H
#define SERVER_TWINS_STEP_READ_H

#include <stddef.h>
#include <stdint.h>
#include <libpq-fe.h>

/* step_read_register - register the prepared statements of this module. */
void step_read_register(void);

/* step_read_progress - how far runs `keys` (a PostgreSQL bigint[] literal) got on ranks rank_from..rank_to
 * (decimal texts): rows of run_key, rank, max_step and whether the rank has ended (its run no longer running, or
 * its end recorded: 't' or 'f'), in no order. NULL with the database's message in `err`. Free with PQclear. */
PGresult *step_read_progress(const char *keys, const char *rank_from, const char *rank_to, char *err, size_t cap);

/* step_read_more_ranks - one row when one of runs `keys` recorded a rank past `rank_to` (decimal text), none
 * when not. NULL with the database's message in `err`. */
PGresult *step_read_more_ranks(const char *keys, const char *rank_to, char *err, size_t cap);

/* step_read_digests - the step digests of runs `keys` at steps from..to, ranks rank_from..rank_to (decimal
 * texts), at most `limit`, in no order: rows of run_key, rank, step, n and digest. NULL with the database's
 * message in `err`. */
PGresult *step_read_digests(const char *keys, int64_t from, int64_t to, const char *rank_from, const char *rank_to,
                            int limit, char *err, size_t cap);

#endif /* SERVER_TWINS_STEP_READ_H */
