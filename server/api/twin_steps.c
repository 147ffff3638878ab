/* twin_steps.c - GET /api/v1/twins/{group}/steps: per step and rank, whether the group's runs match, from the step digests; bounded in memory and time whatever is stored. */
#include "server/api/twin_steps.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/group.h"
#include "server/api/list.h"
#include "server/core/limits.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/db.h"

/* One step digest row, parsed. */
typedef struct dig {
    int64_t step;
    int rank;
    int run; /* index into the group's runs */
    int64_t n, digest;
} dig;

static int by_step_rank(const void *a, const void *b)
{
    const dig *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* How far one run got on one rank: one row of rank_progress, parsed. */
typedef struct prog {
    int rank;
    int run;
    int64_t max_step;
    int ended;
} prog;

static int by_rank_run(const void *a, const void *b)
{
    const prog *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->run - y->run;
}

/* progress_of - the progress rows of `rank` (sorted by rank, run): the first in *first, how many returned. */
static int progress_of(const prog *p, int n, int rank, int *first)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (p[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    int k = lo;
    while (k < n && p[k].rank == rank)
        k++;
    *first = lo;
    return k - lo;
}

/* sat_add - a + b without overflow (saturating at the int64 ends). */
static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

/* step_status - one rank's status at `step` from its digest rows [i, j) and every run's progress there. */
static const char *step_status(const dig *rows, int i, int j, const prog *p, int np, const group_runs *g, int logical,
                               int *present)
{
    int differs = 0;
    for (int k = i; k < j; k++)
        if (rows[k].digest != rows[i].digest || rows[k].n != rows[i].n)
            differs = 1;
    *present = j - i;
    int first, n = progress_of(p, np, rows[i].rank, &first);
    const prog *by_run[GROUP_MAX_RUNS] = {0};
    for (int k = first; k < first + n; k++)
        by_run[p[k].run] = &p[k];
    int pending = 0, runs_in = 0;
    int64_t step = rows[i].step;
    for (int r = 0; r < g->n; r++) {
        const prog *pg = by_run[r];
        if (!pg) {
            /* no records on this rank: pending while that run runs, missing once it has ended */
            if (!strcmp(PQgetvalue(g->res, r, 5), "running"))
                pending = 1;
            else if (step >= strtoll(PQgetvalue(g->res, r, 6), NULL, 10))
                runs_in++;
            continue;
        }
        runs_in++;
        if (pg->ended ? step > pg->max_step : step >= pg->max_step)
            pending = 1;
    }
    /* runs of different rank counts: rank r holds another piece in each; they are compared logically */
    return pending ? "pending" : logical ? "layout" : *present < runs_in ? "missing" : differs ? "diverged" : "match";
}

static enum MHD_Result read_twin_steps(http_req *req, char **args)
{
    const char *group = args[0];
    char err[512];
    group_runs g;
    enum MHD_Result sent;
    if (!group_open_for(req, group, &g, &sent))
        return sent;
    int64_t lo = INT64_MIN;
    for (int i = 0; i < g.n; i++) {
        int64_t s = strtoll(PQgetvalue(g.res, i, 6), NULL, 10);
        if (s > lo)
            lo = s;
    }
    long long from, to, rank_from, rank_to;
    const char *cs = http_query(req, "compact");
    int compact = cs && (!strcmp(cs, "1") || !strcmp(cs, "true"));
    if (api_int_arg(req, "from", INT64_MIN, INT64_MAX, lo, &from) < 0 ||
        api_int_arg(req, "to", INT64_MIN, INT64_MAX, sat_add(from, 999), &to) < 0 ||
        api_int_arg(req, "rank_from", 0, INT32_MAX, 0, &rank_from) < 0 ||
        api_int_arg(req, "rank_to", 0, INT32_MAX, sat_add(rank_from, STEPS_MAX_RANKS - 1), &rank_to) < 0) {
        PQclear(g.res);
        return MHD_YES;
    }
    if (to < from || sat_add(from, 100000) < to || rank_to < rank_from || rank_to - rank_from >= STEPS_MAX_RANKS) {
        PQclear(g.res);
        return http_reply_error(req, 400, "bad step range",
                                "?from= and ?to= must satisfy from <= to <= from + 100000, and ?rank_from= and "
                                "?rank_to= a window of at most " STEPS_MAX_RANKS_TEXT " ranks",
                                "ask for fewer steps or ranks at a time; follow next_from and next_rank_from");
    }
    if (from < lo)
        from = lo; /* steps before the latest start are not shared */
    if (to < from)
        to = from;
    char f[32], t[32], rf[16], rt[16], keys[GROUP_KEYS_CAP];
    snprintf(rf, sizeof(rf), "%lld", rank_from);
    snprintf(rt, sizeof(rt), "%lld", rank_to);
    group_keys(&g, keys, sizeof(keys));
    const char *pp[] = {keys, rf, rt};
    PGresult *pr = db_exec("steps_progress", 3, pp, err, sizeof(err));
    PGresult *more = pr ? db_exec("steps_more_ranks", 2, (const char *[]){keys, rt}, err, sizeof(err)) : NULL;
    if (!pr || !more) {
        PQclear(pr);
        PQclear(g.res);
        return http_reply_db_down(req, err);
    }
    int np = PQntuples(pr), nranks = 0;
    prog *p = xmalloc(((size_t)np + 1) * sizeof(*p));
    int kept = 0;
    for (int i = 0; i < np; i++) {
        int run = group_run_index(&g, strtoll(PQgetvalue(pr, i, 0), NULL, 10));
        if (run < 0)
            continue;
        p[kept] = (prog){atoi(PQgetvalue(pr, i, 1)), run, strtoll(PQgetvalue(pr, i, 2), NULL, 10),
                         PQgetvalue(pr, i, 3)[0] == 't'};
        if (p[kept].rank + 1 > nranks)
            nranks = p[kept].rank + 1;
        kept++;
    }
    np = kept;
    int more_ranks = PQntuples(more) > 0;
    PQclear(more);
    PQclear(pr);
    qsort(p, (size_t)np, sizeof(*p), by_rank_run);

    /* The step window holds at most STEPS_MAX_CELLS digest rows: one per run and rank that recorded,
     * per step. A longer window is cut, and next_from says where the next one starts. */
    int64_t cells = np > 0 ? np : 1;
    int64_t max_steps = STEPS_MAX_CELLS / cells > 0 ? STEPS_MAX_CELLS / cells : 1;
    int64_t asked_to = to;
    if (to - from + 1 > max_steps)
        to = from + max_steps - 1;

    /* Read the digests; rows the progress does not account for (data written some other way) could still
     * be more than the bound: then the window halves until they fit. */
    PGresult *sr = NULL;
    for (;;) {
        char lim[32];
        snprintf(f, sizeof(f), "%" PRId64, (int64_t)from);
        snprintf(t, sizeof(t), "%" PRId64, (int64_t)to);
        snprintf(lim, sizeof(lim), "%d", STEPS_MAX_CELLS + 1);
        const char *ps[] = {keys, f, t, rf, rt, lim};
        sr = db_exec("steps_digests", 6, ps, err, sizeof(err));
        if (!sr || PQntuples(sr) <= STEPS_MAX_CELLS || to == from)
            break;
        PQclear(sr);
        to = from + (to - from) / 2;
    }
    if (!sr) {
        free(p);
        PQclear(g.res);
        return http_reply_db_down(req, err);
    }
    int n = PQntuples(sr) < STEPS_MAX_CELLS ? PQntuples(sr) : STEPS_MAX_CELLS;
    dig *rows = xmalloc(((size_t)n + 1) * sizeof(*rows));
    int nr = 0;
    for (int i = 0; i < n; i++) {
        int run = group_run_index(&g, strtoll(PQgetvalue(sr, i, 0), NULL, 10));
        if (run < 0)
            continue;
        rows[nr++] = (dig){strtoll(PQgetvalue(sr, i, 2), NULL, 10), atoi(PQgetvalue(sr, i, 1)), run,
                           strtoll(PQgetvalue(sr, i, 3), NULL, 10), strtoll(PQgetvalue(sr, i, 4), NULL, 10)};
    }
    PQclear(sr);
    qsort(rows, (size_t)nr, sizeof(*rows), by_step_rank);

    int logical = 0;
    for (int r = 1; r < g.n; r++)
        logical |= strcmp(PQgetvalue(g.res, r, 7), PQgetvalue(g.res, 0, 7)) != 0;
    json_t *steps = json_array(), *cur_ranks = NULL;
    int64_t cur_step = 0;
    int have_cur = 0;
    for (int i = 0; i < nr;) {
        int j = i;
        while (j < nr && rows[j].step == rows[i].step && rows[j].rank == rows[i].rank)
            j++;
        int present;
        const char *status = step_status(rows, i, j, p, np, &g, logical, &present);
        if (!have_cur || rows[i].step != cur_step) {
            cur_ranks = json_array();
            json_array_append_new(steps, json_pack("{s:I, s:o}", "step", (json_int_t)rows[i].step, "ranks", cur_ranks));
            cur_step = rows[i].step;
            have_cur = 1;
        }
        if (compact) { /* ranks[r - rank_from] is rank r's status; null where no run recorded that rank */
            while ((long long)json_array_size(cur_ranks) < rows[i].rank - rank_from)
                json_array_append_new(cur_ranks, json_null());
            json_array_append_new(cur_ranks, json_string(status));
        } else {
            json_array_append_new(cur_ranks,
                                  json_pack("{s:i, s:s, s:i}", "rank", rows[i].rank, "status", status, "runs", present));
        }
        i = j;
    }
    free(p);
    free(rows);
    json_t *o = json_pack("{s:s, s:I, s:I, s:i, s:I, s:I, s:o}", "group", g.key, "from", (json_int_t)from, "to",
                          (json_int_t)to, "ranks", nranks, "rank_from", (json_int_t)rank_from, "rank_to",
                          (json_int_t)rank_to, "steps", steps);
    json_object_set_new(o, "logical", json_boolean(logical));
    PQclear(g.res);
    json_object_set_new(o, "next_from", to < asked_to ? json_integer(to + 1) : json_null());
    json_object_set_new(o, "next_rank_from", more_ranks ? json_integer(rank_to + 1) : json_null());
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/twins/{}/steps", MR_READ, AUTH_SELF, read_twin_steps},
};

void api_twin_steps_register(void)
{
    db_register("steps_progress",
                "SELECT p.run_key, p.rank, p.max_step, e.run_key IS NOT NULL OR r.status <> 'running' "
                "FROM rank_progress p JOIN runs r USING (run_key) LEFT JOIN rank_ends e "
                "ON e.run_key = p.run_key AND e.rank = p.rank "
                "WHERE p.run_key = ANY($1::bigint[]) AND p.rank BETWEEN $2::int AND $3::int");
    db_register("steps_more_ranks",
                "SELECT 1 FROM rank_progress WHERE run_key = ANY($1::bigint[]) AND rank > $2::int LIMIT 1");
    /* No ORDER BY: the rows are sorted in C, which spares PostgreSQL an on-disk sort of a
     * 500-step x 64-rank window (see bench/api). The LIMIT is the bound whatever is stored. */
    db_register("steps_digests", "SELECT run_key, rank, step, n, digest FROM step_digests "
                                 "WHERE run_key = ANY($1::bigint[]) AND step BETWEEN $2 AND $3 "
                                 "AND rank BETWEEN $4::int AND $5::int LIMIT $6");
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
