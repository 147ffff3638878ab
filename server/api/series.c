/* series.c - GET /api/v1/runs/{id}/series: a run's scalar metrics as compact step/value arrays (the curves). */
#include "server/api/series.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "server/api/run_ref.h"
#include "server/core/metrics.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/db.h"
#include "server/store/runs.h"

#define SERIES_MAX_NAMES 16


/* name_array - "loss,grad_norm" as a PostgreSQL text[] literal, quoted; -1
 * when a name is empty or there are too many. */
static int name_array(const char *list, char *out, size_t cap, int *count)
{
    size_t n = 0;
    *count = 0;
    out[n++] = '{';
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || ++*count > SERIES_MAX_NAMES || n + 2 * len + 4 >= cap)
            return -1;
        if (*count > 1)
            out[n++] = ',';
        out[n++] = '"';
        for (size_t i = 0; i < len; i++) {
            if (p[i] == '"' || p[i] == '\\')
                out[n++] = '\\';
            out[n++] = p[i];
        }
        out[n++] = '"';
        if (!comma)
            break;
        p = comma + 1;
    }
    out[n++] = '}';
    out[n] = 0;
    return 0;
}

static enum MHD_Result read_run_series(http_req *req, char **args)
{
    const char *run_id = args[0];
    run_info run;
    if (api_run_find(req, run_id, &run, "list runs with GET /api/v1/runs") < 0)
        return MHD_YES;
    const char *rs = http_query(req, "rank"), *ns = http_query(req, "name"), *ls = http_query(req, "limit");
    char *end;
    long rank = rs && *rs ? strtol(rs, &end, 10) : 0;
    long limit = ls && *ls ? strtol(ls, &end, 10) : 100000;
    char names[2048];
    int count;
    if (rank < 0 || limit < 1 || limit > 1000000 || !ns || name_array(ns, names, sizeof(names), &count) < 0)
        return http_reply_error(req, 400, "bad series request",
                                "?name= takes 1 to 16 comma-separated record names; rank >= 0; limit 1..1000000",
                                "e.g. /api/v1/runs/ID/series?rank=0&name=loss,grad_norm");
    char key[32], rk[32], lim[32], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run.key);
    snprintf(rk, sizeof(rk), "%ld", rank);
    snprintf(lim, sizeof(lim), "%ld", limit);
    const char *p[] = {key, rk, names, lim};
    PGresult *r = db_exec("run_series", 4, p, err, sizeof(err));
    if (!r)
        return http_reply_db_down(req, err);

    json_t *series = json_array();
    json_t *by_name = json_object(); /* name -> its series object (borrowed) */
    for (int i = 0; i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 0);
        json_t *s = json_object_get(by_name, name);
        if (!s) {
            s = json_pack("{s:s, s:[], s:[], s:[]}", "name", name, "steps", "values", "value_bits");
            json_array_append_new(series, s);
            json_object_set(by_name, name, s);
        }
        uint64_t bits = (uint64_t)strtoll(PQgetvalue(r, i, 2), NULL, 10);
        double v = dtype_value_to_double((unsigned)atoi(PQgetvalue(r, i, 3)), bits);
        char hex[17];
        snprintf(hex, sizeof(hex), "%016" PRIx64, bits);
        json_array_append_new(json_object_get(s, "steps"), json_integer(strtoll(PQgetvalue(r, i, 1), NULL, 10)));
        json_array_append_new(json_object_get(s, "values"), isfinite(v) ? json_real(v) : json_null());
        json_array_append_new(json_object_get(s, "value_bits"), json_string(hex));
    }
    PQclear(r);
    json_decref(by_name);
    return http_reply_json(req, 200, json_pack("{s:s, s:I, s:o}", "run_id", run.run_id, "rank", (json_int_t)rank,
                                               "series", series));
}

static const route ROUTES[] = {
    {"GET", "/api/v1/runs/{}/series", MR_READ, AUTH_READ, read_run_series},
};

void api_series_register(void)
{
    db_register("run_series", "SELECT name, step, value, dtype FROM records WHERE run_key = $1 AND rank = $2 "
                              "AND name = ANY($3::text[]) AND occ = 0 AND value IS NOT NULL "
                              "ORDER BY step, seq LIMIT $4");
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
