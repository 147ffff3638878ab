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
 * created_at, ended_at (in run_key order), at most GROUP_MAX_RUNS of them. */
typedef struct group_runs {
    PGresult *res;
    int n;
    int64_t keys[GROUP_MAX_RUNS];
} group_runs;

/* group_register - prepare the statement group_open runs. */
void group_register(void);

/* group_open - load the runs of `group`. Returns 1 with `g` loaded (the
 * caller PQclears g->res), or 0 after replying (503, or 404 for a group
 * without runs) with MHD's result in `sent`. */
int group_open(http_req *req, const char *group, group_runs *g, enum MHD_Result *sent);

/* The facts a twin group's status is decided from (group_facts_load reads them). */
typedef struct group_facts {
    int runs;        /* runs in the group */
    int running;     /* of them, still running */
    int divergences; /* ranks with a stored first divergence */
    long unchecked;  /* ranks whose shared steps are not all compared yet */
} group_facts;

/* group_status - THE rule for a twin group's status, used by every endpoint that shows one (GET /twins/G,
 * the twin-group list and its status filter, the runs list): "diverged" when any rank diverged; "match" when
 * there are two runs or more, all ended, and every shared step was compared; else "pending". The string is
 * static. */
const char *group_status(const group_facts *f);

/* Every value group_status returns, NULL-terminated (the list's ?status= accepts these). */
extern const char *const GROUP_STATUSES[];

/* group_facts_load - the facts of the `n` groups named in `names`, into out[0..n-1] in that order (a group
 * without runs gets zeros). Returns 0, or -1 with the database's message in `err`. */
int group_facts_load(const char *const *names, int n, group_facts *out, char *err, size_t cap);

/* group_names_json - `n` group names as a JSON array text (the $1 of the statements that take a set of
 * groups), as a new string (caller frees). */
char *group_names_json(const char *const *names, int n);

/* group_run_index - the index of run `key` in `g`, or -1. */
int group_run_index(const group_runs *g, int64_t key);

/* group_run_id - the run id of run `key` (borrowed from g->res), or NULL. */
const char *group_run_id(const group_runs *g, int64_t key);

/* group_keys - the runs' keys as a PostgreSQL bigint[] literal ("{1,2,3}")
 * into `out` (GROUP_KEYS_CAP bytes hold any group). */
#define GROUP_KEYS_CAP (GROUP_MAX_RUNS * 22 + 3)
void group_keys(const group_runs *g, char *out, size_t cap);

#endif /* SERVER_API_GROUP_H */
