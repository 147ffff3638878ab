/* read.c - the read endpoints: runs, run detail and records, twin groups, manifest diff, health, metrics. */
#include "server/series.h"
#include "server/read.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "server/db.h"
#include "server/maint.h"
#include "server/metrics.h"
#include "server/store.h"
#include "server/twins.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define RUN_COLS                                                                                                \
    "run_id, job_id, step_id, coalesce(twin_group, ''), ranks, start_step, user_name, nodes, command, mode, " \
    "status, " TS("created_at") ", " TS("ended_at")

void read_register(void)
{
    db_register("health", "SELECT 1");
    db_register("runs_list", "SELECT " RUN_COLS ", count(*) OVER () FROM runs "
                             "WHERE ($1 = '' OR user_name = $1) AND ($2 = '' OR job_id = $2) "
                             "AND ($3 = '' OR twin_group = $3) AND ($4 = '' OR status = $4) "
                             "AND ($7 = '' OR step_id = $7) ORDER BY run_key DESC LIMIT $5 OFFSET $6");
    db_register("run_one", "SELECT " RUN_COLS ", run_key FROM runs WHERE run_id = $1::uuid");
    db_register("run_manifests", "SELECT rank, manifest::text FROM manifests WHERE run_key = $1 ORDER BY rank");
    db_register("run_ranks",
                "SELECT coalesce(p.rank, e.rank), p.min_step, p.max_step, p.max_seq, p.n_records, e.exit_code "
                "FROM (SELECT * FROM rank_progress WHERE run_key = $1) p "
                "FULL JOIN (SELECT * FROM rank_ends WHERE run_key = $1) e ON p.rank = e.rank ORDER BY 1");
    db_register("run_records", "SELECT rank, seq, step, name, occ, level, dtype, flags, t_ns, nbytes, fp, value, "
                               "shape::text, inputs::text, chunks::text FROM records WHERE run_key = $1 "
                               "AND rank = $2 AND step BETWEEN $3 AND $4 ORDER BY step, seq LIMIT $5");
    twins_register();
    series_register();
}

enum MHD_Result read_health(http_req *req)
{
    char err[256];
    PGresult *r = db_exec("health", 0, NULL, err, sizeof(err));
    int ok = r != NULL;
    PQclear(r);
    if (ok)
        return http_reply_json(req, 200, json_pack("{s:s, s:s}", "status", "ok", "database", "ok"));
    return http_reply_json(req, 503,
                           json_pack("{s:s, s:s, s:s, s:s, s:s}", "status", "degraded", "database", "unreachable",
                                     "error", "database unreachable", "detail", err, "hint",
                                     "lockstepd reconnects by itself once PostgreSQL is back"));
}

enum MHD_Result read_metrics(http_req *req)
{
    char *text = metrics_render();
    return http_reply(req, 200, "text/plain; version=0.0.4", text, strlen(text));
}

static enum MHD_Result db_down(http_req *req, const char *err)
{
    return http_reply_error(req, 503, "database error", err, "retry later; check PostgreSQL and the lockstepd log");
}

static json_t *nullable_str(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : json_string(PQgetvalue(r, row, col));
}

/* run_json - a run object from the RUN_COLS columns at `row`. */
static json_t *run_json(PGresult *r, int row)
{
    json_t *o = json_object();
    json_object_set_new(o, "run_id", json_string(PQgetvalue(r, row, 0)));
    json_object_set_new(o, "job_id", json_string(PQgetvalue(r, row, 1)));
    json_object_set_new(o, "step_id", json_string(PQgetvalue(r, row, 2)));
    json_object_set_new(o, "twin_group", *PQgetvalue(r, row, 3) ? json_string(PQgetvalue(r, row, 3)) : json_null());
    json_object_set_new(o, "ranks", json_integer(atoi(PQgetvalue(r, row, 4))));
    json_object_set_new(o, "start_step", json_integer(strtoll(PQgetvalue(r, row, 5), NULL, 10)));
    json_object_set_new(o, "user", json_string(PQgetvalue(r, row, 6)));
    json_object_set_new(o, "nodes", json_string(PQgetvalue(r, row, 7)));
    json_object_set_new(o, "command", json_string(PQgetvalue(r, row, 8)));
    json_object_set_new(o, "mode", json_string(PQgetvalue(r, row, 9)));
    json_object_set_new(o, "status", json_string(PQgetvalue(r, row, 10)));
    json_object_set_new(o, "created_at", nullable_str(r, row, 11));
    json_object_set_new(o, "ended_at", nullable_str(r, row, 12));
    return o;
}

/* int_arg - query argument `key` as an integer in lo..hi, `dflt` when
 * absent; -1 after replying 400 when it is malformed. */
static int int_arg(http_req *req, const char *key, long long lo, long long hi, long long dflt, long long *out)
{
    const char *s = http_query(req, key);
    if (!s || !*s) {
        *out = dflt;
        return 0;
    }
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || v < lo || v > hi) {
        char detail[200];
        snprintf(detail, sizeof(detail), "?%s=%.40s must be an integer in %lld..%lld", key, s, lo, hi);
        http_reply_error(req, 400, "bad query argument", detail, "see docs/server.md");
        return -1;
    }
    *out = v;
    return 0;
}

enum MHD_Result read_runs(http_req *req)
{
    /* With read_access = admin, a job's own token may still list that job's
     * runs (agents look their run up by job and step). */
    const char *job = http_query(req, "job");
    int job_ok = !g_srv.cfg.read_open && job && *job && http_token_is_job(req, job);
    if (!job_ok && http_auth_read(req) < 0)
        return MHD_YES;
    long long limit, offset;
    if (int_arg(req, "limit", 1, 1000, 50, &limit) < 0 || int_arg(req, "offset", 0, INT64_MAX, 0, &offset) < 0)
        return MHD_YES;
    char lim[32], off[32], err[512];
    snprintf(lim, sizeof(lim), "%lld", limit);
    snprintf(off, sizeof(off), "%lld", offset);
    const char *u = http_query(req, "user"), *j = http_query(req, "job"), *g = http_query(req, "group"),
               *s = http_query(req, "status"), *st = http_query(req, "step");
    const char *p[] = {u ? u : "", j ? j : "", g ? g : "", s ? s : "", lim, off, st ? st : ""};
    PGresult *r = db_exec("runs_list", 7, p, err, sizeof(err));
    if (!r)
        return db_down(req, err);
    json_t *runs = json_array();
    long long total = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        json_array_append_new(runs, run_json(r, i));
        total = strtoll(PQgetvalue(r, i, 13), NULL, 10);
    }
    int n = PQntuples(r);
    PQclear(r);
    if (n == 0 && offset > 0)
        total = -1; /* unknown past the end */
    json_t *o = json_pack("{s:o, s:I, s:I}", "runs", runs, "limit", (json_int_t)limit, "offset", (json_int_t)offset);
    json_object_set_new(o, "total", total >= 0 ? json_integer(total) : json_null());
    json_object_set_new(o, "next_offset",
                        total >= 0 && offset + n < total ? json_integer(offset + n) : json_null());
    return http_reply_json(req, 200, o);
}

static enum MHD_Result unknown_run(http_req *req, const char *run_id)
{
    char detail[160];
    snprintf(detail, sizeof(detail), "no run has the id \"%.64s\"", run_id);
    return http_reply_error(req, 404, "unknown run", detail, "list runs with GET /api/v1/runs");
}

enum MHD_Result read_run(http_req *req, const char *run_id)
{
    if (http_auth_read(req) < 0)
        return MHD_YES;
    if (!store_uuid_valid(run_id))
        return unknown_run(req, run_id);
    char err[512];
    const char *p[] = {run_id};
    PGresult *r = db_exec("run_one", 1, p, err, sizeof(err));
    if (!r)
        return db_down(req, err);
    if (PQntuples(r) != 1) {
        PQclear(r);
        return unknown_run(req, run_id);
    }
    json_t *o = run_json(r, 0);
    char key[32];
    snprintf(key, sizeof(key), "%s", PQgetvalue(r, 0, 13));
    PQclear(r);
    const char *k[] = {key};
    json_t *manifests = json_array(), *ranks = json_array();
    r = db_exec("run_manifests", 1, k, err, sizeof(err));
    if (!r)
        goto out_down;
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *m = json_loads(PQgetvalue(r, i, 1), 0, NULL);
        json_array_append_new(manifests, json_pack("{s:i, s:o}", "rank", atoi(PQgetvalue(r, i, 0)), "manifest",
                                                   m ? m : json_null()));
    }
    PQclear(r);
    r = db_exec("run_ranks", 1, k, err, sizeof(err));
    if (!r)
        goto out_down;
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *x = json_pack("{s:i}", "rank", atoi(PQgetvalue(r, i, 0)));
        static const char *const names[] = {"min_step", "max_step", "max_seq", "records", "exit_code"};
        for (int c = 1; c <= 5; c++)
            json_object_set_new(x, names[c - 1],
                                PQgetisnull(r, i, c) ? json_null()
                                                     : json_integer(strtoll(PQgetvalue(r, i, c), NULL, 10)));
        json_object_set_new(x, "ended", json_boolean(!PQgetisnull(r, i, 5)));
        json_array_append_new(ranks, x);
    }
    PQclear(r);
    json_object_set_new(o, "manifests", manifests);
    json_object_set_new(o, "rank_status", ranks);
    return http_reply_json(req, 200, o);
out_down:
    json_decref(o);
    json_decref(manifests);
    json_decref(ranks);
    return db_down(req, err);
}

static json_t *hex_or_null(PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return json_null();
    char h[17];
    snprintf(h, sizeof(h), "%016" PRIx64, (uint64_t)strtoll(PQgetvalue(r, row, col), NULL, 10));
    return json_string(h);
}

/* pg_int_array - "{1,-2}" (a PostgreSQL bigint[] as text) as a JSON array: of integers, or with `hex` of
 * 16-digit hex strings of the two's-complement bits (["0000000000000001", "fffffffffffffffe"]). */
static json_t *pg_int_array(const char *s, int hex)
{
    json_t *a = json_array();
    while (*s && *s != '}') {
        if (*s == '{' || *s == ',') {
            s++;
            continue;
        }
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s)
            break;
        if (hex) {
            char h[17];
            snprintf(h, sizeof(h), "%016" PRIx64, (uint64_t)v);
            json_array_append_new(a, json_string(h));
        } else {
            json_array_append_new(a, json_integer(v));
        }
        s = end;
    }
    return a;
}

/* hex_array - column `col` of `row` as pg_int_array's hex strings, or null. */
static json_t *hex_array(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : pg_int_array(PQgetvalue(r, row, col), 1);
}

enum MHD_Result read_run_records(http_req *req, const char *run_id)
{
    if (http_auth_read(req) < 0)
        return MHD_YES;
    run_info run;
    srv_error e;
    int got = store_run_lookup(run_id, &run, &e);
    if (got < 0)
        return http_reply_srv_error(req, 503, &e);
    if (!got)
        return unknown_run(req, run_id);
    long long rank, from, to, limit;
    if (int_arg(req, "rank", 0, INT32_MAX, 0, &rank) < 0 ||
        int_arg(req, "from", INT64_MIN, INT64_MAX, INT64_MIN, &from) < 0 ||
        int_arg(req, "to", INT64_MIN, INT64_MAX, INT64_MAX, &to) < 0 ||
        int_arg(req, "limit", 1, 100000, 1000, &limit) < 0)
        return MHD_YES;
    const char *step = http_query(req, "step");
    if (step && int_arg(req, "step", INT64_MIN, INT64_MAX, 0, &from) < 0)
        return MHD_YES;
    if (step)
        to = from;
    char key[32], rk[16], f[32], t[32], l[32], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run.key);
    snprintf(rk, sizeof(rk), "%lld", rank);
    snprintf(f, sizeof(f), "%lld", from);
    snprintf(t, sizeof(t), "%lld", to);
    snprintf(l, sizeof(l), "%lld", limit);
    const char *p[] = {key, rk, f, t, l};
    PGresult *r = db_exec("run_records", 5, p, err, sizeof(err));
    if (!r)
        return db_down(req, err);
    json_t *recs = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        unsigned dtype = (unsigned)atoi(PQgetvalue(r, i, 6));
        json_t *o = json_pack("{s:i, s:I, s:I, s:s, s:i, s:s, s:s, s:i, s:I, s:I, s:o, s:o}", "rank",
                              atoi(PQgetvalue(r, i, 0)), "seq", (json_int_t)strtoll(PQgetvalue(r, i, 1), NULL, 10),
                              "step", (json_int_t)strtoll(PQgetvalue(r, i, 2), NULL, 10), "name",
                              PQgetvalue(r, i, 3), "occ", atoi(PQgetvalue(r, i, 4)), "level",
                              level_name((unsigned)atoi(PQgetvalue(r, i, 5))), "dtype", dtype_name(dtype), "flags",
                              atoi(PQgetvalue(r, i, 7)), "t_ns", (json_int_t)strtoll(PQgetvalue(r, i, 8), NULL, 10),
                              "nbytes", (json_int_t)strtoll(PQgetvalue(r, i, 9), NULL, 10), "fp",
                              hex_or_null(r, i, 10), "shape", pg_int_array(PQgetvalue(r, i, 12), 0));
        if (!PQgetisnull(r, i, 11)) {
            uint64_t bits = (uint64_t)strtoll(PQgetvalue(r, i, 11), NULL, 10);
            double d = dtype_value_to_double(dtype, bits);
            json_object_set_new(o, "value", isfinite(d) ? json_real(d) : json_null());
            json_object_set_new(o, "value_bits", hex_or_null(r, i, 11));
        }
        if (!PQgetisnull(r, i, 13))
            json_object_set_new(o, "inputs", hex_array(r, i, 13));
        if (!PQgetisnull(r, i, 14))
            json_object_set_new(o, "chunks", hex_array(r, i, 14));
        json_array_append_new(recs, o);
    }
    PQclear(r);
    return http_reply_json(req, 200, json_pack("{s:s, s:I, s:o}", "run_id", run.run_id, "rank", (json_int_t)rank,
                                               "records", recs));
}

enum MHD_Result read_admin_retention(http_req *req)
{
    if (!http_is_admin(req)) {
        int none = !http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
        return http_reply_error(req, none ? 401 : 403, none ? "authentication required" : "admin token required",
                                "this is an admin endpoint", "send Authorization: Bearer <admin token>");
    }
    int keep = g_srv.cfg.retain_days;
    if (req->len) {
        json_t *o = json_loadb(req->body, req->len, 0, NULL);
        json_t *d = o ? json_object_get(o, "retain_days") : NULL;
        if (!o || (d && (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > 100000))) {
            json_decref(o);
            return http_reply_error(req, 400, "bad request", "the body is {\"retain_days\": N} with N >= 0",
                                    "omit the body to use retain_days from lockstepd.conf");
        }
        if (d)
            keep = (int)json_integer_value(d);
        json_decref(o);
    }
    if (keep <= 0)
        return http_reply_error(req, 400, "no retention configured", "retain_days is 0 (keep everything)",
                                "set retain_days in lockstepd.conf or send {\"retain_days\": N}");
    char err[512];
    int dropped = maint_drop_old(keep, err, sizeof(err));
    if (dropped < 0)
        return db_down(req, err);
    return http_reply_json(req, 200, json_pack("{s:i, s:i}", "retain_days", keep, "dropped_partitions", dropped));
}
