/* runs.h - runs in PostgreSQL: registration (idempotent per client), lookup through a cache, manifests, rank ends. */
#ifndef SERVER_STORE_RUNS_H
#define SERVER_STORE_RUNS_H

#include <stdint.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "server/core/error.h"
#include "server/store/groups.h"

/* What ingest needs to know about a run; cached in memory (these fields
 * never change after registration, but for a run set aside from its group,
 * whose entry a claim drops). */
typedef struct run_info {
    int64_t key;
    char run_id[40];
    char job_id[256];
    char group[GROUP_NAME_MAX + 1]; /* the twin group's key, "" when the run has none */
    int ranks;
    int64_t start_step;
} run_info;

/* store_runs_register - register the prepared statements of this module. */
void store_runs_register(void);

/* store_uuid_valid - 1 when `s` is a UUID in its 36-character text form. */
int store_uuid_valid(const char *s);

/* store_run_lookup - find run `run_id` (cache first). Returns 1 and fills
 * `out` when found, 0 when unknown, -1 on a database error (`e` filled). */
int store_run_lookup(const char *run_id, run_info *out, srv_error *e);

/* store_run_create - register a run from the validated request object `o`
 * (job_id, step_id, twin_group, ranks, start_step, user, nodes, command,
 * mode, client_id, partition, resume, argv) for `who`, in one transaction: a repeated
 * client_id returns the run it made (*created 0); the twin group its name
 * means is created owned by `who`, joined or claimed when the ownership rules
 * and the run limit allow (store_group_admit: `adm` says what it did; runs a
 * claim set aside are forgotten by the cache). Returns 0 and fills `out`, or
 * -1 with `e` filled (e->status 400, 403 or 409 for a refusal, 0 for a
 * database error). */
int store_run_create(const json_t *o, const run_claim *who, run_info *out, int *created, group_admission *adm,
                     srv_error *e);

/* store_job_attested_user - the user slurmstepd attested for any step of
 * `job_id`, into `out`; returns out, or NULL when none (or on an error). */
const char *store_job_attested_user(const char *job_id, char *out, size_t cap);

/* store_manifest - store (or replace) rank `rank`'s manifest JSON text.
 * Returns 0, or -1 with `e` filled. */
int store_manifest(const run_info *run, int rank, const char *json_text, srv_error *e);

/* store_checkpoint - record that the run wrote a checkpoint of `step` (the
 * state after that step) at `path` ("" when it named none), declared by
 * `rank`; a second declaration of the step replaces the first. Returns 0, or
 * -1 with `e` filled. */
int store_checkpoint(const run_info *run, int64_t step, const char *path, int rank, srv_error *e);

/* store_rank_end - record that `rank` ended with `exit_code` (`aborted`: its end was an abort, MPI_Abort, whose
 * code later reports of the same rank keep; `mpi_unseen`: NULL or why the rank's MPI calls went unrecorded,
 * "unloaded" or "unseen", agent/mpiseen.h); when every rank has ended the run's status becomes ended (or failed if
 * any exit code was non-zero). Sets `*run_done` to 1 then. Returns 0, or -1 with `e`. */
int store_rank_end(const run_info *run, int rank, int exit_code, int aborted, const char *mpi_unseen, int *run_done,
                   srv_error *e);

/* store_checkpoints_read - the checkpoints run `key` declared, newest step first, `limit` of them from `offset`:
 * rows of step, path, rank, declared_at (ISO 8601, UTC) and the count of all. NULL with the database's message
 * in `err`. Free with PQclear. */
PGresult *store_checkpoints_read(int64_t key, long long limit, long long offset, char *err, size_t cap);

#endif /* SERVER_STORE_RUNS_H */
