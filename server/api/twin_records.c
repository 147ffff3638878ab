/* twin_records.c - GET /api/v1/twins/{group}/records: every run's records at one step and rank, side by side, judged by the one rule. */
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
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/db.h"

/* One record of one run at the step and rank asked for. */
typedef struct grec {
    int run;
    rec_record rec;
    int row; /* its index in PGresult */
    unsigned char ext[REC_EXT_MAX];
} grec;

static int grec_by_key(const void *pa, const void *pb)
{
    const grec *a = pa, *b = pb;
    int c = strcmp(a->rec.name, b->rec.name);
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
    return strcmp(x->rec.name, y->rec.name);
}

#define STEP_MAX_ROWS 200000 /* records of one step and rank, all runs together, one request reads */

/* row_json - one row: the key, per run its cell, and what the one rule (common/recmatch.h) says of them. */
static json_t *row_json(const grow *w, int nruns, const group_runs *g, PGresult *r)
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
        int i = c->row;
        rec_diff d = rec_compare(rr, &c->rec);
        if (d != REC_SAME) {
            differs = 1;
            if (worst == REC_SAME)
                worst = d;
        }
        json_t *o = json_pack("{s:I, s:o, s:I, s:b}", "seq", (json_int_t)c->rec.seq, "fp", pg_hex64(r, i, 8),
                              "nbytes", (json_int_t)c->rec.nbytes, "same", d == REC_SAME);
        if (c->rec.flags & REC_HAS_VALUE) {
            double v = dtype_value_to_double(c->rec.dtype, c->rec.value);
            json_object_set_new(o, "value", isfinite(v) ? json_real(v) : json_null());
            json_object_set_new(o, "value_bits", pg_hex64(r, i, 9));
            if (k != ref && (rr->flags & REC_HAS_VALUE) && c->rec.dtype == rr->dtype && c->rec.dtype != LS_BYTES) {
                uint64_t u = dtype_ulp_distance(c->rec.dtype, rr->value, c->rec.value);
                json_object_set_new(o, "ulp", u == UINT64_MAX ? json_null() : json_integer((json_int_t)u));
                if (u != UINT64_MAX && (!has_ulp || u > max_ulp))
                    max_ulp = u;
                has_ulp |= u != UINT64_MAX;
            }
        }
        if (!PQgetisnull(r, i, 11))
            json_object_set_new(o, "inputs", pg_hex_array(r, i, 11));
        if (!PQgetisnull(r, i, 12))
            json_object_set_new(o, "chunks", pg_hex_array(r, i, 12));
        pg_record_extras(o, c->rec.flags, r, i, 18);
        all_inputs &= !PQgetisnull(r, i, 11);
        if (all_inputs && strcmp(PQgetvalue(r, i, 11), PQgetvalue(r, w->cell[ref]->row, 11)))
            inputs_same = 0;
        all_chunks &= !PQgetisnull(r, i, 12);
        json_object_set_new(o, "site", pg_site(r, i, 13));
        json_object_set_new(cells, PQgetvalue(g->res, k, 1), o);
    }
    const char *status = missing ? "missing" : differs ? "diverged" : "match";
    json_t *o = json_pack("{s:I, s:s#, s:i, s:s, s:s, s:o, s:s, s:s?, s:s, s:o, s:o}", "seq", (json_int_t)w->seq, "name",
                          rr->name, (int)rr->name_len, "occurrence", (int)rr->occurrence, "level",
                          level_name(rr->level), "dtype", dtype_name(rr->dtype), "shape",
                          pg_int_array(PQgetvalue(r, w->cell[ref]->row, 10), 0), "status", status, "diff",
                          differs ? rec_diff_name(worst) : NULL, "reference", PQgetvalue(g->res, ref, 1), "cells", cells,
                          "ulp", has_ulp ? json_integer((json_int_t)max_ulp) : json_null());
    /* What the inputs and the 1 MiB chunk partials say: a record that differs while its inputs matched is
     * where the divergence arose; the first differing chunk locates it. */
    int present = 0;
    for (int k = 0; k < nruns; k++)
        present += w->cell[k] != NULL;
    json_object_set_new(o, "inputs", present >= 2 && all_inputs ? json_string(inputs_same ? "matched" : "differ")
                                                                 : json_null());
    json_t *chunk = json_null();
    if (differs && present >= 2 && all_chunks) {
        const char *ta = PQgetvalue(r, w->cell[ref]->row, 12);
        int cap = (int)strlen(ta) / 2 + 1;
        int64_t *a = xmalloc((size_t)cap * sizeof(int64_t)), *b = NULL;
        int na = db_int_array_parse(ta, a, cap);
        for (int k = 0; k < nruns && json_is_null(chunk); k++) {
            if (!w->cell[k] || k == ref)
                continue;
            b = xrealloc(b, (size_t)cap * sizeof(int64_t));
            int nb = db_int_array_parse(PQgetvalue(r, w->cell[k]->row, 12), b, cap);
            for (int c = 0; c < na && c < nb; c++)
                if (a[c] != b[c]) {
                    chunk = json_integer(c);
                    break;
                }
        }
        free(a);
        free(b);
    }
    json_object_set_new(o, "first_chunk", chunk);
    json_object_set_new(o, "site", pg_site(r, w->cell[ref]->row, 13)); /* the reference run's */
    return o;
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
    char keys[GROUP_KEYS_CAP], rk[24], st[32], lim[24], err[512];
    group_keys(&g, keys, sizeof(keys));
    snprintf(rk, sizeof(rk), "%lld", rank);
    snprintf(st, sizeof(st), "%lld", step);
    snprintf(lim, sizeof(lim), "%d", STEP_MAX_ROWS + 1);
    const char *p[] = {keys, rk, st, lim};
    PGresult *r = db_exec("grp_records", 4, p, err, sizeof(err));
    if (!r) {
        PQclear(g.res);
        return http_reply_db_down(req, err);
    }
    int n = PQntuples(r);
    if (n > STEP_MAX_ROWS) {
        PQclear(r);
        PQclear(g.res);
        return http_reply_error(req, 413, "too many records at this step",
                                "one step and rank of this group holds more than 200000 records (all runs together)",
                                "read each run's records with GET /api/v1/runs/{id}/records?rank=&step=, paged");
    }
    grec *recs = xcalloc((size_t)n + 1, sizeof(*recs));
    for (int i = 0; i < n; i++) {
        grec *c = &recs[i];
        c->row = i;
        c->run = group_run_index(&g, strtoll(PQgetvalue(r, i, 0), NULL, 10));
        rec_record *x = &c->rec;
        x->seq = strtoull(PQgetvalue(r, i, 1), NULL, 10);
        x->name = PQgetvalue(r, i, 2);
        x->name_len = (uint16_t)PQgetlength(r, i, 2);
        x->occurrence = (uint32_t)strtoul(PQgetvalue(r, i, 3), NULL, 10);
        x->level = (uint8_t)atoi(PQgetvalue(r, i, 4));
        x->dtype = (uint8_t)atoi(PQgetvalue(r, i, 5));
        x->flags = (uint8_t)atoi(PQgetvalue(r, i, 6));
        x->nbytes = strtoull(PQgetvalue(r, i, 7), NULL, 10);
        x->fp = (uint64_t)strtoll(PQgetvalue(r, i, 8), NULL, 10);
        if (!PQgetisnull(r, i, 9)) {
            x->flags |= REC_HAS_VALUE;
            x->value = (uint64_t)strtoll(PQgetvalue(r, i, 9), NULL, 10);
        } else {
            x->flags &= (uint8_t)~REC_HAS_VALUE;
        }
        x->ndim = (uint8_t)db_int_array_parse(PQgetvalue(r, i, 10), x->shape, LS_MAX_DIMS);
        pg_ext_decode(r, i, 18, c->ext, x);
    }
    qsort(recs, (size_t)n, sizeof(*recs), grec_by_key);
    grow *rows = xcalloc((size_t)n + 1, sizeof(*rows));
    size_t nrows = 0;
    for (int i = 0; i < n;) {
        grow *w = &rows[nrows++];
        w->seq = INT64_MAX;
        int j = i;
        for (; j < n && !strcmp(recs[j].rec.name, recs[i].rec.name) &&
               recs[j].rec.occurrence == recs[i].rec.occurrence;
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
        json_array_append_new(items, row_json(&rows[i], g.n, &g, r));
    json_t *ids = json_array();
    for (int i = 0; i < g.n; i++)
        json_array_append_new(ids, json_string(PQgetvalue(g.res, i, 1)));
    long long next = (size_t)(offset + limit) < nrows ? offset + limit : -1;
    json_t *o = api_list(items, (long long)nrows, limit, next);
    json_object_set_new(o, "group", json_string(group));
    json_object_set_new(o, "rank", json_integer(rank));
    json_object_set_new(o, "step", json_integer(step));
    json_object_set_new(o, "runs", ids);
    free(rows);
    free(recs);
    PQclear(r);
    PQclear(g.res);
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/twins/{}/records", MR_READ, AUTH_SELF, read_twin_records},
};

void api_twin_records_register(void)
{
    db_register("grp_records", "SELECT run_key, seq, name, occ, level, dtype, flags, nbytes, fp, value, shape::text, "
                               "inputs::text, chunks::text, " SITE_COLS ", encode(ext, 'hex') FROM records "
                               "WHERE run_key = ANY($1::bigint[]) AND rank = $2 AND step = $3 AND flags & 12 = 0 "
                               "LIMIT $4");
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
