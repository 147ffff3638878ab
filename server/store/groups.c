/* groups.c - twin groups and their owners: who may add a run to a group, sharing (server/store/groups.h). */
#include "server/store/groups.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/limits.h"
#include "server/store/db.h"

int group_shared_has(const char *shared, const char *user)
{
    /* PostgreSQL's text[] output: {a,b,"c d"}; names here are one line of text without '"' or ',' in practice,
     * but quoted elements are handled. */
    const char *p = shared && *shared == '{' ? shared + 1 : "";
    size_t ul = user ? strlen(user) : 0;
    while (*p && *p != '}') {
        char buf[512];
        size_t n = 0;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1])
                    p++;
                if (n + 1 < sizeof(buf))
                    buf[n++] = *p;
            }
            if (*p == '"')
                p++;
        } else {
            for (; *p && *p != ',' && *p != '}'; p++)
                if (n + 1 < sizeof(buf))
                    buf[n++] = *p;
        }
        buf[n] = 0;
        if (!strcmp(buf, "*") || (user && n == ul && !strcmp(buf, user)))
            return 1;
        if (*p == ',')
            p++;
    }
    return 0;
}

int group_may_join(const group_owner *g, const run_claim *who, char *why, size_t cap)
{
    if (who->admin)
        return 0;
    const char *user = g->owner_attested ? who->attested_user
                                         : (who->attested_user ? who->attested_user : who->reported_user);
    if (g->owner_attested && !user) {
        snprintf(why, cap,
                 "twin group belongs to %.64s (attested); this run's user is not attested, so it cannot join "
                 "(register it through the SPANK plugin, or ask %.64s or the admin to share the group with anyone)",
                 g->owner, g->owner);
        return -1;
    }
    if (user && (!strcmp(user, g->owner) || group_shared_has(g->shared, user)))
        return 0;
    snprintf(why, cap, "twin group belongs to %.64s%s; runs of %.64s may join only when %.64s or the admin shares it",
             g->owner, g->owner_attested ? " (attested)" : "", user && *user ? user : "(no user)", g->owner);
    return -1;
}

void store_groups_register(void)
{
    db_register("grp_create", "INSERT INTO twin_groups (twin_group, owner, owner_attested) VALUES ($1, $2, $3) "
                              "ON CONFLICT DO NOTHING");
    db_register("grp_admit", "SELECT owner, owner_attested, shared_with::text, "
                             "(SELECT count(*) FROM runs WHERE twin_group = $1) FROM twin_groups "
                             "WHERE twin_group = $1 FOR UPDATE");
    db_register("grp_claim", "UPDATE twin_groups SET owner_attested = true WHERE twin_group = $1 AND owner = $2");
    db_register("grp_share",
                "UPDATE twin_groups g SET shared_with = ARRAY(SELECT json_array_elements_text($2::json)) WHERE twin_group = $1 AND ($4::boolean OR EXISTS "
                "(SELECT 1 FROM runs r WHERE r.twin_group = $1 AND r.job_id = $3 AND (CASE WHEN g.owner_attested "
                "THEN r.attested_user ELSE coalesce(r.attested_user, r.user_name) END) = g.owner)) "
                "RETURNING owner, owner_attested, array_to_json(shared_with)::text");
    db_register("grp_get", "SELECT owner, owner_attested, array_to_json(shared_with)::text FROM twin_groups "
                           "WHERE twin_group = $1");
}

int store_group_admit(const char *group, const run_claim *who, srv_error *e)
{
    char err[512], why[400];
    const char *creator = who->attested_user ? who->attested_user : who->reported_user;
    const char *pc[] = {group, creator ? creator : "", who->attested_user ? "true" : "false"};
    PGresult *r = db_exec_once("grp_create", 3, pc, err, sizeof(err));
    if (!r)
        return db_fail(e, "creating the twin group", err);
    PQclear(r);
    const char *pg[] = {group};
    r = db_exec_once("grp_admit", 1, pg, err, sizeof(err));
    if (!r)
        return db_fail(e, "reading the twin group's owner", err);
    if (PQntuples(r) != 1) {
        PQclear(r);
        return db_fail(e, "reading the twin group's owner", "the group's row is missing");
    }
    group_owner g = {PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1)[0] == 't', PQgetvalue(r, 0, 2)};
    long long runs = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
    if (group_may_join(&g, who, why, sizeof(why)) < 0) {
        PQclear(r);
        srv_error_set(e, "twin group belongs to another user", why,
                      "use a group name of your own, or have it shared: POST /api/v1/twins/{group}/share");
        e->status = 403;
        return -1;
    }
    /* What the claim needs, copied before the result that holds it is freed. */
    char owner[USER_MAX + 1];
    snprintf(owner, sizeof(owner), "%s", g.owner);
    int claim = !g.owner_attested && who->attested_user && !strcmp(who->attested_user, owner);
    PQclear(r);
    if (runs >= GROUP_MAX_RUNS) {
        char detail[400];
        snprintf(detail, sizeof(detail), "twin group %.255s already has %lld runs; a group holds at most %d", group,
                 runs, GROUP_MAX_RUNS);
        srv_error_set(e, "twin group is full", detail, "start a new group for more twins (docs/server.md, \"Limits\")");
        e->status = 409;
        return -1;
    }
    if (claim) { /* the owner's first attested run makes the ownership attested */
        const char *pl[] = {group, owner};
        r = db_exec_once("grp_claim", 2, pl, err, sizeof(err));
        if (!r)
            return db_fail(e, "claiming the twin group", err);
        PQclear(r);
    }
    return 0;
}

int store_group_share(const char *group, const char *users_literal, const char *job_id, int admin, PGresult **out,
                      srv_error *e)
{
    char err[512];
    const char *p[] = {group, users_literal, job_id ? job_id : "", admin ? "true" : "false"};
    PGresult *r = db_exec("grp_share", 4, p, err, sizeof(err));
    if (!r)
        return db_fail(e, "sharing the twin group", err);
    if (PQntuples(r) == 1) {
        *out = r;
        return 1;
    }
    PQclear(r);
    PGresult *g = store_group_get(group, e);
    if (!g)
        return -1;
    int known = PQntuples(g) == 1;
    PQclear(g);
    if (!known)
        return 0;
    srv_error_set(e, "not the group's owner", "only a job of the group's owner that has a run in it, or the admin, "
                  "may share a twin group", "send the token of one of the owner's jobs in the group, or the admin token");
    e->status = 403;
    return -1;
}

PGresult *store_group_get(const char *group, srv_error *e)
{
    char err[512];
    const char *p[] = {group};
    PGresult *r = db_exec("grp_get", 1, p, err, sizeof(err));
    if (!r)
        db_fail(e, "reading the twin group", err);
    return r;
}
