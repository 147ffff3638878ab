/* group.h - what every twin group read starts with: the group's runs, loaded once per request, and lookups into them. */
#ifndef SERVER_API_GROUP_H
#define SERVER_API_GROUP_H

#include <stddef.h>
#include <stdint.h>
#include <libpq-fe.h>
#include <microhttpd.h>

#include "server/core/limits.h"
#include "server/http/request.h"

/* The group's runs: rows of run_key, run_id, job_id, user_name, nodes, status, start_step, ranks, mode,
 * created_at, ended_at, (count), attested_user (in run_key order), at most GROUP_MAX_RUNS of them. */
typedef struct group_runs {
    PGresult *res;
    int n;
    int64_t total; /* runs the group has (more than n only in data older than the limit) */
    int64_t keys[GROUP_MAX_RUNS];
} group_runs;

/* group_register - prepare the statement group_open runs. */
void group_register(void);

/* group_open - load the runs of `group`. Returns 1 with `g` loaded (the
 * caller PQclears g->res), or 0 after replying (503, or 404 for a group
 * without runs) with MHD's result in `sent`. */
int group_open(http_req *req, const char *group, group_runs *g, enum MHD_Result *sent);

/* group_reader - who reads twin groups: 1 for every group (read_access = open, or the admin token), 0 for
 * the groups of one user (a job's own token with ?job=J under read_access = admin: the user slurmstepd
 * attested for J, else the one J's first run was attested or reported as) with that user in `user`; -1 after
 * replying (401/403 when neither, 503). */
int group_reader(http_req *req, char *user, size_t cap);

/* group_readable - 1 when `user` ("" = anyone, from group_reader) may read `group`: it owns it, or the
 * group is shared with it (or with "*"); else 0 after replying 403 (or 503). */
int group_readable(http_req *req, const char *group, const char *user);

/* group_runs_readable - 1 when `user` ("" = anyone, from group_reader) may read every run of run_ids[0..n) (run
 * ids as text): each run's twin group is readable to it (group_readable's rule), or the run is in no group and is
 * that user's (attested, else reported); else 0 after replying 403 (or 503). What GET /api/v1/compare and the
 * reads of one run's data outside a group read ask. */
int group_runs_readable(http_req *req, const char *user, const char *const *run_ids, int n);

/* group_open_for - group_reader, group_readable, then group_open: every read of one twin group. */
int group_open_for(http_req *req, const char *group, group_runs *g, enum MHD_Result *sent);

/* group_names_json - `n` group names as a JSON array text (the $1 of the statements that take a set of
 * groups), as a new string (caller frees). */
char *group_names_json(const char *const *names, int n);
/* group_open_runs - load the runs `keys` (a PostgreSQL bigint[] literal, at most GROUP_MAX_RUNS) as an ad hoc
 * group, in the literal's order: what GET /api/v1/compare/records lines up. Returns as group_open (404 when
 * none of them exists). */
int group_open_runs(http_req *req, const char *keys, group_runs *g, enum MHD_Result *sent);

/* group_run_index - the index of run `key` in `g`, or -1. */
int group_run_index(const group_runs *g, int64_t key);

/* group_run_id - the run id of run `key` (borrowed from g->res), or NULL. */
const char *group_run_id(const group_runs *g, int64_t key);

/* group_keys - the runs' keys as a PostgreSQL bigint[] literal ("{1,2,3}")
 * into `out` (GROUP_KEYS_CAP bytes hold any group). */
#define GROUP_KEYS_CAP (GROUP_MAX_RUNS * 22 + 3)
void group_keys(const group_runs *g, char *out, size_t cap);

#endif /* SERVER_API_GROUP_H */
