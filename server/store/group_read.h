/* group_read.h - what every twin group read asks of the database first: a group's runs, whom a job reads as, which
 * group a name means, and who may read a group or a run. */
#ifndef SERVER_STORE_GROUP_READ_H
#define SERVER_STORE_GROUP_READ_H

#include <stddef.h>
#include <libpq-fe.h>

/* group_read_register - register the prepared statements of this module. */
void group_read_register(void);

/* group_read_runs - the first GROUP_MAX_RUNS runs of twin group `key`, by run_key: rows of run_key, run_id,
 * job_id, user_name, nodes, status, start_step, ranks, mode, created_at, ended_at (ISO 8601, UTC), how many runs
 * the group has, attested_user. NULL with the database's message in `err`. Free with PQclear. */
PGresult *group_read_runs(const char *key, char *err, size_t cap);

/* group_read_runs_keys - runs `keys` (a PostgreSQL bigint[] literal) in the literal's order, at most
 * GROUP_MAX_RUNS, with group_read_runs's columns (the count: of the runs found). NULL with `err`. */
PGresult *group_read_runs_keys(const char *keys, char *err, size_t cap);

/* group_read_job_user - whom job `job`'s token reads as: one row of the user attested for the job (slurmstepd's
 * attestation, else one its runs were attested as; NULL when none) and the user its first run reported (NULL
 * without runs). NULL with the database's message in `err`. */
PGresult *group_read_job_user(const char *job, char *err, size_t cap);

/* group_read_resolve - the twin groups name `name` may mean to `user` (attested or not; lockstep_group_resolve,
 * sql/functions/groups.sql): rows of key, owner and whether the owner is attested ('t' or 'f'). NULL with
 * `err`. */
PGresult *group_read_resolve(const char *name, const char *user, int attested, char *err, size_t cap);

/* group_read_visible - one row, 't' when `user` (attested or not) may read twin group `key`
 * (lockstep_group_visible), else 'f'. NULL with the database's message in `err`. */
PGresult *group_read_visible(const char *key, const char *user, int attested, char *err, size_t cap);

/* group_read_hidden_runs - one row: how many of the runs `run_ids` (a PostgreSQL uuid[] literal) `user` (attested
 * or not) may not read: a run of a twin group through the group (lockstep_group_visible), a run outside any group
 * through its user (attested; for an unattested user, a run no one attested that reported it). NULL with
 * `err`. */
PGresult *group_read_hidden_runs(const char *run_ids, const char *user, int attested, char *err, size_t cap);

#endif /* SERVER_STORE_GROUP_READ_H */
