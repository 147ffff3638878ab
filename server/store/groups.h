/* groups.h - twin groups and their owners in PostgreSQL: admitting a registration's run (the rules of
 * server/rules/group_rule.h), claims, sharing, what a group says of itself.
 *
 * A claim: a group made before its owner's runs were attested (every group made before attestation existed, at
 * upgrade) becomes attested when its owner's first attested run registers into it. Then the runs in it that are
 * not attested as the owner (unattested runs, other users' runs) are set aside: they leave the group, kept with
 * why (runs.set_aside_*), the group's comparison starts over without them (lockstep_group_set_aside,
 * sql/functions/groups.sql) and the fleet takes back what it concluded from them (store_groups_on_set_aside); the
 * shares made while the owner was unattested are cleared.
 */
#ifndef SERVER_STORE_GROUPS_H
#define SERVER_STORE_GROUPS_H

#include <stddef.h>
#include <libpq-fe.h>

#include "server/core/error.h"
#include "server/core/limits.h"
#include "server/rules/group_rule.h"

/* What a registration's admission did. */
typedef struct group_admission {
    char key[GROUP_NAME_MAX + 1];           /* the group the run joins (runs.twin_group) */
    int claimed;                            /* the run's attested user claimed the group */
    int set_aside;                          /* runs the claim set aside */
    char set_aside_ids[GROUP_MAX_RUNS][40]; /* the first GROUP_MAX_RUNS of them */
    int ranks; /* set_aside: the most ranks a run left in the group has (0..ranks-1 to compare) */
} group_admission;

/* group_set_aside_fn - told, inside the claim's transaction, that runs of group `group` were set aside (`why`, a
 * sentence): takes back what the fleet concluded from them. Returns 0, or -1 with the database's message in `err`
 * (the registration then fails and rolls back). */
typedef int (*group_set_aside_fn)(const char *group, const char *why, char *err, size_t cap);

/* store_groups_on_set_aside - whom to tell (main wires the fleet's). */
void store_groups_on_set_aside(group_set_aside_fn fn);

/* store_groups_register - register this module's prepared statements. */
void store_groups_register(void);

/* store_group_admit - inside the registration's transaction: the group registration name `typed` means for `who`
 * (group_plan_make; a reserved name by its own rule), created, joined or claimed, its row locked, the run limit
 * (GROUP_MAX_RUNS) checked. Returns 0 with `adm` filled when the run may join; -1 with `e` filled (e->status 400,
 * 403 or 409 for a refusal, 0 for a database error). */
int store_group_admit(const char *typed, const run_claim *who, group_admission *adm, srv_error *e);

/* store_group_share - set the users group `key` is shared with (`users_literal`: a JSON array of strings, "*" =
 * anyone), when `job_id`'s run in the group belongs to the owner or `admin`. Returns 1 and the group's row as in
 * store_group_get, 0 when the group is unknown, -1 with `e` (e->status 403 when not allowed). */
int store_group_share(const char *key, const char *users_literal, const char *job_id, int admin, PGresult **out,
                      srv_error *e);

/* store_group_get - group `key`'s owner, owner_attested ('t'/'f'), shared_with (as JSON text) and name in one
 * row (caller PQclears), NULL with `e` on a database error; no rows when the group has no owner row. */
PGresult *store_group_get(const char *key, srv_error *e);

#endif /* SERVER_STORE_GROUPS_H */
