/* series.c - GET /api/v1/runs/{id}/series: a run's scalar metrics as compact step/value arrays (the curves). */
#include "server/api/series.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "server/api/run_ref.h"
#include "server/api/recview.h"
#include "server/core/limits.h"
#include "server/core/metrics.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/db.h"
#include "server/store/frames.h"
#include "server/store/runs.h"

int series_name_list(const char *list, char *buf, size_t cap, const char **names, int *count)
{
    *count = 0;
    if (strlen(list) >= cap)
        return -1;
    snprintf(buf, cap, "%s", list);
    for (char *p = buf;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        if (!*p || *count == SERIES_MAX_NAMES)
            return -1;
        names[(*count)++] = p;
        if (!comma)
            break;
        p = comma + 1;
    }
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
    char buf[2048];
    const char *names[SERIES_MAX_NAMES];
    int count;
    if (rank < 0 || rank > UINT32_MAX || limit < 1 || limit > SERIES_MAX_POINTS || !ns ||
        series_name_list(ns, buf, sizeof(buf), names, &count) < 0)
        return http_reply_error(req, 400, "bad series request",
                                "?name= takes 1 to 16 comma-separated record names; rank >= 0; limit 1..100000",
                                "e.g. /api/v1/runs/ID/series?rank=0&name=loss,grad_norm");
    frame_set set = {0};
    char err[512];
    int rc = frames_read_series(run.key, (uint32_t)rank, names, count, limit, &set, err, sizeof(err));
    if (rc < 0) {
        frame_set_release(&set);
        return rv_reply_read_error(req, rc, err);
    }
    json_t *series = json_array();
    json_t *by_name[SERIES_MAX_NAMES] = {0}; /* each name's series object (borrowed), in order of first point */
    for (size_t i = 0; i < set.n; i++) {
        const rec_record *r = &set.recs[i];
        int k = 0;
        while (k < count && !(strlen(names[k]) == r->name_len && !memcmp(names[k], r->name, r->name_len)))
            k++;
        if (k == count)
            continue;
        for (int d = 0; d < k; d++) /* a name given twice: its first place */
            if (!strcmp(names[d], names[k])) {
                k = d;
                break;
            }
        json_t *s = by_name[k];
        if (!s) {
            s = json_pack("{s:s, s:[], s:[], s:[]}", "name", names[k], "steps", "values", "value_bits");
            json_array_append_new(series, s);
            by_name[k] = s;
        }
        double v = dtype_value_to_double(r->dtype, r->value);
        char hex[17];
        snprintf(hex, sizeof(hex), "%016" PRIx64, r->value);
        json_array_append_new(json_object_get(s, "steps"), json_integer(r->step));
        json_array_append_new(json_object_get(s, "values"), isfinite(v) ? json_real(v) : json_null());
        json_array_append_new(json_object_get(s, "value_bits"), json_string(hex));
    }
    frame_set_release(&set);
    return http_reply_json(
        req, 200, json_pack("{s:s, s:I, s:o}", "run_id", run.run_id, "rank", (json_int_t)rank, "series", series));
}

static const route ROUTES[] = {
    {"GET", "/api/v1/runs/{}/series", MR_READ, AUTH_READ, read_run_series, .reads = 1},
};

void api_series_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
