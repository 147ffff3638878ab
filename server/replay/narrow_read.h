/* narrow_read.h - replay experiments as their readers see them: the API's narrow and its list, the twin API's
 * fields, and what the suspects evaluation needs of a finished narrow's verdict. */
#ifndef SERVER_REPLAY_NARROW_READ_H
#define SERVER_REPLAY_NARROW_READ_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "server/core/error.h"

#define NARROW_MAX_ORIGIN 16

/* narrow_json - narrow `id` as the API shows it (a new reference): its group, window, design, placements with
 * their outcomes, verdict, reasoning and record. NULL when unknown (*status 404) or on a database error (503). */
json_t *narrow_json(long long id, int *status, srv_error *e);

/* narrow_list - the narrows of `group`, newest first, `limit` from id `before` (0: the newest), as list items
 * (summaries: id, state, verdict, node, gpu, reason, narrow_group, times). NULL on a database error. */
json_t *narrow_list(const char *group, long long limit, long long before, srv_error *e);

/* narrow_twin_fields - the twin API's fields for `group`: "replay" (its newest narrow's summary, or null),
 * "replays" (how many), and "narrow_of" ({"group", "id"} when `group` is a narrow's replay group, else null),
 * set into `o`. Returns 0, or -1 with the database's message. */
int narrow_twin_fields(const char *group, json_t *o, char *err, size_t cap);

/* What the suspects evaluation needs of a replay verdict. */
typedef struct narrow_verdict {
    long long id;
    char verdict[32]; /* software, persistent-hardware, transient-hardware, inconclusive */
    char node[256], gpu[128];
    char reason[1200];
    char narrow_group[300];
    char group[300];                        /* the group narrowed (for a replay group) */
    int done;                               /* the experiment finished */
    int64_t step;                           /* the group's first diverging step */
    int origin[NARROW_MAX_ORIGIN], norigin; /* its origin ranks */
} narrow_verdict;

/* narrow_latest - the newest finished narrow of `group` into `out`, inside the caller's transaction. Returns 1
 * found, 0 none, -1 on a database error. */
int narrow_latest(const char *group, narrow_verdict *out, char *err, size_t cap);

/* narrow_of_group - whether `group` is a narrow's replay group: 1 with `out` filled (done says whether its
 * experiment finished), 0 when it is not, -1 on a database error. */
int narrow_of_group(const char *group, narrow_verdict *out, char *err, size_t cap);

/* narrow_replay_diverged - for a finished narrow: whether the replay of run `run_key` (a run of its replay
 * group) diverged (1), ran clean (0), or was not judged (-1); -2 on a database error. */
int narrow_replay_diverged(long long narrow_id, const char *run_key, char *err, size_t cap);

/* narrow_read_register - prepare the statements this module runs (db_register). */
void narrow_read_register(void);

#endif /* SERVER_REPLAY_NARROW_READ_H */
