/* twin_steps.c - GET /api/v1/twins/{group}/steps: per step and rank, whether the group's runs match, from the step
 * digests; bounded in memory and time whatever is stored. */
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
#include "server/twins/step_read.h"

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

/* The window a request asks for: steps from..to (to cut to what fits), ranks rank_from..rank_to. */
typedef struct steps_win {
    long long from, to, rank_from, rank_to;
    int compact; /* ?compact=1: each step's ranks as an array of statuses */
} steps_win;

/* steps_args - the request's window into `w`, its steps starting no earlier than the group's latest start. 0, or
 * -1 when the request was answered (a bad argument), with what was sent in *sent. */
static int steps_args(http_req *req, const group_runs *g, steps_win *w, enum MHD_Result *sent)
{
    int64_t lo = INT64_MIN;
    for (int i = 0; i < g->n; i++) {
        int64_t s = strtoll(PQgetvalue(g->res, i, 6), NULL, 10);
        if (s > lo)
            lo = s;
    }
    const char *cs = http_query(req, "compact");
    w->compact = cs && (!strcmp(cs, "1") || !strcmp(cs, "true"));
    if (api_int_arg(req, "from", INT64_MIN, INT64_MAX, lo, &w->from) < 0 ||
        api_int_arg(req, "to", INT64_MIN, INT64_MAX, sat_add(w->from, 999), &w->to) < 0 ||
        api_int_arg(req, "rank_from", 0, INT32_MAX, 0, &w->rank_from) < 0 ||
        api_int_arg(req, "rank_to", 0, INT32_MAX, sat_add(w->rank_from, STEPS_MAX_RANKS - 1), &w->rank_to) < 0) {
        *sent = MHD_YES;
        return -1;
    }
    if (w->to < w->from || sat_add(w->from, 100000) < w->to || w->rank_to < w->rank_from ||
        w->rank_to - w->rank_from >= STEPS_MAX_RANKS) {
        *sent = http_reply_error(req, 400, "bad step range",
                                 "?from= and ?to= must satisfy from <= to <= from + 100000, and ?rank_from= and "
                                 "?rank_to= a window of at most " STEPS_MAX_RANKS_TEXT " ranks",
                                 "ask for fewer steps or ranks at a time; follow next_from and next_rank_from");
        return -1;
    }
    if (w->from < lo)
        w->from = lo; /* steps before the latest start are not shared */
    if (w->to < w->from)
        w->to = w->from;
    return 0;
}

/* read_progress - how far each of the group's runs got on each rank of the window (group `keys`, ranks rf..rt
 * as text), sorted by rank and run, with how many in *np, the ranks seen in *nranks, and whether ranks past the
 * window recorded in *more_ranks. The rows (caller frees), or NULL with `err`. */
static prog *read_progress(const group_runs *g, const char *keys, const char *rf, const char *rt, int *np, int *nranks,
                           int *more_ranks, char *err, size_t cap)
{
    PGresult *pr = step_read_progress(keys, rf, rt, err, cap);
    PGresult *more = pr ? step_read_more_ranks(keys, rt, err, cap) : NULL;
    if (!pr || !more) {
        PQclear(pr);
        return NULL;
    }
    int n = PQntuples(pr);
    prog *p = xmalloc(((size_t)n + 1) * sizeof(*p));
    int kept = 0;
    *nranks = 0;
    for (int i = 0; i < n; i++) {
        int run = group_run_index(g, strtoll(PQgetvalue(pr, i, 0), NULL, 10));
        if (run < 0)
            continue;
        p[kept] = (prog){atoi(PQgetvalue(pr, i, 1)), run, strtoll(PQgetvalue(pr, i, 2), NULL, 10),
                         PQgetvalue(pr, i, 3)[0] == 't'};
        if (p[kept].rank + 1 > *nranks)
            *nranks = p[kept].rank + 1;
        kept++;
    }
    *np = kept;
    *more_ranks = PQntuples(more) > 0;
    PQclear(more);
    PQclear(pr);
    qsort(p, (size_t)*np, sizeof(*p), by_rank_run);
    return p;
}

/* read_digests - the step digests of the window (steps w->from..w->to, ranks rf..rt as text) sorted by step and
 * rank, with how many in *nr. Rows the progress does not account for (data written some other way) could still
 * be more than STEPS_MAX_CELLS: then the window halves (w->to) until they fit. The rows (caller frees), or NULL
 * with `err`. */
static dig *read_digests(const group_runs *g, const char *keys, steps_win *w, const char *rf, const char *rt, int *nr,
                         char *err, size_t cap)
{
    PGresult *sr = NULL;
    for (;;) {
        sr = step_read_digests(keys, (int64_t)w->from, (int64_t)w->to, rf, rt, STEPS_MAX_CELLS + 1, err, cap);
        if (!sr || PQntuples(sr) <= STEPS_MAX_CELLS || w->to == w->from)
            break;
        PQclear(sr);
        w->to = w->from + (w->to - w->from) / 2;
    }
    if (!sr)
        return NULL;
    int n = PQntuples(sr) < STEPS_MAX_CELLS ? PQntuples(sr) : STEPS_MAX_CELLS;
    dig *rows = xmalloc(((size_t)n + 1) * sizeof(*rows));
    *nr = 0;
    for (int i = 0; i < n; i++) {
        int run = group_run_index(g, strtoll(PQgetvalue(sr, i, 0), NULL, 10));
        if (run < 0)
            continue;
        rows[(*nr)++] = (dig){strtoll(PQgetvalue(sr, i, 2), NULL, 10), atoi(PQgetvalue(sr, i, 1)), run,
                              strtoll(PQgetvalue(sr, i, 3), NULL, 10), strtoll(PQgetvalue(sr, i, 4), NULL, 10)};
    }
    PQclear(sr);
    qsort(rows, (size_t)*nr, sizeof(*rows), by_step_rank);
    return rows;
}

/* steps_json - the answer's "steps": per step, each rank's status (step_status) from the digest rows and the
 * progress, as an array of statuses when `w->compact`. A new reference. */
static json_t *steps_json(const dig *rows, int nr, const prog *p, int np, const group_runs *g, int logical,
                          const steps_win *w)
{
    json_t *steps = json_array(), *cur_ranks = NULL;
    int64_t cur_step = 0;
    int have_cur = 0;
    for (int i = 0; i < nr;) {
        int j = i;
        while (j < nr && rows[j].step == rows[i].step && rows[j].rank == rows[i].rank)
            j++;
        int present;
        const char *status = step_status(rows, i, j, p, np, g, logical, &present);
        if (!have_cur || rows[i].step != cur_step) {
            cur_ranks = json_array();
            json_array_append_new(steps, json_pack("{s:I, s:o}", "step", (json_int_t)rows[i].step, "ranks", cur_ranks));
            cur_step = rows[i].step;
            have_cur = 1;
        }
        if (w->compact) { /* ranks[r - rank_from] is rank r's status; null where no run recorded that rank */
            while ((long long)json_array_size(cur_ranks) < rows[i].rank - w->rank_from)
                json_array_append_new(cur_ranks, json_null());
            json_array_append_new(cur_ranks, json_string(status));
        } else {
            json_array_append_new(
                cur_ranks, json_pack("{s:i, s:s, s:i}", "rank", rows[i].rank, "status", status, "runs", present));
        }
        i = j;
    }
    return steps;
}

static enum MHD_Result read_twin_steps(http_req *req, char **args)
{
    const char *group = args[0];
    char err[512];
    group_runs g;
    enum MHD_Result sent;
    if (!group_open_for(req, group, &g, &sent))
        return sent;
    steps_win w;
    if (steps_args(req, &g, &w, &sent) < 0) {
        PQclear(g.res);
        return sent;
    }
    char rf[16], rt[16], keys[GROUP_KEYS_CAP];
    snprintf(rf, sizeof(rf), "%lld", w.rank_from);
    snprintf(rt, sizeof(rt), "%lld", w.rank_to);
    group_keys(&g, keys, sizeof(keys));
    int np, nranks, more_ranks;
    prog *p = read_progress(&g, keys, rf, rt, &np, &nranks, &more_ranks, err, sizeof(err));
    if (!p) {
        PQclear(g.res);
        return http_reply_db_down(req, err);
    }

    /* The step window holds at most STEPS_MAX_CELLS digest rows: one per run and rank that recorded,
     * per step. A longer window is cut, and next_from says where the next one starts. */
    int64_t cells = np > 0 ? np : 1;
    int64_t max_steps = STEPS_MAX_CELLS / cells > 0 ? STEPS_MAX_CELLS / cells : 1;
    int64_t asked_to = w.to;
    if (w.to - w.from + 1 > max_steps)
        w.to = w.from + max_steps - 1;
    int nr;
    dig *rows = read_digests(&g, keys, &w, rf, rt, &nr, err, sizeof(err));
    if (!rows) {
        free(p);
        PQclear(g.res);
        return http_reply_db_down(req, err);
    }

    int logical = 0;
    for (int r = 1; r < g.n; r++)
        logical |= strcmp(PQgetvalue(g.res, r, 7), PQgetvalue(g.res, 0, 7)) != 0;
    json_t *steps = steps_json(rows, nr, p, np, &g, logical, &w);
    free(p);
    free(rows);
    json_t *o = json_pack("{s:s, s:I, s:I, s:i, s:I, s:I, s:o}", "group", g.key, "from", (json_int_t)w.from, "to",
                          (json_int_t)w.to, "ranks", nranks, "rank_from", (json_int_t)w.rank_from, "rank_to",
                          (json_int_t)w.rank_to, "steps", steps);
    json_object_set_new(o, "logical", json_boolean(logical));
    PQclear(g.res);
    json_object_set_new(o, "next_from", w.to < asked_to ? json_integer(w.to + 1) : json_null());
    json_object_set_new(o, "next_rank_from", more_ranks ? json_integer(w.rank_to + 1) : json_null());
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/twins/{}/steps", MR_READ, AUTH_SELF, read_twin_steps, .reads = 1},
};

void api_twin_steps_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
