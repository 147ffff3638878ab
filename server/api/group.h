/* group.h - what every twin group read starts with: the group's runs, loaded once per request, and lookups into them.
 */
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
    char key[GROUP_NAME_MAX + 1]; /* the group's key (group_open_for) */
    PGresult *res;
    int n;
    int64_t total; /* runs the group has (more than n only in data older than the limit) */
    int64_t keys[GROUP_MAX_RUNS];
} group_runs;

/* group_open - load the runs of `group`. Returns 1 with `g` loaded (the
 * caller PQclears g->res), or 0 after replying (503, or 404 for a group
 * without runs) with MHD's result in `sent`. */
int group_open(http_req *req, const char *group, group_runs *g, enum MHD_Result *sent);

/* Who reads: every group, or the groups one user may read. */
typedef struct group_viewer {
    char user[USER_MAX + 1]; /* "" = every group (read_access = open, or the admin token) */
    int attested;            /* `user` is what slurmstepd (or the admin) attested for the reading job; else only
                                what its run reported, which reads only groups whose owner was only reported */
} group_viewer;

/* group_reader - who reads twin groups: 1 for every group (read_access = open, or the admin token), 0 for the
 * groups of one user (a job's own token with ?job=J under read_access = admin: the user slurmstepd attested for
 * J, else the one a run of J was attested as; else, unattested, the one J's first run reported), in `v`; -1
 * after replying (401/403 when neither, 503). Attested data is read on attested identity only
 * (lockstep_group_visible, sql/functions/groups.sql). */
int group_reader(http_req *req, group_viewer *v);

/* group_job_viewer - whom job `job`'s token reads as (group_reader's rule, whatever the token) into `v`: 1, 0 when
 * nothing says whose the job is (v->user ""), -1 after replying 503. */
int group_job_viewer(http_req *req, const char *job, group_viewer *v);

/* group_resolve - the key of the group name `name` (from a request) means to viewer `v`
 * (lockstep_group_resolve: the key itself; the viewer's own group of that name; OWNER/NAME; the one group of that
 * name) into `key`; `name` itself when no group has it (the caller's read then answers its 404). Returns 1, or 0
 * after replying (409 with the groups when the name means several, 503). */
int group_resolve(http_req *req, const char *name, const group_viewer *v, char *key, size_t cap);

/* group_readable - 1 when viewer `v` may read group `key`: open or admin reads, its owner, or a user it is shared
 * with (or "*"); else 0 after replying 403 (or 503). */
int group_readable(http_req *req, const char *key, const group_viewer *v);

/* group_runs_readable - 1 when viewer `v` may read every run of run_ids[0..n) (run ids as text): each run's twin
 * group is readable to it (group_readable's rule), or the run is in no group and is that user's (attested; for an
 * unattested viewer, a run no one attested that reported it); else 0 after replying 403 (or 503). What GET
 * /api/v1/compare and the reads of one run's data outside a group read ask. */
int group_runs_readable(http_req *req, const group_viewer *v, const char *const *run_ids, int n);

/* group_find - group_reader, group_resolve, then group_readable: the key of group `name` as the request's reader
 * may read it into `key`. Returns 1, or 0 after replying. */
int group_find(http_req *req, const char *name, char *key, size_t cap);

/* group_open_for - group_find, then group_open: every read of one twin group (g->key holds its key). */
int group_open_for(http_req *req, const char *name, group_runs *g, enum MHD_Result *sent);

/* group_names_json - `n` group names as a JSON array text (the $1 of the statements that take a set of
 * groups), as a new string (caller frees). */
char *group_names_json(const char *const *names, int n);
/* group_open_runs - load the runs `keys` (a PostgreSQL bigint[] literal, at most GROUP_MAX_RUNS) as an ad hoc
 * group, in the literal's order: what GET /api/v1/compare/records lines up. Returns as group_open (404 when
 * none of them exists). */
int group_open_runs(http_req *req, const char *keys, group_runs *g, enum MHD_Result *sent);

/* group_run_index - the index of run `key` in `g`, or -1. */
int group_run_index(const group_runs *g, int64_t key);

/* group_keys - the runs' keys as a PostgreSQL bigint[] literal ("{1,2,3}")
 * into `out` (GROUP_KEYS_CAP bytes hold any group). */
#define GROUP_KEYS_CAP (GROUP_MAX_RUNS * 22 + 3)
void group_keys(const group_runs *g, char *out, size_t cap);

#endif /* SERVER_API_GROUP_H */
