/* twin_records.c - GET /api/v1/twins/{group}/records: every run's records at one step and rank, side by side, judged by
 * the one rule. */
#include "server/api/twin_records.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/recmatch.h"
#include "server/api/group.h"
#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/api/recview.h"
#include "server/twins/first_json.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/db.h"
#include "server/store/frames.h"

/* One record of one run at the step and rank asked for. */
typedef struct grec {
    int run;
    rec_record rec;
} grec;

/* name_cmp - the names' order (as strcmp orders them: bytewise, a prefix first). */
static int name_cmp(const rec_record *a, const rec_record *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    return c ? c : (int)a->name_len - (int)b->name_len;
}

static int words_same(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof(uint64_t)) == 0);
}

static int grec_by_key(const void *pa, const void *pb)
{
    const grec *a = pa, *b = pb;
    int c = name_cmp(&a->rec, &b->rec);
    if (c)
        return c;
    if (a->rec.occurrence != b->rec.occurrence)
        return a->rec.occurrence < b->rec.occurrence ? -1 : 1;
    return a->run - b->run;
}

/* One (name, occurrence) across the runs. */
typedef struct grow {
    int64_t seq; /* the smallest seq of any run */
    const grec *cell[GROUP_MAX_RUNS];
} grow;

static int grow_by_seq(const void *pa, const void *pb)
{
    const grow *a = pa, *b = pb;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    const grec *x = NULL, *y = NULL;
    for (int k = 0; k < GROUP_MAX_RUNS && (!x || !y); k++) {
        x = x ? x : a->cell[k];
        y = y ? y : b->cell[k];
    }
    return name_cmp(&x->rec, &y->rec);
}

#define STEP_MAX_ROWS 200000 /* records of one step and rank, all runs together, one request reads */

/* row_json - one row: the key, per run its cell, and what the one rule (common/recmatch.h) says of them. */
static json_t *row_json(const grow *w, int nruns, const group_runs *g)
{
    /* The reference: the first run of the content more than half of the runs hold, else the first present. */
    int ref = -1;
    for (int k = 0; k < nruns && ref < 0; k++) {
        if (!w->cell[k])
            continue;
        int votes = 0;
        for (int m = 0; m < nruns; m++)
            votes += w->cell[m] && rec_compare(&w->cell[k]->rec, &w->cell[m]->rec) == REC_SAME;
        if (2 * votes > nruns)
            ref = k;
    }
    for (int k = 0; k < nruns && ref < 0; k++)
        if (w->cell[k])
            ref = k;
    const rec_record *rr = &w->cell[ref]->rec;
    int missing = 0, differs = 0, all_inputs = 1, inputs_same = 1, all_chunks = 1;
    rec_diff worst = REC_SAME;
    uint64_t max_ulp = 0;
    int has_ulp = 0;
    json_t *cells = json_object();
    for (int k = 0; k < nruns; k++) {
        const grec *c = w->cell[k];
        if (!c) {
            missing = 1;
            continue;
        }
        rec_diff d = rec_compare(rr, &c->rec);
        if (d != REC_SAME) {
            differs = 1;
            if (worst == REC_SAME)
                worst = d;
        }
        json_t *o = json_pack("{s:I, s:o, s:I, s:b}", "seq", (json_int_t)c->rec.seq, "fp", rv_hex64(c->rec.fp),
                              "nbytes", (json_int_t)c->rec.nbytes, "same", d == REC_SAME);
        if (c->rec.flags & REC_HAS_VALUE) {
            double v = dtype_value_to_double(c->rec.dtype, c->rec.value);
            json_object_set_new(o, "value", isfinite(v) ? json_real(v) : json_null());
            json_object_set_new(o, "value_bits", rv_hex64(c->rec.value));
            if (k != ref && (rr->flags & REC_HAS_VALUE) && c->rec.dtype == rr->dtype && c->rec.dtype != LS_BYTES) {
                uint64_t u = dtype_ulp_distance(c->rec.dtype, rr->value, c->rec.value);
                json_object_set_new(o, "ulp", u == UINT64_MAX ? json_null() : json_integer((json_int_t)u));
                if (u != UINT64_MAX && (!has_ulp || u > max_ulp))
                    max_ulp = u;
                has_ulp |= u != UINT64_MAX;
            }
        }
        const rec_record *x = &c->rec;
        if (x->n_inputs)
            json_object_set_new(o, "inputs", rv_hex_words(x->inputs, x->n_inputs));
        if (x->n_chunks)
            json_object_set_new(o, "chunks", rv_hex_words(x->chunks, x->n_chunks));
        all_inputs &= x->n_inputs > 0;
        if (all_inputs && !words_same(x->inputs, x->n_inputs, rr->inputs, rr->n_inputs))
            inputs_same = 0;
        all_chunks &= x->n_chunks > 0;
        pg_rec_extras(o, x);
        json_object_set_new(o, "site", first_json_site(&x->site));
        json_object_set_new(cells, PQgetvalue(g->res, k, 1), o);
    }
    const char *status = missing ? "missing" : differs ? "diverged" : "match";
    json_t *o =
        json_pack("{s:I, s:s#, s:i, s:s, s:s, s:o, s:s, s:s?, s:s, s:o, s:o}", "seq", (json_int_t)w->seq, "name",
                  rr->name, (int)rr->name_len, "occurrence", (int)rr->occurrence, "level", level_name(rr->level),
                  "dtype", dtype_name(rr->dtype), "shape", rv_shape(rr), "status", status, "diff",
                  differs ? rec_diff_name(worst) : NULL, "reference", PQgetvalue(g->res, ref, 1), "cells", cells, "ulp",
                  has_ulp ? json_integer((json_int_t)max_ulp) : json_null());
    /* What the inputs and the 1 MiB chunk partials say: a record that differs while its inputs matched is
     * where the divergence arose; the first differing chunk locates it. */
    int present = 0;
    for (int k = 0; k < nruns; k++)
        present += w->cell[k] != NULL;
    json_object_set_new(o, "inputs",
                        present >= 2 && all_inputs ? json_string(inputs_same ? "matched" : "differ") : json_null());
    json_t *chunk = json_null();
    if (differs && present >= 2 && all_chunks) {
        for (int k = 0; k < nruns && json_is_null(chunk); k++) {
            if (!w->cell[k] || k == ref)
                continue;
            const rec_record *x = &w->cell[k]->rec;
            for (uint32_t c = 0; c < rr->n_chunks && c < x->n_chunks; c++)
                if (rr->chunks[c] != x->chunks[c]) {
                    chunk = json_integer(c);
                    break;
                }
        }
    }
    json_object_set_new(o, "first_chunk", chunk);
    json_object_set_new(o, "site", first_json_site(&w->cell[ref]->rec.site)); /* the reference run's */
    return o;
}

enum MHD_Result api_records_side_by_side(http_req *req, group_runs *g, long long rank, long long step, long long limit,
                                         long long offset, json_t *extras)
{
    frame_set set = {0};
    char err[512];
    int rc = frames_read_step(g->keys, g->n, (uint32_t)rank, step, &set, err, sizeof(err));
    if (rc < 0) {
        frame_set_release(&set);
        PQclear(g->res);
        json_decref(extras);
        return rv_reply_read_error(req, rc, err);
    }
    int n = (int)set.n;
    if (n > STEP_MAX_ROWS) {
        frame_set_release(&set);
        PQclear(g->res);
        json_decref(extras);
        return http_reply_error(req, 413, "too many records at this step",
                                "one step and rank of these runs holds more than 200000 records (all runs together)",
                                "read each run's records with GET /api/v1/runs/{id}/records?rank=&step=, paged");
    }
    grec *recs = xcalloc((size_t)n + 1, sizeof(*recs));
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (!rec_in_steps(&set.recs[i]))
            continue; /* entries of state blocks are no step records (common/recmatch.h) */
        recs[kept].run = group_run_index(g, set.run_key[i]);
        recs[kept].rec = set.recs[i];
        kept++;
    }
    n = kept;
    qsort(recs, (size_t)n, sizeof(*recs), grec_by_key);
    grow *rows = xcalloc((size_t)n + 1, sizeof(*rows));
    size_t nrows = 0;
    for (int i = 0; i < n;) {
        grow *w = &rows[nrows++];
        w->seq = INT64_MAX;
        int j = i;
        for (; j < n && !name_cmp(&recs[j].rec, &recs[i].rec) && recs[j].rec.occurrence == recs[i].rec.occurrence;
             j++) {
            if (recs[j].run >= 0 && !w->cell[recs[j].run])
                w->cell[recs[j].run] = &recs[j];
            if ((int64_t)recs[j].rec.seq < w->seq)
                w->seq = (int64_t)recs[j].rec.seq;
        }
        i = j;
    }
    qsort(rows, nrows, sizeof(*rows), grow_by_seq);
    json_t *items = json_array();
    int rows_left = (int)limit;
    for (size_t i = (size_t)offset; i < nrows && rows_left > 0; i++, rows_left--)
        json_array_append_new(items, row_json(&rows[i], g->n, g));
    json_t *ids = json_array();
    for (int i = 0; i < g->n; i++)
        json_array_append_new(ids, json_string(PQgetvalue(g->res, i, 1)));
    long long next = (size_t)(offset + limit) < nrows ? offset + limit : -1;
    json_t *o = api_list(items, (long long)nrows, limit, next);
    if (extras)
        json_object_update(o, extras);
    json_decref(extras);
    json_object_set_new(o, "rank", json_integer(rank));
    json_object_set_new(o, "step", json_integer(step));
    json_object_set_new(o, "runs", ids);
    free(rows);
    free(recs);
    frame_set_release(&set);
    PQclear(g->res);
    return http_reply_json(req, 200, o);
}

/* read_twin_records - GET /api/v1/twins/{group}/records?rank=R&step=S: the records of every run of the group at
 * one step and rank, side by side, one row per (name, occurrence) in sequence order, with each row's status
 * and differences judged by the one rule (common/recmatch.h) and ULP distances computed here. */
static enum MHD_Result read_twin_records(http_req *req, char **args)
{
    const char *group = args[0];
    long long rank, step, limit, offset;
    if (api_int_arg(req, "rank", 0, INT32_MAX, 0, &rank) < 0 ||
        api_int_arg(req, "step", INT64_MIN, INT64_MAX, 0, &step) < 0 ||
        api_page(req, 10000, 100000, NULL, 0, &limit, &offset) < 0)
        return MHD_YES;
    if (!http_query(req, "step"))
        return http_reply_error(req, 400, "missing step", "?step= names the step to show",
                                "e.g. /api/v1/twins/G/records?rank=0&step=8");
    group_runs g;
    enum MHD_Result sent;
    if (!group_open_for(req, group, &g, &sent))
        return sent;
    return api_records_side_by_side(req, &g, rank, step, limit, offset, json_pack("{s:s}", "group", g.key));
}

static const route ROUTES[] = {
    {"GET", "/api/v1/twins/{}/records", MR_READ, AUTH_SELF, read_twin_records, .reads = 1},
};

void api_twin_records_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
