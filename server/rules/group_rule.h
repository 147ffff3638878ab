/* group_rule.h - who may add a run to which twin group, and which group a registration's name means: the ownership
 * rules, pure.
 *
 * A twin group belongs to the user of the run that created it: the attested user when slurmstepd (or the admin)
 * vouched for it, else the user the job reported (owner_attested false; on such groups any run reporting the same
 * user may join, which stops accidents, not attacks: docs/server.md, "Attested identity").
 *
 * Names are scoped to their attested owner. A group has a key (runs.twin_group and every table keyed by group) and
 * the name its owner typed. The key is the name itself while no other group holds it (so single-owner names, and
 * every group made before owners were scoped, keep their names), else OWNER/NAME; a name with a '/' always gets
 * OWNER/NAME, since user names hold no '/' and such keys must stay free for their owners. A registration's
 * twin_group means, in order (group_plan_make):
 *   1. the registering user's own attested group of that name (NAME, or OWNER/NAME written by its owner);
 *   2. OWNER/NAME of another attested owner: joined when the owner shared it (group_may_join);
 *   3. the user's own group of that key made before its runs were attested: claimed (it becomes attested, and the
 *      runs not attested as the owner are set aside: server/store/groups.h);
 *   4. else a new group of the user: key NAME when free, else OWNER/NAME.
 * A run whose user is not attested names a key: it joins that group under group_may_join, or creates it (never a
 * name with '/', which would take an OWNER/NAME key).
 * Names lockstepd makes are reserved (group_reserved): a narrow's replay group NAME.narrow-N admits only runs of
 * the users whose runs the narrow replays (group_may_replay).
 * Tested from tables in tests/unit/test_groups.c.
 */
#ifndef SERVER_RULES_GROUP_RULE_H
#define SERVER_RULES_GROUP_RULE_H

#include <stddef.h>

#include "server/core/limits.h"

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

/* A group a registration's name may mean, as read under lock (twin_groups). */
typedef struct group_row {
    const char *key, *owner, *name, *shared; /* shared: a text[] literal */
    int owner_attested;
    long long runs; /* how many runs it holds */
} group_row;

/* What a registration does with its twin_group. */
typedef enum group_act { GROUP_JOIN, GROUP_CLAIM, GROUP_CREATE, GROUP_REFUSE } group_act;

typedef struct group_plan {
    group_act act;
    int row;                       /* JOIN, CLAIM: the group, an index into the rows */
    char key[GROUP_NAME_MAX + 1];  /* the group's key (CREATE: the new one) */
    char name[GROUP_NAME_MAX + 1]; /* CREATE: the name it is made with */
    int status;                    /* REFUSE: 400, 403 or 409 */
    const char *title;             /* REFUSE: the error, in short */
    char why[512];                 /* REFUSE: the reason, a user-facing sentence */
} group_plan;

/* What a registration's name is made of: the name the user means for a group of their own, and, for a name with a
 * '/', the OWNER/NAME it may mean. The strings are the query's parameters; "" where none applies. */
typedef struct group_ref {
    char own[GROUP_NAME_MAX + 1]; /* the name: `typed`, less "USER/" when it names the registering user */
    char own_key[GROUP_NAME_MAX + USER_MAX + 2]; /* USER/NAME of that name ("" when no attested user) */
    char owner[GROUP_NAME_MAX + 1];              /* `typed` = OWNER/NAME: its OWNER, else "" */
    char name[GROUP_NAME_MAX + 1];               /* ... and its NAME */
} group_ref;

/* group_shared_has - 1 when the text[] literal `shared` names `user` or "*". */
int group_shared_has(const char *shared, const char *user);

/* group_may_join - 0 when a run claimed as `who` may join a group owned as `g`; else -1 with the reason in `why` (a
 * user-facing sentence). The admin may always; on a group with an attested owner only an attested user equal to it
 * or shared with (or "*") may; on a group whose owner was only reported, the claim's user (attested, else
 * reported) must be the owner or shared with. */
int group_may_join(const group_owner *g, const run_claim *who, char *why, size_t cap);

/* group_ref_parse - the parts of registration name `typed` for the claim `who` into `out`. */
void group_ref_parse(const char *typed, const run_claim *who, group_ref *out);

/* group_plan_make - the registration rule above: what a run claimed as `who`, registering into `typed` (not a
 * reserved name), does, given the groups `rows[0..n)` that its name may mean (every group whose key is `typed`,
 * ref.own or ref.own_key, and the attested groups (ref.owner, ref.name) and (the user, ref.own)). Fills `out`. */
void group_plan_make(const char *typed, const run_claim *who, const group_row *rows, int n, group_plan *out);

/* group_reserved - 1 when `name` is one lockstepd makes, so that only its own rule admits runs into it: a
 * narrow's replay group (NAME.narrow-N, N digits: server/replay/narrow.c); else 0. */
int group_reserved(const char *name);

/* What a group is for, by its key: the names `lockstep twin` and `lockstep narrow` give declare it.
 *   GROUP_TWINS       twins that must match (an incident when they do not): every other name;
 *   GROUP_REPLAY      a narrow's replay group, NAME.narrow-N (group_reserved): its outcome is the narrow's verdict;
 *   GROUP_NOISE       NAME.noise, the noise replicas of `lockstep twin --noise` (docs/compare.md): runs declared
 *                     nondeterministic, whose differences are expected, so they are no evidence and raise no
 *                     divergence alert (docs/suspects.md);
 *   GROUP_EXPERIMENT  NAME.change, the changed runs of `lockstep twin --change`: twins among themselves.
 * A key OWNER/NAME is judged by its NAME's end the same way. Table-tested in tests/unit/test_groups.c. */
typedef enum group_kind { GROUP_TWINS, GROUP_REPLAY, GROUP_NOISE, GROUP_EXPERIMENT } group_kind;

/* group_kind_of - the kind of the group whose key (or name) is `key`. */
group_kind group_kind_of(const char *key);

/* group_kind_name - "twins", "replay", "noise" or "experiment" (a static string). */
const char *group_kind_name(group_kind k);

/* One run a narrow replays, as the replay rule sees it. */
typedef struct replay_source {
    const char *attested_user; /* NULL when not attested */
    const char *reported_user;
} replay_source;

/* group_may_replay - 0 when a run claimed as `who` may join the replay group of a narrow whose replayed runs are
 * `src[0..n)`, of a group whose owner is attested when `owner_attested`; else -1 with the reason in `why`. The
 * admin may always. The replays of an attested owner's group run as the replayed run's attested user (the narrow
 * helper submits them so): the run's attested user must be the attested user of one of the replayed runs. On a
 * group whose owner was only reported, the run's user (attested, else reported) must be the user (attested, else
 * reported) of one of them. */
int group_may_replay(const replay_source *src, int n, int owner_attested, const run_claim *who, char *why, size_t cap);

#endif /* SERVER_RULES_GROUP_RULE_H */
