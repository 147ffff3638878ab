/* run_read.h - the runs as the read API lists and shows them: the list, one run, its manifests, its ranks and what was
 * attested of it. */
#ifndef SERVER_STORE_RUN_READ_H
#define SERVER_STORE_RUN_READ_H

#include <stddef.h>
#include <libpq-fe.h>

/* The columns of a run row, in this order (text columns cut to their registration limits, server/core/limits.h):
 * run_id, job_id, step_id, twin_group ('' outside any), ranks, start_step, user_name, nodes, command, mode,
 * status, created_at, ended_at (ISO 8601, UTC), partition, resume_template, argv (a JSON array text, or NULL). */
#define RUN_READ_NCOLS 16

/* What the runs list is filtered by: each "" for any. `group` is a twin group's name or key. */
typedef struct run_filter {
    const char *user, *job, *group, *status, *step;
} run_filter;

/* run_read_register - register the prepared statements of this module. */
void run_read_register(void);

/* run_read_list - the runs `f` selects, newest first, `limit` of them from `offset`: rows of the RUN_READ_NCOLS
 * columns. NULL with the database's message in `err`. Free with PQclear. */
PGresult *run_read_list(const run_filter *f, long long limit, long long offset, char *err, size_t cap);

/* run_read_count - how many runs `f` selects, counted up to LIST_TOTAL_MAX + 1 only: one row of one column. NULL
 * with the database's message in `err`. */
PGresult *run_read_count(const run_filter *f, char *err, size_t cap);

/* run_read_one - run `run_id` (a valid uuid) as one row (none when unknown) of the RUN_READ_NCOLS columns, then
 * run_key, and where it was set aside from its twin group: the group, the reason, when (NULL when it was not).
 * NULL with the database's message in `err`. */
PGresult *run_read_one(const char *run_id, char *err, size_t cap);

/* run_read_manifests - the manifests of run `key` (decimal text) from rank `rank_from` on, by rank, at most
 * `limit`: rows of rank and the manifest as JSON text. NULL with the database's message in `err`. */
PGresult *run_read_manifests(const char *key, long long rank_from, int limit, char *err, size_t cap);

/* run_read_ranks - the ranks of run `key` (decimal text) from `rank_from` on that recorded or ended, by rank, at
 * most `limit`: rows of rank, min_step, max_step, max_seq, records (NULL for a rank that only ended) and exit
 * code (NULL while it has not ended). NULL with the database's message in `err`. */
PGresult *run_read_ranks(const char *key, long long rank_from, int limit, char *err, size_t cap);

/* run_read_attested - what slurmstepd (or the admin) attested of run `key`'s step (decimal text), one row per
 * node (at most 4097) by node index: node, its ranks (an int[] as text), user, nodes, attested_by. NULL with the
 * database's message in `err`. */
PGresult *run_read_attested(const char *key, char *err, size_t cap);

#endif /* SERVER_STORE_RUN_READ_H */
