/* narrow_read.c - replay experiments as the API shows them, and what the suspects evaluation reads of their verdicts
 * (server/replay/narrow_read.h). */
#include "server/replay/narrow_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"
#include "server/rules/replay.h"
#include "server/store/db.h"

static void fail(int *status, int code, srv_error *e, const char *fact, const char *detail, const char *hint)
{
    *status = code;
    srv_error_set(e, fact, detail, hint);
}

#define NARROW_COLS                                                                                                    \
    "n.id, n.twin_group, n.narrow_group, n.state, n.step, n.from_step, n.to_step, n.level, n.trace, n.design::text, "  \
    "n.verdict, n.node, n.gpu, n.reason, n.reasoning::text, n.record::text, n.actor, " DB_TS(                          \
        "n.created_at") ", " DB_TS("n.deadline_at") ", " DB_TS("n.finished_at")

static json_t *cell(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : json_string(PQgetvalue(r, row, col));
}

static json_t *cell_json(PGresult *r, int row, int col)
{
    json_t *v = PQgetisnull(r, row, col) ? NULL : json_loads(PQgetvalue(r, row, col), 0, NULL);
    return v ? v : json_null();
}

/* summary - the short form of a narrow row (NARROW_COLS). */
static json_t *summary(PGresult *r, int i)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(strtoll(PQgetvalue(r, i, 0), NULL, 10)));
    json_object_set_new(o, "group", cell(r, i, 1));
    json_object_set_new(o, "narrow_group", cell(r, i, 2));
    json_object_set_new(o, "state", cell(r, i, 3));
    json_object_set_new(o, "verdict", cell(r, i, 10));
    json_object_set_new(o, "node", cell(r, i, 11));
    json_object_set_new(o, "gpu", cell(r, i, 12));
    json_object_set_new(o, "reason", cell(r, i, 13));
    json_object_set_new(o, "created_at", cell(r, i, 17));
    json_object_set_new(o, "finished_at", cell(r, i, 19));
    return o;
}

json_t *narrow_json(long long id, int *status, srv_error *e)
{
    char err[512], ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *p[] = {ids};
    PGresult *r = db_exec_once("nread_one", 1, p, err, sizeof(err));
    if (!r) {
        fail(status, 503, e, "database unavailable", err, "retry shortly");
        return NULL;
    }
    if (!PQntuples(r)) {
        PQclear(r);
        fail(status, 404, e, "unknown narrow", "no narrow has this id",
             "list a group's with GET /api/v1/twins/G/narrows");
        return NULL;
    }
    PGresult *pl = db_exec_once("nread_placements", 1, p, err, sizeof(err));
    if (!pl) {
        PQclear(r);
        fail(status, 503, e, "database unavailable", err, "retry shortly");
        return NULL;
    }
    json_t *o = summary(r, 0), *design = cell_json(r, 0, 9);
    json_object_set_new(o, "deadline_at", cell(r, 0, 18));
    json_object_set_new(o, "actor", cell(r, 0, 16));
    json_object_set_new(o, "window",
                        json_pack("{s:I, s:I, s:s, s:s}", "from", (json_int_t)strtoll(PQgetvalue(r, 0, 5), NULL, 10),
                                  "to", (json_int_t)strtoll(PQgetvalue(r, 0, 6), NULL, 10), "level",
                                  PQgetvalue(r, 0, 7), "trace", PQgetvalue(r, 0, 8)));
    static const char *const lift[] = {"kind",     "cause", "cause_detail", "origin_ranks", "first_divergence",
                                       "contents", "runs",  "nodes",        "notes",        NULL};
    for (const char *const *k = lift; *k; k++) {
        json_t *v = json_object_get(design, *k);
        json_object_set(o, *k, v ? v : json_null());
    }
    json_decref(design);
    json_t *placements = json_array();
    for (int i = 0; i < PQntuples(pl); i++) {
        json_t *x = json_object();
        json_object_set_new(x, "index", json_integer(atoi(PQgetvalue(pl, i, 0))));
        json_object_set_new(x, "role", cell(pl, i, 1));
        json_object_set_new(x, "source_run_id", cell(pl, i, 2));
        json_object_set_new(x, "source_job_id", cell(pl, i, 3));
        json_object_set_new(x, "nodes", cell(pl, i, 4));
        char names[RP_MAX_PROBE * 4][HOSTLIST_NAME_MAX];
        int nn = hostlist_expand(PQgetvalue(pl, i, 4), names, RP_MAX_PROBE * 4);
        json_object_set_new(x, "nnodes", json_integer(nn > 0 ? nn : 1));
        json_object_set_new(x, "ranks", json_integer(atoi(PQgetvalue(pl, i, 16))));
        json_object_set_new(x, "mode", cell(pl, i, 17));
        json_object_set_new(x, "why", cell(pl, i, 5));
        json_object_set_new(x, "command", cell(pl, i, 6));
        json_object_set_new(x, "argv", cell_json(pl, i, 19));     /* the words it runs, each its own argument */
        json_object_set_new(x, "user", cell(pl, i, 20));          /* who it runs as: the attested user, null: none */
        json_object_set_new(x, "settings", cell_json(pl, i, 21)); /* what it carries from the run it replays */
        json_object_set_new(x, "resume_step",
                            PQgetisnull(pl, i, 7) ? json_null()
                                                  : json_integer(strtoll(PQgetvalue(pl, i, 7), NULL, 10)));
        json_object_set_new(x, "start_step",
                            PQgetisnull(pl, i, 7) ? json_null()
                                                  : json_integer(strtoll(PQgetvalue(pl, i, 7), NULL, 10) + 1));
        json_object_set_new(x, "job_id", cell(pl, i, 8));
        json_object_set_new(x, "run_id", cell(pl, i, 9));
        json_object_set_new(x, "run_status", cell(pl, i, 18));
        json_object_set_new(x, "outcome", PQgetisnull(pl, i, 10) ? json_string("pending") : cell(pl, i, 10));
        json_t *content = PQgetisnull(pl, i, 11) ? json_null() : json_integer(atoi(PQgetvalue(pl, i, 11)));
        json_object_set_new(x, "content", content);
        char label[8];
        snprintf(label, sizeof(label), "%c",
                 'A' + (json_is_integer(content) ? (int)json_integer_value(content) % 26 : 0));
        json_object_set_new(x, "result", json_is_integer(content) ? json_string(label) : json_null());
        json_object_set_new(x, "diverged",
                            PQgetisnull(pl, i, 12) ? json_null() : json_boolean(PQgetvalue(pl, i, 12)[0] == 't'));
        json_object_set_new(x, "reproduced",
                            PQgetisnull(pl, i, 12) ? json_null() : json_boolean(PQgetvalue(pl, i, 12)[0] == 't'));
        json_object_set_new(x, "probe_nodes", cell(pl, i, 13));
        json_object_set_new(x, "detail", cell(pl, i, 14));
        json_object_set_new(x, "decided_at", cell(pl, i, 15));
        json_array_append_new(placements, x);
    }
    json_object_set_new(o, "placements", placements);
    json_object_set_new(o, "reasoning", PQgetisnull(r, 0, 14) ? json_array() : cell_json(r, 0, 14));
    json_object_set_new(o, "record", cell_json(r, 0, 15));
    PQclear(pl);
    PQclear(r);
    return o;
}

json_t *narrow_list(const char *group, long long limit, long long before, srv_error *e)
{
    char err[512], lim[32], bef[32];
    snprintf(lim, sizeof(lim), "%lld", limit);
    snprintf(bef, sizeof(bef), "%lld", before);
    const char *p[] = {group, lim, bef};
    PGresult *r = db_exec_once("nread_page", 3, p, err, sizeof(err));
    if (!r) {
        srv_error_set(e, "database unavailable", err, "retry shortly");
        return NULL;
    }
    json_t *items = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(items, summary(r, i));
    PQclear(r);
    return items;
}

int narrow_twin_fields(const char *group, json_t *o, char *err, size_t cap)
{
    const char *p[] = {group};
    PGresult *r = db_exec_once("nread_twin_latest", 1, p, err, cap);
    if (!r)
        return -1;
    json_object_set_new(o, "replay", PQntuples(r) ? summary(r, 0) : json_null());
    json_object_set_new(o, "replays", json_integer(PQntuples(r) ? strtoll(PQgetvalue(r, 0, 20), NULL, 10) : 0));
    PQclear(r);
    r = db_exec_once("nread_group_narrows", 1, p, err, cap);
    if (!r)
        return -1;
    json_object_set_new(o, "narrow_of",
                        PQntuples(r) ? json_pack("{s:I, s:s}", "id", (json_int_t)strtoll(PQgetvalue(r, 0, 0), NULL, 10),
                                                 "group", PQgetvalue(r, 0, 1))
                                     : json_null());
    PQclear(r);
    return 0;
}

static void fill_verdict(PGresult *r, narrow_verdict *out)
{
    memset(out, 0, sizeof(*out));
    out->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(out->group, sizeof(out->group), "%s", PQgetvalue(r, 0, 1));
    snprintf(out->narrow_group, sizeof(out->narrow_group), "%s", PQgetvalue(r, 0, 2));
    out->done = !strcmp(PQgetvalue(r, 0, 3), "done");
    snprintf(out->verdict, sizeof(out->verdict), "%s", PQgetvalue(r, 0, 4));
    snprintf(out->node, sizeof(out->node), "%s", PQgetvalue(r, 0, 5));
    snprintf(out->gpu, sizeof(out->gpu), "%s", PQgetvalue(r, 0, 6));
    snprintf(out->reason, sizeof(out->reason), "%s", PQgetvalue(r, 0, 7));
    out->step = strtoll(PQgetvalue(r, 0, 8), NULL, 10);
    int64_t o[NARROW_MAX_ORIGIN];
    out->norigin = db_int_array_parse(PQgetvalue(r, 0, 9), o, NARROW_MAX_ORIGIN);
    if (out->norigin < 0)
        out->norigin = 0;
    for (int i = 0; i < out->norigin; i++)
        out->origin[i] = (int)o[i];
}

#define VERDICT_COLS                                                                                                   \
    "id, twin_group, narrow_group, state, coalesce(verdict, ''), coalesce(node, ''), coalesce(gpu, ''), reason, "      \
    "step, translate(coalesce(design->>'origin_ranks', '[]'), '[]', '{}')"

int narrow_latest(const char *group, narrow_verdict *out, char *err, size_t cap)
{
    const char *p[] = {group};
    PGresult *r = db_exec_once("nread_latest", 1, p, err, cap);
    if (!r)
        return -1;
    int found = PQntuples(r) == 1;
    if (found)
        fill_verdict(r, out);
    PQclear(r);
    return found;
}

int narrow_of_group(const char *group, narrow_verdict *out, char *err, size_t cap)
{
    const char *p[] = {group};
    PGresult *r = db_exec_once("nread_of_group", 1, p, err, cap);
    if (!r)
        return -1;
    int found = PQntuples(r) == 1;
    if (found)
        fill_verdict(r, out);
    PQclear(r);
    return found;
}

int narrow_replay_diverged(long long narrow_id, const char *run_key, char *err, size_t cap)
{
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", narrow_id);
    const char *p[] = {ids, run_key};
    PGresult *r = db_exec_once("nread_replay_diverged", 2, p, err, cap);
    if (!r)
        return -2;
    int v = PQntuples(r) ? PQgetvalue(r, 0, 0)[0] == 't' : -1;
    PQclear(r);
    return v;
}

void narrow_read_register(void)
{
    db_register("nread_one", "SELECT " NARROW_COLS " FROM narrows n WHERE n.id = $1::bigint");
    db_register(
        "nread_placements",
        "SELECT p.idx, p.role, s.run_id::text, s.job_id, p.nodes, p.why, p.command, p.resume_step, p.job_id, "
        "x.run_id::text, p.outcome, p.content, p.diverged, p.probe_nodes, p.detail, " DB_TS(
            "p.decided_at") ", s.ranks, "
                            "s.mode, x.status, array_to_json(p.argv)::text, p.run_as, p.settings::text FROM "
                            "narrow_placements p JOIN "
                            "runs s ON s.run_key = p.source_run_key "
                            "LEFT JOIN runs x ON x.run_key = p.run_key WHERE p.narrow_id = $1::bigint ORDER BY p.idx");
    db_register("nread_page", "SELECT " NARROW_COLS " FROM narrows n WHERE n.twin_group = $1 AND ($3::bigint = 0 OR "
                              "n.id < $3::bigint) ORDER BY n.id DESC LIMIT $2::bigint");
    db_register("nread_twin_latest",
                "SELECT " NARROW_COLS ", (SELECT count(*) FROM narrows WHERE twin_group = $1) FROM narrows n "
                "WHERE n.twin_group = $1 ORDER BY n.id DESC LIMIT 1");
    db_register("nread_group_narrows", "SELECT id, twin_group FROM narrows WHERE narrow_group = $1");
    db_register("nread_latest",
                "SELECT " VERDICT_COLS " FROM narrows WHERE twin_group = $1 AND state = 'done' ORDER BY id "
                "DESC LIMIT 1");
    db_register("nread_of_group", "SELECT " VERDICT_COLS " FROM narrows WHERE narrow_group = $1");
    db_register("nread_replay_diverged",
                "SELECT diverged FROM narrow_placements WHERE narrow_id = $1::bigint AND run_key = "
                "$2::bigint AND outcome = 'ran' AND diverged IS NOT NULL");
}
