/* twins.c - the twin group read endpoints: one group's kind, status, runs and their outcomes, first divergence,
 * classification and suspected hardware; its manifest diff; sharing it. */
#include "server/api/twins.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"
#include "common/text.h"
#include "server/api/group.h"
#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/api/twin_row.h"
#include "server/api/twin_deltas.h"
#include "server/api/twins_list.h"
#include "server/twins/absorbed.h"
#include "server/twins/findings.h"
#include "server/twins/twin_read.h"
#include "server/replay/narrow_read.h"
#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/http/auth.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/rules/group_rule.h"
#include "server/store/groups.h"

/* evidence_of - what the group's evidence against its hardware follows, from row `i` of twin_read_classification
 * (after its TWIN_CLASS_NCOLS columns):
 * {"from": "classification" or "replay", "narrow": the narrow whose verdict it follows or null, "reason"}; JSON
 * null when i < 0. A replay verdict decides the weights beside the classification, which it leaves unchanged. */
static json_t *evidence_of(PGresult *r, int i)
{
    if (i < 0)
        return json_null();
    const char *n = PQgetvalue(r, i, TWIN_CLASS_NCOLS);
    return json_pack("{s:s, s:o, s:s}", "from", *n ? "replay" : "classification", "narrow",
                     *n ? json_integer(strtoll(n, NULL, 10)) : json_null(), "reason",
                     PQgetvalue(r, i, TWIN_CLASS_NCOLS + 1));
}

/* restores_json - every restored state block of the group checked so far, against which twin and how. */
static json_t *restores_json(PGresult *c)
{
    json_t *a = json_array();
    for (int i = 0; i < PQntuples(c); i++) {
        json_t *o =
            json_pack("{s:s, s:i, s:I, s:s, s:s, s:s, s:o, s:o, s:o, s:i, s:i}", "run_id", PQgetvalue(c, i, 0), "rank",
                      atoi(PQgetvalue(c, i, 1)), "step", (json_int_t)strtoll(PQgetvalue(c, i, 2), NULL, 10),
                      "reference_run_id", PQgetvalue(c, i, 3), "reference", PQgetvalue(c, i, 4), "status",
                      PQgetvalue(c, i, 5), "entry", pg_str(c, i, 6), "occurrence", pg_int(c, i, 7), "diff",
                      pg_str(c, i, 8), "compared", atoi(PQgetvalue(c, i, 9)), "unverified", atoi(PQgetvalue(c, i, 10)));
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
    PGresult *r = twin_read_set_aside(key, err, cap);
    PGresult *s = r ? twin_read_namesakes(key, err, cap) : NULL;
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

/* missing_records - the records the group's comparison waits for or lost, into `o`: "awaiting_records", the
 * steps whose records agents hold back and lockstepd asked for, not received yet (an agent that ended keeps them
 * in its spool: `lockstep replay --steps asked DIR` sends them); "records_removed", the steps the comparison
 * stopped at because retention removed a run's records there. Each left out when there is none (or the database
 * does not answer). */
static void missing_records(const char *group, json_t *o)
{
    char err[512];
    PGresult *w = twin_read_awaiting(group, err, sizeof(err));
    if (w && PQntuples(w) > 0) {
        json_t *aw = json_array();
        for (int k = 0; k < PQntuples(w); k++)
            json_array_append_new(aw, json_pack("{s:s, s:i, s:I, s:s, s:s, s:f}", "run_id", PQgetvalue(w, k, 0), "rank",
                                                atoi(PQgetvalue(w, k, 1)), "step",
                                                (json_int_t)strtoll(PQgetvalue(w, k, 2), NULL, 10), "requested_at",
                                                PQgetvalue(w, k, 3), "committed_at", PQgetvalue(w, k, 4),
                                                "detection_ms", atof(PQgetvalue(w, k, 5))));
        json_object_set_new(o, "awaiting_records", aw);
    }
    PQclear(w);
    w = twin_read_removed(group, err, sizeof(err));
    if (w && PQntuples(w) > 0) {
        json_t *rm = json_array();
        for (int k = 0; k < PQntuples(w); k++)
            json_array_append_new(rm, json_pack("{s:s, s:i, s:I}", "run_id", PQgetvalue(w, k, 0), "rank",
                                                atoi(PQgetvalue(w, k, 1)), "step",
                                                (json_int_t)strtoll(PQgetvalue(w, k, 2), NULL, 10)));
        json_object_set_new(o, "records_removed", rm);
    }
    PQclear(w);
}

/* owner_fields - the group's "owner" (its user, whether attested, whom it is shared with; null when unowned) and
 * "name" into `o`, from its row `own` (store_group_get). */
static void owner_fields(const char *group, PGresult *own, json_t *o)
{
    if (PQntuples(own) == 1) {
        json_t *shared = json_loads(PQgetvalue(own, 0, 2), 0, NULL);
        json_object_set_new(o, "owner",
                            json_pack("{s:s, s:b, s:o}", "user", PQgetvalue(own, 0, 0), "attested",
                                      PQgetvalue(own, 0, 1)[0] == 't', "shared_with", shared ? shared : json_array()));
        json_object_set_new(o, "name", json_string(PQgetvalue(own, 0, 3)));
    } else {
        json_object_set_new(o, "owner", json_null());
        json_object_set_new(o, "name", json_string(group));
    }
}

/* runs_logical - 1 when the verdict's `runs` have different rank counts: they are compared on logical tensors
 * (server/twins/logical.c). */
static int runs_logical(json_t *runs)
{
    size_t i;
    json_t *run;
    int logical = 0;
    json_int_t ranks0 = json_integer_value(json_object_get(json_array_get(runs, 0), "ranks"));
    json_array_foreach(runs, i, run) logical |= json_integer_value(json_object_get(run, "ranks")) != ranks0;
    return logical;
}

/* read_twins - GET /api/v1/twins/{group}: the group's status (with why), its runs and their exits, its first
 * divergence with cause, origin ranks and call site, each rank's first divergence (server/twins/findings.h),
 * and the fleet's classification. */
static enum MHD_Result read_twins(http_req *req, char **args)
{
    char err[512], group[GROUP_NAME_MAX + 1];
    if (!group_find(req, args[0], group, sizeof(group)))
        return MHD_YES;
    grp_findings v;
    int got = findings_load(group, &v, err, sizeof(err));
    if (got < 0)
        return http_reply_db_down(req, err);
    if (got == 0) {
        char detail[320];
        snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", args[0]);
        return http_reply_error(req, 404, "unknown twin group", detail, "list the twin groups with GET /api/v1/twins");
    }
    PGresult *c = twin_read_classification(group, err, sizeof(err));
    srv_error e;
    PGresult *own = c ? store_group_get(group, &e) : NULL;
    if (!own) {
        PQclear(c);
        findings_release(&v);
        return http_reply_db_down(req, c ? e.detail : err);
    }
    PGresult *rs = twin_read_restores(group, err, sizeof(err));
    if (!rs) {
        PQclear(c);
        PQclear(own);
        findings_release(&v);
        return http_reply_db_down(req, err);
    }
    size_t i;
    json_t *d;
    json_array_foreach(v.per_rank, i, d) twin_row_ulps(json_object_get(d, "runs"));
    if (json_is_object(v.first))
        twin_row_ulps(json_object_get(v.first, "runs"));
    int logical = runs_logical(v.runs);
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:O, s:O, s:O, s:{s:O, s:O}, s:o, s:o, s:b}", "group", group, "status", v.status,
                  "status_reason", v.status_why, "runs", v.runs, "first_divergence", v.first, "per_rank", v.per_rank,
                  "manifest_diff", "explains", json_object_get(v.mdiff, "explains"), "summary",
                  json_object_get(v.mdiff, "summary"), "classification",
                  twin_row_classification(c, PQntuples(c) ? 0 : -1), "restores", restores_json(rs), "logical", logical);
    missing_records(group, o);
    json_object_set_new(o, "evidence", evidence_of(c, PQntuples(c) ? 0 : -1));
    json_object_set_new(o, "kind", json_string(group_kind_name(group_kind_of(group))));
    json_object_set_new(o, "odd_runs", twin_row_odd_runs(v.runs));
    json_object_set_new(o, "runs_total", json_integer((json_int_t)v.runs_total));
    owner_fields(group, own, o);
    PQclear(own);
    json_t *absorbed = NULL;
    if (absorbed_load(group, &absorbed, err, sizeof(err)) < 0 || aside_and_namesakes(group, o, err, sizeof(err)) < 0) {
        json_decref(absorbed);
        PQclear(c);
        PQclear(rs);
        findings_release(&v);
        json_decref(o);
        return http_reply_db_down(req, err);
    }
    json_object_set_new(o, "absorbed", absorbed); /* server/twins/absorbed.h */
    PQclear(c);
    PQclear(rs);
    findings_release(&v);
    /* The hardware its evidence suspects, as the list says it. */
    const char *one[] = {group};
    char *arr = group_names_json(one, 1);
    json_t *byname = json_pack("{s:O}", group, o);
    int sus = twin_row_suspected(arr, byname, err, sizeof(err));
    free(arr);
    json_decref(byname);
    /* Replays: the group's newest narrow and its verdict, or the group it replays (server/replay/narrow.h). */
    if (sus < 0 || narrow_twin_fields(group, o, err, sizeof(err)) < 0) {
        json_decref(o);
        return http_reply_db_down(req, err);
    }
    return http_reply_json(req, 200, o);
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
    grp_findings v;
    int got = findings_load(group, &v, err, sizeof(err));
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
    findings_release(&v);
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    /* reads: open, the admin, or a job's own token (?job=J) for its user's groups (group_reader) */
    {"GET", "/api/v1/twins/{}", MR_READ, AUTH_SELF, read_twins, .reads = 1},
    {"GET", "/api/v1/twins/{}/manifest-diff", MR_READ, AUTH_SELF, read_manifest_diff, .reads = 1},
    {"POST", "/api/v1/twins/{}/share", MR_ADMIN, AUTH_SELF, share_group, HTTP_BODY_DEFAULT, check_share},
};

void api_twins_register(void)
{
    api_twins_list_register();
    api_twin_deltas_register();
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
