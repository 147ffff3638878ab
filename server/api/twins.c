/* twins.c - the twin group read endpoints: the list of groups, one group's status, first divergence and classification, per-step map, manifest diff. */
#include "server/api/twins.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/recmatch.h"
#include "common/text.h"
#include "server/api/group.h"
#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/compare/verdict.h"
#include "server/fleet/narrow.h"
#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/http/auth.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/batch.h"
#include "server/store/db.h"
#include "server/store/groups.h"

/* ulp_of - the ULP distance between two scalars given as value_bits hex strings of `dtype` (a name), as JSON:
 * null when it does not apply (no value on one side, a NaN, an unknown dtype). */
static json_t *ulp_of(const char *a, const char *b, const char *dtype)
{
    uint64_t x, y;
    int dt = dtype ? dtype_parse(dtype) : -1;
    if (!a || !b || dt < 0 || dt == LS_BYTES || batch_parse_hex64(a, &x) < 0 || batch_parse_hex64(b, &y) < 0)
        return json_null();
    uint64_t d = dtype_ulp_distance((unsigned)dt, x, y);
    return d == UINT64_MAX ? json_null() : json_integer((json_int_t)d);
}

/* add_ulps - give each run entry of a divergence its "ulp" distance from the reference entry: the first
 * run of the majority when there is one, else the first run that holds the record. */
static void add_ulps(json_t *runs)
{
    json_t *ref = NULL, *e;
    size_t i;
    json_array_foreach(runs, i, e) if (!ref && json_is_true(json_object_get(e, "majority")) &&
                                       json_is_true(json_object_get(e, "present"))) ref = e;
    json_array_foreach(runs, i, e) if (!ref && json_is_true(json_object_get(e, "present"))) ref = e;
    const char *rb = ref ? json_string_value(json_object_get(ref, "value_bits")) : NULL;
    json_array_foreach(runs, i, e)
    {
        const char *vb = json_string_value(json_object_get(e, "value_bits"));
        json_object_set_new(e, "ulp", e == ref ? json_null()
                                               : ulp_of(rb, vb, json_string_value(json_object_get(e, "dtype"))));
    }
}

/* classification_of - what the fleet concluded of a group (docs/suspects.md) from row `i` of a CLASS_COLS
 * result: {"class": hardware | software | none, "code": the rule that decided it, "reason": why, in words,
 * "evaluated_at"}; JSON null when i < 0 (not evaluated yet: it has not diverged and settled, nor have all its
 * runs ended). Not to be confused with the first divergence's "cause" (where and how the runs parted) nor
 * with a replay's verdict. */
#define CLASS_COLS "class, reason_code, reason, " TS("evaluated_at")
static json_t *classification_of(PGresult *r, int i)
{
    if (i < 0)
        return json_null();
    return json_pack("{s:s, s:s, s:s, s:s}", "class", PQgetvalue(r, i, 0), "code", PQgetvalue(r, i, 1), "reason",
                     PQgetvalue(r, i, 2), "evaluated_at", PQgetvalue(r, i, 3));
}

/* evidence_of - what the group's evidence against its hardware follows, from row `i` of grp_classification:
 * {"from": "classification" or "replay", "narrow": the narrow whose verdict it follows or null, "reason"}; JSON
 * null when i < 0. A replay verdict decides the weights beside the classification, which it leaves unchanged. */
static json_t *evidence_of(PGresult *r, int i)
{
    if (i < 0)
        return json_null();
    const char *n = PQgetvalue(r, i, 4);
    return json_pack("{s:s, s:o, s:s}", "from", *n ? "replay" : "classification", "narrow",
                     *n ? json_integer(strtoll(n, NULL, 10)) : json_null(), "reason", PQgetvalue(r, i, 5));
}

/* restores_json - every restored state block of the group checked so far, against which twin and how. */
static json_t *restores_json(PGresult *c)
{
    json_t *a = json_array();
    for (int i = 0; i < PQntuples(c); i++) {
        json_t *o = json_pack("{s:s, s:i, s:I, s:s, s:s, s:s, s:o, s:o, s:o, s:i, s:i}", "run_id", PQgetvalue(c, i, 0),
                              "rank", atoi(PQgetvalue(c, i, 1)), "step",
                              (json_int_t)strtoll(PQgetvalue(c, i, 2), NULL, 10), "reference_run_id",
                              PQgetvalue(c, i, 3), "reference", PQgetvalue(c, i, 4), "status", PQgetvalue(c, i, 5),
                              "entry", pg_str(c, i, 6), "occurrence", pg_int(c, i, 7), "diff", pg_str(c, i, 8),
                              "compared", atoi(PQgetvalue(c, i, 9)), "unverified", atoi(PQgetvalue(c, i, 10)));
        json_t *d = PQgetisnull(c, i, 11) ? NULL : json_loads(PQgetvalue(c, i, 11), 0, NULL);
        json_object_set_new(o, "restored_entry", d ? json_incref(json_object_get(d, "restored")) : json_null());
        json_object_set_new(o, "reference_entry", d ? json_incref(json_object_get(d, "reference")) : json_null());
        json_decref(d);
        json_array_append_new(a, o);
    }
    return a;
}

/* aside_and_namesakes - "set_aside": the runs set aside from group `key` when its owner claimed it (at most
 * GROUP_MAX_RUNS, oldest first: run_id, job_id, user, attested_user, reason, at), and "same_name": the keys of the
 * other groups of its name (each owner's own: docs/server.md, "Twin groups and owners"), into `o`. Returns 0, or -1
 * with the database's message. */
static int aside_and_namesakes(const char *key, json_t *o, char *err, size_t cap)
{
    const char *p[] = {key};
    PGresult *r = db_exec("grp_set_aside_runs", 1, p, err, cap);
    PGresult *s = r ? db_exec("grp_namesakes", 1, p, err, cap) : NULL;
    if (!s) {
        PQclear(r);
        return -1;
    }
    json_t *aside = json_array(), *same = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(aside,
                              json_pack("{s:s, s:s, s:s, s:o, s:s, s:s}", "run_id", PQgetvalue(r, i, 0), "job_id",
                                        PQgetvalue(r, i, 1), "user", PQgetvalue(r, i, 2), "attested_user",
                                        pg_str(r, i, 3), "reason", PQgetvalue(r, i, 4), "at", PQgetvalue(r, i, 5)));
    for (int i = 0; i < PQntuples(s); i++)
        json_array_append_new(same, json_string(PQgetvalue(s, i, 0)));
    PQclear(r);
    PQclear(s);
    json_object_set_new(o, "set_aside", aside);
    json_object_set_new(o, "same_name", same);
    return 0;
}

/* read_twins - GET /api/v1/twins/{group}: the group's status (with why), its runs and their exits, its first
 * divergence with cause, origin ranks and call site, each rank's first divergence (server/compare/verdict.h),
 * and the fleet's classification. */
static enum MHD_Result read_twins(http_req *req, char **args)
{
    char err[512], group[GROUP_NAME_MAX + 1];
    if (!group_find(req, args[0], group, sizeof(group)))
        return MHD_YES;
    grp_verdict v;
    int got = verdict_load(group, &v, err, sizeof(err));
    if (got < 0)
        return http_reply_db_down(req, err);
    if (got == 0) {
        char detail[320];
        snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", args[0]);
        return http_reply_error(req, 404, "unknown twin group", detail, "list the twin groups with GET /api/v1/twins");
    }
    const char *p[] = {group};
    PGresult *c = db_exec("grp_classification", 1, p, err, sizeof(err));
    srv_error e;
    PGresult *own = c ? store_group_get(group, &e) : NULL;
    if (!own) {
        PQclear(c);
        verdict_release(&v);
        return http_reply_db_down(req, c ? e.detail : err);
    }
    PGresult *rs = db_exec("grp_restores", 1, p, err, sizeof(err));
    if (!rs) {
        PQclear(c);
        PQclear(own);
        verdict_release(&v);
        return http_reply_db_down(req, err);
    }
    size_t i;
    json_t *d;
    json_array_foreach(v.per_rank, i, d) add_ulps(json_object_get(d, "runs"));
    if (json_is_object(v.first))
        add_ulps(json_object_get(v.first, "runs"));
    /* runs of different rank counts are compared on logical tensors (server/compare/logical.c) */
    int logical = 0;
    json_int_t ranks0 = json_integer_value(json_object_get(json_array_get(v.runs, 0), "ranks"));
    json_t *run;
    json_array_foreach(v.runs, i, run) logical |= json_integer_value(json_object_get(run, "ranks")) != ranks0;
    json_t *o = json_pack("{s:s, s:s, s:s, s:O, s:O, s:O, s:{s:O, s:O}, s:o, s:o, s:b}", "group", group, "status",
                          v.status, "status_reason", v.status_why, "runs", v.runs, "first_divergence", v.first,
                          "per_rank", v.per_rank, "manifest_diff", "explains", json_object_get(v.mdiff, "explains"),
                          "summary", json_object_get(v.mdiff, "summary"), "classification",
                          classification_of(c, PQntuples(c) ? 0 : -1), "restores", restores_json(rs), "logical",
                          logical);
    /* Digest streaming: steps whose records agents hold back and lockstepd asked for, not received yet (an agent
     * that ended keeps them in its spool: `lockstep replay --steps asked DIR` sends them). */
    PGresult *w = db_exec("grp_awaiting", 1, p, err, sizeof(err));
    if (w && PQntuples(w) > 0) {
        json_t *aw = json_array();
        for (int k = 0; k < PQntuples(w); k++)
            json_array_append_new(aw, json_pack("{s:s, s:i, s:I, s:s}", "run_id", PQgetvalue(w, k, 0), "rank",
                                                atoi(PQgetvalue(w, k, 1)), "step",
                                                (json_int_t)strtoll(PQgetvalue(w, k, 2), NULL, 10), "requested_at",
                                                PQgetvalue(w, k, 3)));
        json_object_set_new(o, "awaiting_records", aw);
    }
    PQclear(w);
    /* Steps the comparison stopped at because retention removed a run's records there. */
    w = db_exec("grp_removed", 1, p, err, sizeof(err));
    if (w && PQntuples(w) > 0) {
        json_t *rm = json_array();
        for (int k = 0; k < PQntuples(w); k++)
            json_array_append_new(rm, json_pack("{s:s, s:i, s:I}", "run_id", PQgetvalue(w, k, 0), "rank",
                                                atoi(PQgetvalue(w, k, 1)), "step",
                                                (json_int_t)strtoll(PQgetvalue(w, k, 2), NULL, 10)));
        json_object_set_new(o, "records_removed", rm);
    }
    PQclear(w);
    json_object_set_new(o, "evidence", evidence_of(c, PQntuples(c) ? 0 : -1));
    json_object_set_new(o, "runs_total", json_integer((json_int_t)v.runs_total));
    if (PQntuples(own) == 1) {
        json_t *shared = json_loads(PQgetvalue(own, 0, 2), 0, NULL);
        json_object_set_new(o, "owner", json_pack("{s:s, s:b, s:o}", "user", PQgetvalue(own, 0, 0), "attested",
                                                  PQgetvalue(own, 0, 1)[0] == 't', "shared_with",
                                                  shared ? shared : json_array()));
        json_object_set_new(o, "name", json_string(PQgetvalue(own, 0, 3)));
    } else {
        json_object_set_new(o, "owner", json_null());
        json_object_set_new(o, "name", json_string(group));
    }
    PQclear(own);
    if (aside_and_namesakes(group, o, err, sizeof(err)) < 0) {
        PQclear(c);
        PQclear(rs);
        verdict_release(&v);
        json_decref(o);
        return http_reply_db_down(req, err);
    }
    PQclear(c);
    PQclear(rs);
    verdict_release(&v);
    /* Replays: the group's newest narrow and its verdict, or the group it replays (server/fleet/narrow.h). */
    if (narrow_twin_fields(group, o, err, sizeof(err)) < 0) {
        json_decref(o);
        return http_reply_db_down(req, err);
    }
    return http_reply_json(req, 200, o);
}

/* The twin-group list: candidates are read newest first (by their newest run) with the SQL filters applied;
 * a status filter is applied to them with twin_status (the facts of LIST_SCAN_CHUNK candidates at a time from
 * verdict_facts), looking at most at LIST_SCAN_MAX candidates per request. The cursor is a position among the
 * candidates. */
#define LIST_SCAN_CHUNK 200
#define LIST_SCAN_MAX 5000
#define LIST_MAX 500

/* One group of the page being built. */
typedef struct list_group {
    char *name;
    twin_facts facts;
} list_group;

/* list_item - the page's JSON item of group `lg`: its status by the one rule; runs, users, times, first
 * divergence, classification and the newest replay verdict are filled in later. */
static json_t *list_item(const list_group *lg)
{
    char why[512];
    const char *status = twin_status(&lg->facts, why, sizeof(why));
    return json_pack("{s:s, s:s, s:n, s:s, s:s, s:i, s:[], s:[], s:n, s:n, s:n, s:n, s:n}", "group", lg->name, "name",
                     lg->name, "owner", "status", status, "status_reason", why, "run_count", 0, "runs", "users",
                     "created_at", "last_run_at", "first_divergence", "classification", "replay");
}

/* fill_items - runs, users, times and classification of every item of `items` (an object keyed by group
 * name), from batched reads; the first divergence (the object GET /twins/G shows, with its cause, origin
 * ranks and call site) of every group of `page` that holds one, from verdict_load. Returns 0, or -1 with the
 * database's message. */
static int fill_items(json_t *items, const char *names_json, const list_group *page, int n, char *err, size_t cap)
{
    const char *p[] = {names_json};
    PGresult *r = db_exec("twins_runs", 1, p, err, cap);
    PGresult *v = r ? db_exec("twins_classes", 1, p, err, cap) : NULL;
    PGresult *nr = v ? db_exec("twins_replays", 1, p, err, cap) : NULL;
    PGresult *ow = nr ? db_exec("twins_owners", 1, p, err, cap) : NULL;
    if (!ow) {
        PQclear(r);
        PQclear(v);
        PQclear(nr);
        return -1;
    }
    /* each group's name and owner (a group holds its name as its key unless another owner's holds it) */
    for (int i = 0; i < PQntuples(ow); i++) {
        json_t *it = json_object_get(items, PQgetvalue(ow, i, 0));
        if (!it)
            continue;
        json_object_set_new(it, "name", json_string(PQgetvalue(ow, i, 1)));
        json_object_set_new(it, "owner", json_pack("{s:s, s:b}", "user", PQgetvalue(ow, i, 2), "attested",
                                                   PQgetvalue(ow, i, 3)[0] == 't'));
    }
    PQclear(ow);
    /* each group's newest narrow (lockstep narrow): its state and verdict, beside the classification */
    for (int i = 0; i < PQntuples(nr); i++) {
        json_t *it = json_object_get(items, PQgetvalue(nr, i, 0));
        if (it)
            json_object_set_new(it, "replay",
                                json_pack("{s:I, s:s, s:o, s:o}", "id", (json_int_t)strtoll(PQgetvalue(nr, i, 1), NULL, 10),
                                          "state", PQgetvalue(nr, i, 2), "verdict", pg_str(nr, i, 3), "node",
                                          pg_str(nr, i, 4)));
    }
    PQclear(nr);
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *it = json_object_get(items, PQgetvalue(r, i, 0));
        if (!it)
            continue;
        json_t *runs = json_object_get(it, "runs"), *users = json_object_get(it, "users");
        const char *created = PQgetvalue(r, i, 7), *user = PQgetvalue(r, i, 4);
        json_object_set_new(it, "run_count", json_integer(json_integer_value(json_object_get(it, "run_count")) + 1));
        if (json_array_size(runs) < GROUP_MAX_RUNS)
            json_array_append_new(runs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "run_id",
                                                  PQgetvalue(r, i, 1), "job_id", PQgetvalue(r, i, 2), "step_id",
                                                  PQgetvalue(r, i, 3), "user", user, "nodes", PQgetvalue(r, i, 5),
                                                  "status", PQgetvalue(r, i, 6), "created_at", created, "ended_at",
                                                  pg_str(r, i, 8)));
        int seen = !*user;
        size_t k;
        json_t *u;
        json_array_foreach(users, k, u) seen |= !strcmp(json_string_value(u), user);
        if (!seen)
            json_array_append_new(users, json_string(user));
        if (json_is_null(json_object_get(it, "created_at")))
            json_object_set_new(it, "created_at", json_string(created));
        json_object_set_new(it, "last_run_at", json_string(created)); /* rows in run order: the newest last */
    }
    for (int i = 0; i < PQntuples(v); i++) {
        json_t *it = json_object_get(items, PQgetvalue(v, i, 4));
        if (it)
            json_object_set_new(it, "classification", classification_of(v, i));
    }
    PQclear(r);
    PQclear(v);
    for (int i = 0; i < n; i++) {
        if (!page[i].facts.diverged)
            continue;
        grp_verdict vd;
        int got = verdict_load(page[i].name, &vd, err, cap);
        if (got < 0)
            return -1;
        if (got > 0 && json_is_object(vd.first)) {
            add_ulps(json_object_get(vd.first, "runs"));
            json_object_set(json_object_get(items, page[i].name), "first_divergence", vd.first);
        }
        verdict_release(&vd);
    }
    return 0;
}

/* read_twins_list - GET /api/v1/twins: the twin groups, newest first, filtered by status (the one rule),
 * user, node and time, in the list envelope. */
static enum MHD_Result read_twins_list(http_req *req, char **args)
{
    (void)args;
    long long limit, cursor;
    char since[64], err[512];
    group_viewer viewer;
    if (group_reader(req, &viewer) < 0)
        return MHD_YES;
    if (api_page(req, 50, LIST_MAX, "offset", 0, &limit, &cursor) < 0 || api_time_arg(req, "since", since, sizeof(since)) < 0)
        return MHD_YES;
    const char *want = http_query(req, "status"), *user = http_query(req, "user"), *node = http_query(req, "node");
    if (want && *want) {
        int known = 0;
        for (int i = 0; TWIN_STATUSES[i]; i++)
            known |= !strcmp(TWIN_STATUSES[i], want);
        if (!known) {
            char detail[300];
            size_t n = (size_t)snprintf(detail, sizeof(detail), "?status=%.40s is not a group status; one of", want);
            for (int i = 0; TWIN_STATUSES[i] && n < sizeof(detail); i++)
                n += (size_t)snprintf(detail + n, sizeof(detail) - n, "%s %s", i ? "," : "", TWIN_STATUSES[i]);
            return http_reply_error(req, 400, "bad query argument", detail, "see docs/server.md");
        }
    } else {
        want = NULL;
    }
    list_group *page = xcalloc((size_t)limit + 1, sizeof(*page));
    int n = 0, end = 0, more = 0;
    long long pos = cursor, total = -1, next = -1, candidates = -1, scanned = 0;
    while (!end && !more && scanned < LIST_SCAN_MAX) {
        long long chunk = want ? LIST_SCAN_CHUNK : limit;
        char lim[32], off[32];
        snprintf(lim, sizeof(lim), "%lld", chunk);
        snprintf(off, sizeof(off), "%lld", pos);
        const char *p[] = {user ? user : "", node ? node : "", since, lim, off, viewer.user,
                           viewer.attested ? "true" : "false"};
        PGresult *r = db_exec("twins_list", 7, p, err, sizeof(err));
        if (!r)
            goto out_down;
        int rows = PQntuples(r);
        if (rows)
            candidates = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        const char **names = xcalloc((size_t)rows + 1, sizeof(char *));
        twin_facts *facts = xcalloc((size_t)rows + 1, sizeof(twin_facts));
        for (int j = 0; j < rows; j++)
            names[j] = PQgetvalue(r, j, 0);
        if (verdict_facts(names, rows, facts, err, sizeof(err)) < 0) {
            free(names);
            free(facts);
            PQclear(r);
            goto out_down;
        }
        int j = 0;
        for (; j < rows; j++) {
            char why[512];
            if (want && strcmp(twin_status(&facts[j], why, sizeof(why)), want))
                continue;
            if (n == limit) { /* a further match: the next page starts with it */
                more = 1;
                break;
            }
            page[n].name = xstrdup(names[j]);
            page[n++].facts = facts[j];
        }
        free(names);
        free(facts);
        PQclear(r);
        scanned += j;
        pos += j;
        end = rows < chunk || (candidates >= 0 && pos >= candidates);
        if (!want || n == limit)
            break; /* without a status filter a page is one read; with one, a full page ends at its chunk */
    }
    if (!want) {
        total = n || cursor == 0 ? (candidates >= 0 ? candidates : 0) : -1;
        next = total >= 0 && cursor + n < total ? cursor + n : -1;
    } else {
        if (cursor == 0 && end && !more)
            total = n; /* every candidate was looked at */
        next = more ? pos : end ? -1 : pos;
    }
    json_t *byname = json_object(), *items = json_array();
    const char **names = xcalloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++) {
        json_t *it = list_item(&page[i]);
        json_object_set(byname, page[i].name, it);
        json_array_append_new(items, it);
        names[i] = page[i].name;
    }
    char *arr = group_names_json(names, n);
    free(names);
    int rc = n ? fill_items(byname, arr, page, n, err, sizeof(err)) : 0;
    free(arr);
    json_decref(byname);
    for (int i = 0; i < n; i++)
        free(page[i].name);
    free(page);
    if (rc < 0) {
        json_decref(items);
        return http_reply_db_down(req, err);
    }
    return http_reply_json(req, 200, api_list(items, total, limit, next));
out_down:
    for (int i = 0; i < n; i++)
        free(page[i].name);
    free(page);
    return http_reply_db_down(req, err);
}

/* check_share - before the body: the admin token, or the token of job ?job=J (whose run in the group must
 * belong to the owner, which the store checks). */
static int check_share(http_req *req, char **args)
{
    (void)args;
    const char *job = http_query(req, "job");
    if (http_is_admin(req) || !g_srv.secret ||
        (job && *job && (http_token_is_job(req, job) || http_token_is_attest(req, job))))
        return 0;
    if (http_auth_present(req) < 0)
        return -1; /* 401 */
    http_reply_error(req, 403, "not the group's owner",
                     "send ?job=J with the token of J, a job of the group's owner that has a run in it, or the admin "
                     "token",
                     "see docs/server.md, \"Twin groups and owners\"");
    return -1;
}

/* share_key - the key of the group `name` means to the sharer (the admin: anyone's; a job's token ?job=J: J's user
 * first, as a read by J resolves it) into `key`. 1, or 0 after replying. */
static int share_key(http_req *req, const char *name, char *key, size_t cap)
{
    group_viewer v;
    memset(&v, 0, sizeof(v));
    const char *job = http_query(req, "job");
    if (!http_is_admin(req) && job && *job && group_job_viewer(req, job, &v) < 0)
        return 0;
    return group_resolve(req, name, &v, key, cap);
}

/* share_group - POST /api/v1/twins/{group}/share {"users": ["bob", ...]} ("*": anyone): the users whose runs
 * may join the group as well (replacing the list). The owner (the token of one of the owner's jobs with a run
 * in the group) or the admin. */
static enum MHD_Result share_group(http_req *req, char **args)
{
    char group[GROUP_NAME_MAX + 1];
    if (!share_key(req, args[0], group, sizeof(group)))
        return MHD_YES;
    json_t *o = req->len ? json_loadb(req->body, req->len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    json_t *users = json_object_get(o, "users");
    int ok = json_is_array(users) && json_array_size(users) <= GROUP_MAX_SHARED;
    size_t i;
    json_t *v;
    json_array_foreach(users, i, v) ok &= json_is_string(v) && json_string_length(v) >= 1 &&
                                          json_string_length(v) <= USER_MAX &&
                                          text_line_valid(json_string_value(v), json_string_length(v));
    if (!ok) {
        json_decref(o);
        return http_reply_error(req, 400, "bad share",
                                "the body is {\"users\": [\"name\", ...]} with at most " GROUP_MAX_SHARED_TEXT
                                " user names (\"*\" = anyone)",
                                "see docs/server.md, \"Twin groups and owners\"");
    }
    char *list = json_dumps(users, JSON_COMPACT);
    json_decref(o);
    const char *job = http_query(req, "job");
    int admin = http_is_admin(req);
    PGresult *r = NULL;
    srv_error e;
    int got = store_group_share(group, list, job, admin, &r, &e);
    free(list);
    if (got < 0)
        return http_reply_srv_error(req, e.status ? e.status : 503, &e);
    if (got == 0) {
        char detail[320];
        snprintf(detail, sizeof(detail), "no twin group \"%.255s\"", args[0]);
        return http_reply_error(req, 404, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
    }
    json_t *shared = json_loads(PQgetvalue(r, 0, 2), 0, NULL);
    json_t *reply = json_pack("{s:s, s:{s:s, s:b, s:o}}", "group", group, "owner", "user", PQgetvalue(r, 0, 0),
                              "attested", PQgetvalue(r, 0, 1)[0] == 't', "shared_with", shared ? shared : json_array());
    log_info("twin group %s shared with %s", group, PQgetvalue(r, 0, 2));
    PQclear(r);
    return http_reply_json(req, 200, reply);
}

/* read_manifest_diff - GET /api/v1/twins/{group}/manifest-diff: common/json/mdiff.h over the group's runs. */
static enum MHD_Result read_manifest_diff(http_req *req, char **args)
{
    char err[512], group[GROUP_NAME_MAX + 1];
    if (!group_find(req, args[0], group, sizeof(group)))
        return MHD_YES;
    grp_verdict v;
    int got = verdict_load(group, &v, err, sizeof(err));
    if (got < 0)
        return http_reply_db_down(req, err);
    if (got == 0) {
        char detail[320];
        snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", args[0]);
        return http_reply_error(req, 404, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
    }
    json_t *ids = json_array(), *r;
    size_t i;
    json_array_foreach(v.runs, i, r) json_array_append(ids, json_object_get(r, "run_id"));
    json_t *o = json_deep_copy(v.mdiff);
    json_object_set_new(o, "group", json_string(group));
    json_object_set_new(o, "runs", ids);
    verdict_release(&v);
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    /* reads: open, the admin, or a job's own token (?job=J) for its user's groups (group_reader) */
    {"GET", "/api/v1/twins", MR_READ, AUTH_SELF, read_twins_list},
    {"GET", "/api/v1/twins/{}", MR_READ, AUTH_SELF, read_twins},
    {"GET", "/api/v1/twins/{}/manifest-diff", MR_READ, AUTH_SELF, read_manifest_diff},
    {"POST", "/api/v1/twins/{}/share", MR_ADMIN, AUTH_SELF, share_group, HTTP_BODY_DEFAULT, check_share},
};

void api_twins_register(void)
{
    group_register();
    db_register("grp_classification", "SELECT " CLASS_COLS ", coalesce(evidence_narrow::text, ''), evidence_reason "
                                      "FROM group_evidence WHERE twin_group = $1");
    /* The list: groups newest first (by their newest run), filtered by a run's user, a node one of their runs
     * ran on (its hostlist or a rank's manifest, lockstep_run_on_node), and their newest run's start; for a job's
     * token ($6, attested: $7; group_reader), only the groups it may read (lockstep_group_visible). */
    db_register("twins_list", "SELECT twin_group, count(*) OVER () FROM runs WHERE twin_group IS NOT NULL "
                              "AND twin_group <> '' AND ($6 = '' OR twin_group IN (SELECT o.twin_group FROM "
                              "twin_groups o WHERE lockstep_group_visible(o.twin_group, $6, $7::boolean))) "
                              "GROUP BY twin_group HAVING ($1 = '' OR bool_or(user_name = $1)) "
                              "AND ($2 = '' OR bool_or(lockstep_run_on_node(run_key, nodes, $2))) "
                              "AND max(created_at) >= coalesce(nullif($3, '')::timestamptz, '-infinity') "
                              "ORDER BY max(run_key) DESC, twin_group LIMIT $4 OFFSET $5");
    db_register("twins_runs", "SELECT twin_group, run_id, job_id, step_id, user_name, nodes, status, " TS("created_at")
                              ", " TS("ended_at") " FROM runs WHERE twin_group IN "
                              "(SELECT jsonb_array_elements_text($1::jsonb)) ORDER BY twin_group, run_key");
    db_register("twins_owners", "SELECT twin_group, name, owner, owner_attested FROM twin_groups WHERE twin_group IN "
                                "(SELECT jsonb_array_elements_text($1::jsonb))");
    /* The runs set aside from a group when its owner claimed it, and the other groups of its name. */
    db_register("grp_set_aside_runs", "SELECT run_id, job_id, user_name, attested_user, set_aside_reason, "
                                      TS("set_aside_at") " FROM runs WHERE set_aside_from = $1 ORDER BY run_key "
                                      "LIMIT " GROUP_MAX_RUNS_TEXT);
    db_register("grp_namesakes", "SELECT o.twin_group FROM twin_groups o JOIN twin_groups g ON g.twin_group = $1 "
                                 "AND o.name = g.name AND o.twin_group <> g.twin_group ORDER BY o.twin_group LIMIT 16");
    db_register("twins_classes", "SELECT " CLASS_COLS ", twin_group FROM group_evidence WHERE twin_group IN "
                                 "(SELECT jsonb_array_elements_text($1::jsonb))");
    db_register("twins_replays", "SELECT DISTINCT ON (twin_group) twin_group, id, state, verdict, node FROM narrows "
                                 "WHERE twin_group IN (SELECT jsonb_array_elements_text($1::jsonb)) "
                                 "ORDER BY twin_group, id DESC");
    db_register("grp_restores",
                "SELECT r.run_id, c.rank, c.step, t.run_id, c.reference, c.status, c.entry, c.occ, c.diff, c.compared, "
                "c.unverified, c.detail::text FROM restore_checks c JOIN runs r ON r.run_key = c.run_key "
                "JOIN runs t ON t.run_key = c.ref_run_key WHERE c.twin_group = $1 ORDER BY c.step, c.rank, r.run_key, "
                "t.run_key");
    db_register("grp_awaiting", "SELECT r.run_id, q.rank, q.step, " TS("q.requested_at") " FROM record_requests q "
                                "JOIN runs r USING (run_key) WHERE r.twin_group = $1 AND NOT q.answered "
                                "ORDER BY q.step, q.rank, q.run_key LIMIT 100");
    db_register("grp_removed", "SELECT r.run_id, q.rank, q.step FROM record_requests q JOIN runs r USING (run_key) "
                               "WHERE r.twin_group = $1 AND q.removed ORDER BY q.step, q.rank, q.run_key LIMIT 100");
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
