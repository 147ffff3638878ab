/* twin_deltas.c - GET /api/v1/twins/{group}/deltas: each run's per-step distance from the majority on a twin group's
 * scalar series (the twin page's delta plot). */
#include "server/api/twin_deltas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "server/api/group.h"
#include "server/api/recview.h"
#include "server/api/series.h"
#include "server/rules/delta.h"
#include "server/core/limits.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/frames.h"

/* Points read over every run of one request: a run's share of it bounds what it reads (the answer is a few
 * numbers per point and run). */
#define DELTA_MAX_POINTS 400000

/* One point of one run's series. */
typedef struct pt {
    int64_t step;
    unsigned dtype;
    uint64_t bits;
} pt;

/* One run's points of each name, in step order. */
typedef struct run_pts {
    pt *of[SERIES_MAX_NAMES];
    size_t n[SERIES_MAX_NAMES];
} run_pts;

static void run_pts_free(run_pts *r)
{
    for (int k = 0; k < SERIES_MAX_NAMES; k++)
        free(r->of[k]);
}

/* read_run - the points of `names` of run `key`, rank `rank` (at most `limit`; a second point of a name at one step
 * is left out) into `out`. Returns 0 (*full set when the limit cut it), else frames_read_series's failure with `err`.
 */
static int read_run(int64_t key, uint32_t rank, const char *const *names, int count, long long limit, run_pts *out,
                    int *full, char *err, size_t cap)
{
    frame_set set = {0};
    memset(out, 0, sizeof(*out));
    int rc = frames_read_series(key, rank, names, count, limit, &set, err, cap);
    if (rc == 0) {
        *full = (long long)set.n >= limit;
        for (int k = 0; k < count; k++)
            out->of[k] = xcalloc(set.n + 1, sizeof(pt));
        for (size_t i = 0; i < set.n; i++) {
            const rec_record *r = &set.recs[i];
            for (int k = 0; k < count; k++) {
                if (strlen(names[k]) != r->name_len || memcmp(names[k], r->name, r->name_len))
                    continue;
                size_t *n = &out->n[k];
                if (!*n || out->of[k][*n - 1].step != r->step)
                    out->of[k][(*n)++] = (pt){r->step, r->dtype, r->value};
                break; /* a name given twice: its first place */
            }
        }
    }
    frame_set_release(&set);
    return rc;
}

/* series_json - the series of name `k` over the runs `rp` (ids `ids`): the steps any run holds, each run's "ulp" and
 * "rel" at each (delta_step; null where the run has no point or the distance does not apply), the dtype of its
 * first point, and the first step where a run holds another value than the reference. */
static json_t *series_json(const char *name, int k, run_pts *rp, const char *const *ids, int nruns)
{
    size_t *at = xcalloc((size_t)nruns + 1, sizeof(size_t));
    delta_point *pts = xcalloc((size_t)nruns + 1, sizeof(delta_point));
    delta_dist *out = xcalloc((size_t)nruns + 1, sizeof(delta_dist));
    json_t *steps = json_array(), *runs = json_array(), *first = json_null();
    const char *dtype = NULL;
    for (int r = 0; r < nruns; r++)
        json_array_append_new(runs, json_pack("{s:s, s:[], s:[]}", "run_id", ids[r], "ulp", "rel"));
    for (;;) {
        int64_t step = INT64_MAX;
        for (int r = 0; r < nruns; r++)
            if (at[r] < rp[r].n[k] && rp[r].of[k][at[r]].step < step)
                step = rp[r].of[k][at[r]].step;
        if (step == INT64_MAX)
            break;
        for (int r = 0; r < nruns; r++) {
            const pt *p = at[r] < rp[r].n[k] ? &rp[r].of[k][at[r]] : NULL;
            pts[r] = p && p->step == step ? (delta_point){1, p->dtype, p->bits} : (delta_point){0, 0, 0};
            at[r] += pts[r].has;
            if (pts[r].has && !dtype)
                dtype = dtype_name(p->dtype);
        }
        delta_step(pts, nruns, out);
        json_array_append_new(steps, json_integer(step));
        int differs = 0;
        for (int r = 0; r < nruns; r++) {
            json_t *o = json_array_get(runs, (size_t)r);
            json_array_append_new(json_object_get(o, "ulp"),
                                  out[r].has_ulp
                                      ? json_integer((json_int_t)(out[r].ulp > INT64_MAX ? INT64_MAX : out[r].ulp))
                                      : json_null());
            json_array_append_new(json_object_get(o, "rel"), out[r].has_rel ? json_real(out[r].rel) : json_null());
            differs |= pts[r].has && ((out[r].has_ulp && out[r].ulp) || (out[r].has_rel && out[r].rel > 0) ||
                                      (!out[r].has_ulp && !out[r].has_rel));
        }
        if (differs && json_is_null(first)) {
            json_decref(first);
            first = json_integer(step);
        }
    }
    free(at);
    free(pts);
    free(out);
    return json_pack("{s:s, s:s?, s:o, s:o, s:o}", "name", name, "dtype", dtype, "steps", steps, "first_step", first,
                     "runs", runs);
}

/* read_twin_deltas - GET /api/v1/twins/{group}/deltas?rank=0&name=loss,grad_norm&limit=100000: for each named
 * scalar series of the rank, each run's distance from the majority at each step (server/rules/delta.h). */
static enum MHD_Result read_twin_deltas(http_req *req, char **args)
{
    group_runs g;
    enum MHD_Result sent;
    if (!group_open_for(req, args[0], &g, &sent))
        return sent;
    const char *rs = http_query(req, "rank"), *ns = http_query(req, "name"), *ls = http_query(req, "limit");
    char *end, buf[2048];
    long rank = rs && *rs ? strtol(rs, &end, 10) : 0;
    long limit = ls && *ls ? strtol(ls, &end, 10) : SERIES_MAX_POINTS;
    const char *names[SERIES_MAX_NAMES];
    int count;
    if (rank < 0 || rank > UINT32_MAX || limit < 1 || limit > SERIES_MAX_POINTS ||
        series_name_list(ns && *ns ? ns : "loss,grad_norm", buf, sizeof(buf), names, &count) < 0) {
        PQclear(g.res);
        return http_reply_error(req, 400, "bad deltas request",
                                "?name= takes 1 to 16 comma-separated record names (loss,grad_norm by default); rank "
                                ">= 0; limit 1..100000 points of each run",
                                "e.g. /api/v1/twins/G/deltas?rank=0&name=loss");
    }
    long per_run = DELTA_MAX_POINTS / (g.n ? g.n : 1);
    if (per_run < limit)
        limit = per_run;
    run_pts *rp = xcalloc((size_t)g.n + 1, sizeof(run_pts));
    const char **ids = xcalloc((size_t)g.n + 1, sizeof(char *));
    char err[512];
    int rc = 0, truncated = 0;
    for (int r = 0; r < g.n && rc == 0; r++) {
        int full = 0;
        ids[r] = PQgetvalue(g.res, r, 1);
        rc = read_run(g.keys[r], (uint32_t)rank, names, count, limit, &rp[r], &full, err, sizeof(err));
        truncated |= full;
    }
    enum MHD_Result res;
    if (rc != 0) {
        res = rv_reply_read_error(req, rc, err);
    } else {
        json_t *series = json_array();
        for (int k = 0; k < count; k++) {
            int dup = 0;
            for (int d = 0; d < k; d++)
                dup |= !strcmp(names[d], names[k]);
            if (!dup)
                json_array_append_new(series, series_json(names[k], k, rp, ids, g.n));
        }
        res = http_reply_json(req, 200,
                              json_pack("{s:s, s:I, s:I, s:b, s:o}", "group", g.key, "rank", (json_int_t)rank, "limit",
                                        (json_int_t)limit, "truncated", truncated, "series", series));
    }
    for (int r = 0; r < g.n; r++)
        run_pts_free(&rp[r]);
    free(rp);
    free(ids);
    PQclear(g.res);
    return res;
}

static const route ROUTES[] = {
    /* open, the admin, or a job's own token (?job=J) for its user's groups (group_reader) */
    {"GET", "/api/v1/twins/{}/deltas", MR_READ, AUTH_SELF, read_twin_deltas, .reads = 1},
};

void api_twin_deltas_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
