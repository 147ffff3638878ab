/* twin_read.h - what the twin API reads of twin groups beside their findings: the list, the classification, restores,
 * missing records, runs set aside, namesakes, owners and newest replays. */
#ifndef SERVER_TWINS_TWIN_READ_H
#define SERVER_TWINS_TWIN_READ_H

#include <stddef.h>
#include <libpq-fe.h>

/* The classification's columns of group_evidence, first in twin_read_classification's and twin_read_classes's
 * rows: class, reason_code, reason, evaluated_at (ISO 8601, UTC), implicated. */
#define TWIN_CLASS_NCOLS 5

/* What the twin group list is filtered by: a run's user and a node one of the group's runs ran on ("" for any),
 * its newest run's start (a timestamptz text, "" for any), and the reader ("" for every group; else the user
 * whose readable groups are listed, `attested` or not: lockstep_group_visible). */
typedef struct twin_list_filter {
    const char *user, *node, *since, *viewer;
    int attested;
} twin_list_filter;

/* twin_read_register - register the prepared statements of this module. */
void twin_read_register(void);

/* twin_read_list - the twin groups `f` selects, newest first (by their newest run), `count` from position `from`:
 * rows of group and how many groups it selects in all. NULL with the database's message in `err`. Free with
 * PQclear. */
PGresult *twin_read_list(const twin_list_filter *f, long long from, long long count, char *err, size_t cap);

/* twin_read_runs - the runs of groups `names_json` (a JSON array text of group keys), by group and run_key: rows
 * of group, run_id, job_id, step_id, user_name, nodes, status, created_at, ended_at (ISO 8601, UTC). NULL with
 * `err`. */
PGresult *twin_read_runs(const char *names_json, char *err, size_t cap);

/* twin_read_owners - groups `names_json`'s rows of twin_groups: group, name, owner, owner_attested ('t' or 'f').
 * NULL with `err`. */
PGresult *twin_read_owners(const char *names_json, char *err, size_t cap);

/* twin_read_classes - the classification of groups `names_json` that were evaluated: rows of the TWIN_CLASS_NCOLS
 * columns, then the group. NULL with `err`. */
PGresult *twin_read_classes(const char *names_json, char *err, size_t cap);

/* twin_read_replays - the newest replay experiment (narrow) of each of groups `names_json` that has one: rows of
 * group, id, state, verdict, node. NULL with `err`. */
PGresult *twin_read_replays(const char *names_json, char *err, size_t cap);

/* twin_read_classification - group `key`'s classification: one row (none before it is evaluated) of the
 * TWIN_CLASS_NCOLS columns, then the narrow whose verdict its evidence follows ('' when the classification's)
 * and the evidence's reason. NULL with `err`. */
PGresult *twin_read_classification(const char *key, char *err, size_t cap);

/* twin_read_restores - every restored state block of group `key` checked so far, by step, rank and runs: rows of
 * run_id, rank, step, reference run_id, reference, status, entry, occurrence, diff, compared, unverified and the
 * detail (JSON text, or NULL). NULL with `err`. */
PGresult *twin_read_restores(const char *key, char *err, size_t cap);

/* twin_read_awaiting - the steps whose held-back records lockstepd asked group `key`'s agents for and has not
 * received (the rank's digests differ there), at most 100 by step and rank: rows of run_id, rank, step,
 * requested_at, committed_at (the commit that showed the difference; ISO 8601, UTC) and the milliseconds from
 * one to the other. NULL with `err`. */
PGresult *twin_read_awaiting(const char *key, char *err, size_t cap);

/* twin_read_removed - the steps group `key`'s comparison stopped at because retention removed a run's records
 * there, at most 100 by step and rank: rows of run_id, rank, step. NULL with `err`. */
PGresult *twin_read_removed(const char *key, char *err, size_t cap);

/* twin_read_set_aside - the runs set aside from group `key` when its owner claimed it, at most GROUP_MAX_RUNS,
 * oldest first: rows of run_id, job_id, user_name, attested_user, reason, at (ISO 8601, UTC). NULL with `err`. */
PGresult *twin_read_set_aside(const char *key, char *err, size_t cap);

/* twin_read_namesakes - the keys of the other groups of group `key`'s name (each owner's own), at most 16, in
 * order. NULL with `err`. */
PGresult *twin_read_namesakes(const char *key, char *err, size_t cap);

#endif /* SERVER_TWINS_TWIN_READ_H */
