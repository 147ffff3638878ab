/* groups.c - twin groups and their owners in PostgreSQL: admitting a registration's run, claims, sharing
 * (server/store/groups.h). */
#include "server/store/groups.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/db.h"

#define MAX_CANDIDATES 8 /* groups one registration's name can mean: 3 keys and 2 owned names */
#define MAX_SOURCES 64   /* users of a narrow's replayed runs read */

static group_set_aside_fn s_on_set_aside;

void store_groups_on_set_aside(group_set_aside_fn fn)
{
    s_on_set_aside = fn;
}

void store_groups_register(void)
{
    /* Every group a registration's name may mean (group_rule.h), locked: the keys typed, own name and
     * USER/NAME, and the attested groups (USER, own name) and (OWNER, NAME). */
    db_register("grp_candidates", "SELECT twin_group, owner, owner_attested, name, shared_with::text, "
                                  "(SELECT count(*) FROM runs r WHERE r.twin_group = g.twin_group) FROM twin_groups g "
                                  "WHERE twin_group IN ($1, $2, $3) OR (owner_attested AND ((owner = $4 AND name = $2) "
                                  "OR (owner = $5 AND name = $6))) ORDER BY twin_group LIMIT 8 FOR UPDATE");
    db_register("grp_create", "INSERT INTO twin_groups (twin_group, owner, owner_attested, name) VALUES ($1, $2, $3, "
                              "$4) ON CONFLICT DO NOTHING RETURNING 1");
    /* A claim: the owner's word is attested now; shares made while it was not are void. */
    db_register("grp_claim", "UPDATE twin_groups SET owner_attested = true, shared_with = '{}' WHERE twin_group = $1 "
                             "AND owner = $2 AND NOT owner_attested");
    db_register("grp_set_aside", "SELECT run_id FROM lockstep_group_set_aside($1, $2)");
    db_register("grp_ranks", "SELECT coalesce(max(ranks), 0) FROM runs WHERE twin_group = $1");
    /* A narrow's replay group: the narrow (its exact name first, else the registering user's USER/NAME) and the
     * group it narrows, whose ownership the replay group takes. */
    db_register("grp_narrow",
                "SELECT n.id, coalesce(g.owner, ''), coalesce(g.owner_attested, false), "
                "coalesce(g.shared_with::text, '{}'), coalesce(g.name, n.twin_group) || '.narrow-' || n.id, "
                "n.narrow_group FROM narrows n LEFT JOIN twin_groups g ON g.twin_group = n.twin_group "
                "WHERE n.narrow_group IN ($1, $2) ORDER BY n.narrow_group = $1 DESC LIMIT 1");
    db_register("grp_narrow_sources", "SELECT DISTINCT s.attested_user, s.user_name FROM narrow_placements p "
                                      "JOIN runs s ON s.run_key = p.source_run_key WHERE p.narrow_id = $1 LIMIT 64");
    db_register("grp_narrow_create", "INSERT INTO twin_groups (twin_group, owner, owner_attested, shared_with, name) "
                                     "VALUES ($1, $2, $3, $4::text[], $5) ON CONFLICT DO NOTHING");
    db_register("grp_lock", "SELECT (SELECT count(*) FROM runs r WHERE r.twin_group = g.twin_group) FROM twin_groups g "
                            "WHERE twin_group = $1 FOR UPDATE");
    db_register("grp_share",
                "UPDATE twin_groups g SET shared_with = ARRAY(SELECT json_array_elements_text($2::json)) WHERE "
                "twin_group = $1 AND ($4::boolean OR EXISTS "
                "(SELECT 1 FROM runs r WHERE r.twin_group = $1 AND r.job_id = $3 AND (CASE WHEN g.owner_attested "
                "THEN r.attested_user ELSE coalesce(r.attested_user, r.user_name) END) = g.owner)) "
                "RETURNING owner, owner_attested, array_to_json(shared_with)::text, name");
    db_register("grp_get", "SELECT owner, owner_attested, array_to_json(shared_with)::text, name FROM twin_groups "
                           "WHERE twin_group = $1");
}

/* refuse - `e` for a refusal of the registration. Returns -1. */
static int refuse(srv_error *e, int status, const char *title, const char *why)
{
    srv_error_set(e, title, why,
                  status == 403 ? "use a group name of your own, or have it shared and name it OWNER/NAME "
                                  "(docs/server.md, \"Twin groups and owners\")"
                                : "see docs/server.md, \"Twin groups and owners\"");
    e->status = status;
    return -1;
}

/* check_limit - -1 with `e` (409) when group `key`, holding `runs`, is full. */
static int check_limit(const char *key, long long runs, srv_error *e)
{
    if (runs < GROUP_MAX_RUNS)
        return 0;
    char detail[400];
    snprintf(detail, sizeof(detail), "twin group %.255s already has %lld runs; a group holds at most %d", key, runs,
             GROUP_MAX_RUNS);
    srv_error_set(e, "twin group is full", detail, "start a new group for more twins (docs/server.md, \"Limits\")");
    e->status = 409;
    return -1;
}

/* admit_replay - store_group_admit for a reserved name: a narrow's replay group, by group_may_replay. */
static int admit_replay(const char *typed, const run_claim *who, group_admission *adm, srv_error *e)
{
    char err[512], why[400], own[GROUP_NAME_MAX + USER_MAX + 2] = "";
    if (who->attested_user)
        snprintf(own, sizeof(own), "%s/%s", who->attested_user, typed);
    const char *pn[] = {typed, own};
    PGresult *r = db_exec_once("grp_narrow", 2, pn, err, sizeof(err));
    if (!r)
        return db_fail(e, "reading the narrow of the replay group", err);
    if (PQntuples(r) != 1) {
        PQclear(r);
        snprintf(why, sizeof(why),
                 "\"%.255s\" names a replay group of lockstep narrow (NAME.narrow-N), and no narrow made it", typed);
        return refuse(e, 403, "twin group name reserved", why);
    }
    /* everything used after the result is freed is copied out of it */
    char id[32], owner[USER_MAX + 1], shared[GROUP_MAX_SHARED * (USER_MAX + 3) + 3], name[GROUP_NAME_MAX + 32];
    snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
    snprintf(owner, sizeof(owner), "%s", PQgetvalue(r, 0, 1));
    int attested = PQgetvalue(r, 0, 2)[0] == 't';
    snprintf(shared, sizeof(shared), "%s", PQgetvalue(r, 0, 3));
    snprintf(name, sizeof(name), "%s", PQgetvalue(r, 0, 4));
    snprintf(adm->key, sizeof(adm->key), "%s", PQgetvalue(r, 0, 5));
    PQclear(r);
    const char *ps[] = {id};
    r = db_exec_once("grp_narrow_sources", 1, ps, err, sizeof(err));
    if (!r)
        return db_fail(e, "reading the runs the narrow replays", err);
    replay_source src[MAX_SOURCES];
    int n = PQntuples(r) < MAX_SOURCES ? PQntuples(r) : MAX_SOURCES;
    for (int i = 0; i < n; i++)
        src[i] = (replay_source){PQgetisnull(r, i, 0) ? NULL : PQgetvalue(r, i, 0), PQgetvalue(r, i, 1)};
    int ok = group_may_replay(src, n, attested, who, why, sizeof(why)) == 0;
    PQclear(r);
    if (!ok)
        return refuse(e, 403, "twin group belongs to another user", why);
    const char *pc[] = {adm->key, owner, attested ? "true" : "false", shared, name};
    r = db_exec_once("grp_narrow_create", 5, pc, err, sizeof(err));
    if (!r)
        return db_fail(e, "creating the replay group", err);
    PQclear(r);
    const char *pl[] = {adm->key};
    r = db_exec_once("grp_lock", 1, pl, err, sizeof(err));
    if (!r)
        return db_fail(e, "reading the replay group", err);
    long long runs = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    return check_limit(adm->key, runs, e);
}

/* claim - group `key` (holding `runs`) becomes `owner`'s as attested; the runs not attested as the owner are set
 * aside, and the fleet told. Returns 0 with `adm` filled, -1 with `e`. */
static int claim(const char *key, const char *owner, long long runs, group_admission *adm, srv_error *e)
{
    char err[512];
    const char *p[] = {key, owner};
    PGresult *r = db_exec_once("grp_claim", 2, p, err, sizeof(err));
    if (!r)
        return db_fail(e, "claiming the twin group", err);
    PQclear(r);
    r = db_exec_once("grp_set_aside", 2, p, err, sizeof(err));
    if (!r)
        return db_fail(e, "setting aside the runs of others", err);
    adm->claimed = 1;
    adm->set_aside = PQntuples(r);
    for (int i = 0; i < adm->set_aside && i < GROUP_MAX_RUNS; i++)
        snprintf(adm->set_aside_ids[i], sizeof(adm->set_aside_ids[i]), "%s", PQgetvalue(r, i, 0));
    PQclear(r);
    if (adm->set_aside > 0) {
        char why[600];
        snprintf(why, sizeof(why),
                 "%.64s claimed twin group %.255s with an attested run: %d run%s not attested as %.64s set aside",
                 owner, key, adm->set_aside, adm->set_aside == 1 ? "" : "s", owner);
        if (s_on_set_aside && s_on_set_aside(key, why, err, sizeof(err)) < 0)
            return db_fail(e, "taking back the evidence of the runs set aside", err);
        const char *pk[] = {key};
        r = db_exec_once("grp_ranks", 1, pk, err, sizeof(err));
        if (!r)
            return db_fail(e, "reading the twin group", err);
        adm->ranks = atoi(PQgetvalue(r, 0, 0));
        PQclear(r);
    }
    return check_limit(key, runs - adm->set_aside, e);
}

/* plan_once - read the groups `typed` may mean, locked, and decide (group_plan_make). Returns 0 with `plan` and
 * `*runs` (the chosen group's run count), -1 with `e` on a database error. */
static int plan_once(const char *typed, const run_claim *who, group_plan *plan, long long *runs, srv_error *e)
{
    char err[512];
    group_ref ref;
    group_ref_parse(typed, who, &ref);
    const char *p[] = {typed, ref.own, ref.own_key, who->attested_user ? who->attested_user : "", ref.owner, ref.name};
    PGresult *r = db_exec_once("grp_candidates", 6, p, err, sizeof(err));
    if (!r)
        return db_fail(e, "reading the twin groups of the name", err);
    group_row rows[MAX_CANDIDATES];
    int n = PQntuples(r) < MAX_CANDIDATES ? PQntuples(r) : MAX_CANDIDATES;
    for (int i = 0; i < n; i++)
        rows[i] =
            (group_row){PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),           PQgetvalue(r, i, 3),
                        PQgetvalue(r, i, 4), PQgetvalue(r, i, 2)[0] == 't', strtoll(PQgetvalue(r, i, 5), NULL, 10)};
    group_plan_make(typed, who, rows, n, plan);
    *runs = plan->row >= 0 ? rows[plan->row].runs : 0;
    PQclear(r); /* the plan holds copies of what it names */
    return 0;
}

int store_group_admit(const char *typed, const run_claim *who, group_admission *adm, srv_error *e)
{
    memset(adm, 0, sizeof(*adm));
    if (group_reserved(typed))
        return admit_replay(typed, who, adm, e);
    char err[512];
    const char *creator = who->attested_user ? who->attested_user : who->reported_user;
    /* A group made by another registration between the look and the insert: look again (it is there then). */
    for (int attempt = 0; attempt < 2; attempt++) {
        group_plan plan;
        long long runs = 0;
        if (plan_once(typed, who, &plan, &runs, e) < 0)
            return -1;
        snprintf(adm->key, sizeof(adm->key), "%s", plan.key);
        switch (plan.act) {
        case GROUP_REFUSE: return refuse(e, plan.status, plan.title, plan.why);
        case GROUP_JOIN: return check_limit(plan.key, runs, e);
        case GROUP_CLAIM: return claim(plan.key, who->attested_user, runs, adm, e);
        case GROUP_CREATE: {
            const char *pc[] = {plan.key, creator ? creator : "", who->attested_user ? "true" : "false", plan.name};
            PGresult *r = db_exec_once("grp_create", 4, pc, err, sizeof(err));
            if (!r)
                return db_fail(e, "creating the twin group", err);
            int made = PQntuples(r) == 1;
            PQclear(r);
            if (made)
                return 0;
            break;
        }
        }
    }
    return db_fail(e, "creating the twin group", "another registration made and changed it meanwhile; retry");
}

int store_group_share(const char *key, const char *users_literal, const char *job_id, int admin, PGresult **out,
                      srv_error *e)
{
    char err[512];
    const char *p[] = {key, users_literal, job_id ? job_id : "", admin ? "true" : "false"};
    PGresult *r = db_exec("grp_share", 4, p, err, sizeof(err));
    if (!r)
        return db_fail(e, "sharing the twin group", err);
    if (PQntuples(r) == 1) {
        *out = r;
        return 1;
    }
    PQclear(r);
    PGresult *g = store_group_get(key, e);
    if (!g)
        return -1;
    int known = PQntuples(g) == 1;
    PQclear(g);
    if (!known)
        return 0;
    srv_error_set(e, "not the group's owner",
                  "only a job of the group's owner that has a run in it, or the admin, "
                  "may share a twin group",
                  "send the token of one of the owner's jobs in the group, or the admin token");
    e->status = 403;
    return -1;
}

PGresult *store_group_get(const char *key, srv_error *e)
{
    char err[512];
    const char *p[] = {key};
    PGresult *r = db_exec("grp_get", 1, p, err, sizeof(err));
    if (!r)
        db_fail(e, "reading the twin group", err);
    return r;
}
