/* group_rule.c - who may add a run to which twin group, and which group a registration's name means
 * (server/rules/group_rule.h). */
#include "server/rules/group_rule.h"

#include <stdio.h>
#include <string.h>

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
    const char *user =
        g->owner_attested ? who->attested_user : (who->attested_user ? who->attested_user : who->reported_user);
    if (g->owner_attested && !user) {
        snprintf(why, cap,
                 "twin group belongs to %.64s (attested); this run's user is not attested, so it cannot join "
                 "(register it through the SPANK plugin, or have the admin register it)",
                 g->owner);
        return -1;
    }
    if (user && (!strcmp(user, g->owner) || group_shared_has(g->shared, user)))
        return 0;
    snprintf(why, cap, "twin group belongs to %.64s%s; runs of %.64s may join only when %.64s or the admin shares it",
             g->owner, g->owner_attested ? " (attested)" : "", user && *user ? user : "(no user)", g->owner);
    return -1;
}

void group_ref_parse(const char *typed, const run_claim *who, group_ref *out)
{
    memset(out, 0, sizeof(*out));
    const char *u = who->attested_user, *slash = strchr(typed, '/');
    size_t ul = u ? strlen(u) : 0;
    /* USER/NAME written by USER is USER's own NAME */
    const char *own = u && ul && !strncmp(typed, u, ul) && typed[ul] == '/' && typed[ul + 1] ? typed + ul + 1 : typed;
    snprintf(out->own, sizeof(out->own), "%s", own);
    if (u)
        snprintf(out->own_key, sizeof(out->own_key), "%s/%s", u, own);
    if (slash && slash > typed && slash[1] && (size_t)(slash - typed) < sizeof(out->owner)) {
        snprintf(out->owner, sizeof(out->owner), "%.*s", (int)(slash - typed), typed);
        snprintf(out->name, sizeof(out->name), "%s", slash + 1);
    }
}

/* find_key - the index of the row of group `key`, or -1. */
static int find_key(const group_row *rows, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].key, key))
            return i;
    return -1;
}

/* find_owned - the index of the attested group of `owner` named `name`, or -1. */
static int find_owned(const group_row *rows, int n, const char *owner, const char *name)
{
    for (int i = 0; owner && *owner && i < n; i++)
        if (rows[i].owner_attested && !strcmp(rows[i].owner, owner) && !strcmp(rows[i].name, name))
            return i;
    return -1;
}

static void refuse(group_plan *out, int status, const char *title, const char *why)
{
    out->act = GROUP_REFUSE;
    out->status = status;
    out->title = title;
    snprintf(out->why, sizeof(out->why), "%s", why);
}

/* join - JOIN row `i` when the ownership rule lets `who` in, else refuse 403 with its reason. */
static void join(const group_row *rows, int i, const run_claim *who, group_plan *out)
{
    group_owner g = {rows[i].owner, rows[i].owner_attested, rows[i].shared};
    char why[400];
    out->row = i;
    snprintf(out->key, sizeof(out->key), "%s", rows[i].key);
    if (group_may_join(&g, who, why, sizeof(why)) < 0)
        refuse(out, 403, "twin group belongs to another user", why);
    else
        out->act = GROUP_JOIN;
}

/* plan_attested - the rule for a run whose user `u` is attested (by slurmstepd or the admin). */
static void plan_attested(const group_ref *ref, const char *u, const run_claim *who, const group_row *rows, int n,
                          group_plan *out)
{
    int i = find_owned(rows, n, u, ref->own);
    if (i >= 0) /* 1. the user's own group */
        return join(rows, i, who, out);
    if (*ref->owner && strcmp(ref->owner, u) && (i = find_owned(rows, n, ref->owner, ref->name)) >= 0)
        return join(rows, i, who, out); /* 2. another owner's OWNER/NAME: by its shares */
    i = find_key(rows, n, ref->own);
    if (i >= 0 && !rows[i].owner_attested && !strcmp(rows[i].owner, u)) { /* 3. made before it was attested */
        out->act = GROUP_CLAIM;
        out->row = i;
        snprintf(out->key, sizeof(out->key), "%s", rows[i].key);
        return;
    }
    /* 4. a new group: the name itself while no group holds it (and it holds no '/'), else OWNER/NAME */
    snprintf(out->name, sizeof(out->name), "%s", ref->own);
    if (!strchr(ref->own, '/') && i < 0) {
        out->act = GROUP_CREATE;
        snprintf(out->key, sizeof(out->key), "%s", ref->own);
        return;
    }
    char why[512];
    if (strlen(ref->own_key) > GROUP_NAME_MAX) {
        snprintf(why, sizeof(why),
                 "twin group \"%.64s\" is another user's, so yours is %.64s/%.64s..., and such a name may be at "
                 "most %d bytes",
                 ref->own, u, ref->own, GROUP_NAME_MAX);
        return refuse(out, 400, "twin group name too long", why);
    }
    if (find_key(rows, n, ref->own_key) >= 0) {
        snprintf(why, sizeof(why),
                 "the name %.300s is held by a group made before twin groups were scoped to their owners; "
                 "use another name for this experiment",
                 ref->own_key);
        return refuse(out, 409, "twin group name taken", why);
    }
    out->act = GROUP_CREATE;
    snprintf(out->key, sizeof(out->key), "%s", ref->own_key);
}

void group_plan_make(const char *typed, const run_claim *who, const group_row *rows, int n, group_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->row = -1;
    group_ref ref;
    group_ref_parse(typed, who, &ref);
    if (who->attested_user)
        return plan_attested(&ref, who->attested_user, who, rows, n, out);
    int i = find_key(rows, n, typed);
    if (i >= 0)
        return join(rows, i, who, out);
    if (strchr(typed, '/') && !who->admin)
        return refuse(out, 403, "twin group name reserved",
                      "a twin group name with '/' is an attested owner's OWNER/NAME; this run's user is not "
                      "attested, so it cannot make one (register it through the SPANK plugin, or use a name "
                      "without '/')");
    out->act = GROUP_CREATE;
    snprintf(out->key, sizeof(out->key), "%s", typed);
    snprintf(out->name, sizeof(out->name), "%s", typed);
}

int group_reserved(const char *name)
{
    static const char suffix[] = ".narrow-";
    const char *end = name + strlen(name), *d = end;
    while (d > name && d[-1] >= '0' && d[-1] <= '9')
        d--;
    size_t sl = sizeof(suffix) - 1;
    return d < end && (size_t)(d - name) > sl && !strncmp(d - sl, suffix, sl);
}

/* ends_with - 1 when `s` is longer than `suffix` and ends with it. */
static int ends_with(const char *s, const char *suffix)
{
    size_t l = strlen(s), sl = strlen(suffix);
    return l > sl && !strcmp(s + l - sl, suffix);
}

group_kind group_kind_of(const char *key)
{
    if (group_reserved(key))
        return GROUP_REPLAY;
    if (ends_with(key, ".noise") && key[strlen(key) - 7] != '/')
        return GROUP_NOISE;
    if (ends_with(key, ".change") && key[strlen(key) - 8] != '/')
        return GROUP_EXPERIMENT;
    return GROUP_TWINS;
}

const char *group_kind_name(group_kind k)
{
    return k == GROUP_REPLAY ? "replay" : k == GROUP_NOISE ? "noise" : k == GROUP_EXPERIMENT ? "experiment" : "twins";
}

int group_may_replay(const replay_source *src, int n, int owner_attested, const run_claim *who, char *why, size_t cap)
{
    if (who->admin)
        return 0;
    const char *user =
        owner_attested ? who->attested_user : (who->attested_user ? who->attested_user : who->reported_user);
    for (int i = 0; user && i < n; i++) {
        const char *theirs = owner_attested ? src[i].attested_user
                                            : (src[i].attested_user ? src[i].attested_user : src[i].reported_user);
        if (theirs && *theirs && !strcmp(theirs, user))
            return 0;
    }
    if (owner_attested && !user)
        snprintf(why, cap,
                 "a narrow's replay group takes only runs attested as the user of a run it replays; this "
                 "run's user is not attested (lockstep narrow submits the replays through the SPANK plugin)");
    else
        snprintf(why, cap,
                 "a narrow's replay group takes only runs of the users whose runs it replays; %.64s%s is "
                 "not one of them",
                 user && *user ? user : "(no user)", owner_attested ? " (attested)" : "");
    return -1;
}
