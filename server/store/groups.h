/* groups.h - twin groups and their owners: who may add a run to a group, sharing, and what the group says of itself.
 *
 * A group belongs to the user of the run that created it: the attested user when slurmstepd (or the admin)
 * vouched for it, else the user the job reported (owner_attested false; on such groups any run reporting
 * the same user may join, which stops accidents, not attacks: docs/server.md, "Attested identity").
 * Other users' runs join only when the owner (or the admin) shared the group with them, or with anyone.
 */
#ifndef SERVER_STORE_GROUPS_H
#define SERVER_STORE_GROUPS_H

#include <stddef.h>
#include <libpq-fe.h>

#include "server/core/error.h"

/* Who registers a run, as far as lockstepd can tell. */
typedef struct run_claim {
    const char *reported_user; /* what the registration says ("" when nothing) */
    const char *attested_user; /* what slurmstepd or the admin vouched for; NULL when nobody did */
    int admin;                 /* the admin token registered it */
} run_claim;

/* The facts of a group that decide who may join it. */
typedef struct group_owner {
    const char *owner;
    int owner_attested;
    const char *shared; /* PostgreSQL text[] literal of the users it is shared with ("{}", "{bob,*}") */
} group_owner;

/* group_may_join - the ownership rule, pure: 0 when a run claimed as `who`
 * may join a group owned as `g`; else -1 with the reason in `why` (a user-
 * facing sentence). The admin may always; on a group with an attested owner
 * only an attested user equal to it or shared with (or "*") may; on a group
 * whose owner was only reported, the claim's user (attested, else reported)
 * must be the owner or shared with. Tested in tests/unit/test_groups.c. */
int group_may_join(const group_owner *g, const run_claim *who, char *why, size_t cap);

/* group_shared_has - 1 when the text[] literal `shared` names `user` or "*". */
int group_shared_has(const char *shared, const char *user);

/* store_groups_register - register this module's prepared statements. */
void store_groups_register(void);

/* store_group_admit - inside the registration's transaction: create `group`
 * owned by the claim when it is new, lock its row, check the rule and the run
 * limit (GROUP_MAX_RUNS). Returns 0 when the run may join; -1 with `e` filled
 * (e->status 403 for another user's group, 409 for a full one, 0 for a
 * database error). */
int store_group_admit(const char *group, const run_claim *who, srv_error *e);

/* store_group_share - set the users `group` is shared with (`users_literal`:
 * a JSON array of strings, "*" = anyone), when `job_id`'s run in the group belongs to the owner or
 * `admin`. Returns 1 and the group's row as in store_group_get, 0 when the
 * group is unknown, -1 with `e` (e->status 403 when not allowed). */
int store_group_share(const char *group, const char *users_literal, const char *job_id, int admin, PGresult **out,
                      srv_error *e);

/* store_group_get - the group's owner, owner_attested ('t'/'f') and
 * shared_with (as JSON text) in one row (caller PQclears), NULL with `e` on a
 * database error; no rows when the group has no owner row. */
PGresult *store_group_get(const char *group, srv_error *e);

#endif /* SERVER_STORE_GROUPS_H */
