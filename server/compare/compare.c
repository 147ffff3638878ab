/* compare.c - twin comparison as records arrive: per-step digests first, then the records of the first differing step. */
#include "server/compare/compare.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dtype.h"
#include "common/recmatch.h"
#include "server/compare/cmp_int.h"
#include "server/compare/rule.h"
#include "server/core/clock.h"
#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"

#define SWEEP_S 5
#define STEPS_PER_CHECK 256 /* differing digests whose records match (an older digest version): checked per call */

typedef struct pending {
    char group[256];
    int rank;
    double commit_s;
} pending;

static void cmp_loop(worker *w);
static worker thread = WORKER_INIT("comparison", cmp_loop);
static pending *queue; /* under thread.lock */
static size_t q_len, q_cap;
static cmp_divergence_fn on_divergence;

void cmp_on_divergence(cmp_divergence_fn fn)
{
    on_divergence = fn;
}

void cmp_register(void)
{
    db_register("cmp_runs",
                "SELECT r.run_key, r.run_id, r.start_step, p.max_step, "
                "(e.run_key IS NOT NULL OR r.status <> 'running') AS ended, r.ranks "
                "FROM runs r LEFT JOIN rank_progress p ON p.run_key = r.run_key AND p.rank = $2 "
                "LEFT JOIN rank_ends e ON e.run_key = r.run_key AND e.rank = $2 "
                "WHERE r.twin_group = $1 ORDER BY r.run_key");
    db_register("cmp_checked", "SELECT checked_upto FROM group_checks WHERE twin_group = $1 AND rank = $2");
    /* The mark is written only if no run joined the group after the runs this check compared
     * ($4 = the newest run key seen): a joining run resets the group's checks, and a mark computed
     * without it must not overwrite that reset, or its early steps would never be compared. */
    db_register("cmp_mark", "INSERT INTO group_checks (twin_group, rank, checked_upto) SELECT $1, $2, $3 "
                            "WHERE NOT EXISTS (SELECT 1 FROM runs WHERE twin_group = $1 AND run_key > $4::bigint) "
                            "ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto");
    db_register("cmp_steps", "SELECT step FROM step_digests WHERE run_key = ANY($1::bigint[]) AND rank = $2 "
                             "AND step BETWEEN $3 AND $4 GROUP BY step HAVING count(*) < $5 "
                             "OR min(digest) <> max(digest) OR min(n) <> max(n) ORDER BY step LIMIT 1");
    db_register("cmp_recs", "SELECT " CMP_REC_COLS " FROM records WHERE run_key = ANY($1::bigint[]) AND rank = $2 "
                            "AND step = $3 AND flags & 12 = 0 ORDER BY run_key, seq"); /* state blocks: restore.c */
    db_register("cmp_store",
                "INSERT INTO divergences AS d (twin_group, rank, step, seq, name, occ, kind, odd_run_key, runs, "
                "committed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, to_timestamp($10)) "
                "ON CONFLICT (twin_group, rank) DO UPDATE SET step = excluded.step, seq = excluded.seq, "
                "name = excluded.name, occ = excluded.occ, kind = excluded.kind, odd_run_key = excluded.odd_run_key, "
                "runs = excluded.runs, committed_at = excluded.committed_at, detected_at = clock_timestamp() "
                "WHERE (excluded.step, excluded.seq) < (d.step, d.seq) OR ((excluded.step, excluded.seq) = "
                "(d.step, d.seq) AND excluded.runs IS DISTINCT FROM d.runs) RETURNING 1");
    db_register("cmp_backlog",
                "SELECT x.twin_group, x.rank FROM (SELECT r.twin_group, p.rank, max(r.start_step) AS lo, "
                "min(p.max_step) AS hi, count(*) AS n FROM rank_progress p JOIN runs r USING (run_key) "
                "WHERE r.twin_group IS NOT NULL GROUP BY 1, 2) x LEFT JOIN group_checks g USING (twin_group, rank) "
                "WHERE x.n >= 2 AND x.lo <= x.hi AND (g.checked_upto IS NULL OR g.checked_upto < x.hi)");
    db_register("cmp_active",
                "SELECT DISTINCT r.twin_group, p.rank FROM rank_progress p JOIN runs r USING (run_key) "
                "WHERE r.twin_group IS NOT NULL AND p.updated_at > now() - $1::interval "
                "UNION SELECT DISTINCT r.twin_group, e.rank FROM rank_ends e JOIN runs r USING (run_key) "
                "WHERE r.twin_group IS NOT NULL AND e.ended_at > now() - $1::interval");
    cmp_register_restores();
    cmp_register_logical();
}

void cmp_notify(const char *group, int rank, double commit_s)
{
    if (!group || !*group)
        return;
    worker_lock(&thread);
    size_t i;
    for (i = 0; i < q_len; i++)
        if (queue[i].rank == rank && strcmp(queue[i].group, group) == 0)
            break;
    if (i < q_len) {
        if (commit_s > 0 && (queue[i].commit_s == 0 || commit_s < queue[i].commit_s))
            queue[i].commit_s = commit_s;
    } else {
        if (q_len == q_cap) {
            q_cap = q_cap ? q_cap * 2 : 64;
            queue = xrealloc(queue, q_cap * sizeof(*queue));
        }
        snprintf(queue[q_len].group, sizeof(queue[q_len].group), "%s", group);
        queue[q_len].rank = rank;
        queue[q_len].commit_s = commit_s;
        q_len++;
    }
    worker_kick_locked(&thread);
    worker_unlock(&thread);
}

/* site_json - a record's call site as stored with a divergence (null: none). */
static json_t *site_json(const rec_site *st)
{
    if (!st->module_len && !st->function_len && !st->caller_len)
        return json_null();
    return json_pack("{s:s%, s:I, s:s%, s:I, s:s%}", "module", st->module ? st->module : "", (size_t)st->module_len,
                     "offset", (json_int_t)st->offset, "function", st->function ? st->function : "",
                     (size_t)st->function_len, "function_offset", (json_int_t)st->function_offset, "caller",
                     st->caller ? st->caller : "", (size_t)st->caller_len);
}

/* inputs_json - a record's input fingerprints as 16-hex strings (null: none). */
static json_t *inputs_json(const rec_record *r)
{
    if (!r->n_inputs)
        return json_null();
    json_t *a = json_array();
    for (unsigned i = 0; i < r->n_inputs; i++) {
        char h[17];
        snprintf(h, sizeof(h), "%016" PRIx64, r->inputs[i]);
        json_array_append_new(a, json_string(h));
    }
    return a;
}

json_t *cmp_run_entry(const char *run_id, const cmp_rec *c)
{
    if (!c)
        return json_pack("{s:s, s:b, s:n, s:n, s:n}", "run_id", run_id, "present", 0, "seq", "fp", "value");
    const rec_record *r = &c->rec;
    char fp[17], vb[17];
    snprintf(fp, sizeof(fp), "%016" PRIx64, r->fp);
    json_t *o = json_pack("{s:s, s:b, s:I, s:s, s:s, s:I}", "run_id", run_id, "present", 1, "seq", (json_int_t)r->seq,
                          "fp", fp, "dtype", dtype_name(r->dtype), "nbytes", (json_int_t)r->nbytes);
    if (r->flags & REC_HAS_VALUE) {
        double d = dtype_value_to_double(r->dtype, r->value);
        snprintf(vb, sizeof(vb), "%016" PRIx64, r->value);
        json_object_set_new(o, "value", isfinite(d) ? json_real(d) : json_null());
        json_object_set_new(o, "value_bits", json_string(vb));
    } else {
        json_object_set_new(o, "value", json_null());
    }
    json_object_set_new(o, "inputs", inputs_json(r));
    json_object_set_new(o, "site", site_json(&r->site));
    rec_ext x;
    rec_ext_of(r, &x);
    if (x.has_scales) {
        snprintf(fp, sizeof(fp), "%016" PRIx64, x.scales_fp);
        json_object_set_new(o, "scales_fp", json_string(fp));
    }
    return o;
}

void cmp_rows_load(PGresult *res, const cmp_group *g, cmp_rows *out)
{
    int n = PQntuples(res);
    size_t ext_bytes = 0, words = 0;
    for (int i = 0; i < n; i++) {
        ext_bytes += (size_t)PQgetlength(res, i, 10) / 2 + 1;
        words += (size_t)PQgetlength(res, i, 13) / 2 + 1; /* at least "d," per value */
        words += (size_t)PQgetlength(res, i, 14) / 2 + 1;
    }
    out->recs = xcalloc((size_t)n + 1, sizeof(*out->recs));
    out->ext = xmalloc(ext_bytes + 1);
    out->words = xmalloc((words + 1) * sizeof(int64_t));
    out->n = (size_t)n;
    size_t at = 0, wat = 0;
    for (int i = 0; i < n; i++) {
        cmp_rec *c = &out->recs[i];
        c->row = i;
        int64_t key = strtoll(PQgetvalue(res, i, 0), NULL, 10);
        c->run = 0;
        while (c->run < g->nruns && g->keys[c->run] != key)
            c->run++;
        rec_record *r = &c->rec;
        r->seq = strtoull(PQgetvalue(res, i, 1), NULL, 10);
        r->name = PQgetvalue(res, i, 2);
        r->name_len = (uint16_t)PQgetlength(res, i, 2);
        r->occurrence = (uint32_t)strtoul(PQgetvalue(res, i, 3), NULL, 10);
        r->fp = (uint64_t)strtoll(PQgetvalue(res, i, 4), NULL, 10);
        if (!PQgetisnull(res, i, 5)) {
            r->flags |= REC_HAS_VALUE;
            r->value = (uint64_t)strtoll(PQgetvalue(res, i, 5), NULL, 10);
        }
        r->dtype = (uint8_t)atoi(PQgetvalue(res, i, 6));
        r->ndim = (uint8_t)db_int_array_parse(PQgetvalue(res, i, 7), r->shape, LS_MAX_DIMS);
        r->nbytes = strtoull(PQgetvalue(res, i, 8), NULL, 10);
        r->flags |= (uint8_t)(atoi(PQgetvalue(res, i, 9)) & REC_STATE_MASK);
        if (!PQgetisnull(res, i, 10)) {
            int len = db_hex_parse(PQgetvalue(res, i, 10), out->ext + at, ext_bytes - at);
            if (len > 0) {
                r->ext = out->ext + at;
                r->ext_len = (uint16_t)len;
                at += (size_t)len;
            }
        }
        r->rank = (uint32_t)atoi(PQgetvalue(res, i, 11));
        r->step = strtoll(PQgetvalue(res, i, 12), NULL, 10);
        if (!PQgetisnull(res, i, 13)) {
            int got = db_int_array_parse(PQgetvalue(res, i, 13), out->words + wat, (int)(words - wat));
            r->chunks = (const uint64_t *)(out->words + wat);
            r->n_chunks = (uint32_t)got;
            wat += (size_t)got;
        }
        if (!PQgetisnull(res, i, 14)) { /* the input fingerprints: what the cause rule reads (common/cause.h) */
            int cap = (int)(words - wat) < REC_MAX_INPUTS ? (int)(words - wat) : REC_MAX_INPUTS;
            int got = db_int_array_parse(PQgetvalue(res, i, 14), out->words + wat, cap);
            r->inputs = (const uint64_t *)(out->words + wat);
            r->n_inputs = (uint16_t)got;
            wat += (size_t)got;
        }
        rec_site *st = &r->site; /* its call site: strings borrowed from `res` */
        if (!PQgetisnull(res, i, 15)) {
            st->module = PQgetvalue(res, i, 15);
            st->module_len = (uint16_t)PQgetlength(res, i, 15);
        }
        st->offset = (uint64_t)strtoll(PQgetvalue(res, i, 16), NULL, 10);
        if (!PQgetisnull(res, i, 17)) {
            st->function = PQgetvalue(res, i, 17);
            st->function_len = (uint16_t)PQgetlength(res, i, 17);
        }
        st->function_offset = (uint64_t)strtoll(PQgetvalue(res, i, 18), NULL, 10);
        if (!PQgetisnull(res, i, 19)) {
            st->caller = PQgetvalue(res, i, 19);
            st->caller_len = (uint16_t)PQgetlength(res, i, 19);
        }
    }
}

void cmp_rows_release(cmp_rows *rows)
{
    free(rows->recs);
    free(rows->ext);
    free(rows->words);
    memset(rows, 0, sizeof(*rows));
}

int cmp_store_divergence(const char *group, int rank, int64_t step, int64_t seq, const char *name, size_t name_len,
                         uint32_t occ, const char *kind, int64_t odd_key, json_t *runs, double commit_s)
{
    char rk[16], st[32], seq_s[32], occ_s[16], odd_s[32], commit[48], nm[LS_NAME_MAX + 1], err[512];
    char *runs_text = json_dumps(runs, JSON_COMPACT);
    json_decref(runs);
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(st, sizeof(st), "%" PRId64, step);
    snprintf(seq_s, sizeof(seq_s), "%" PRId64, seq);
    snprintf(occ_s, sizeof(occ_s), "%u", occ);
    snprintf(odd_s, sizeof(odd_s), "%" PRId64, odd_key);
    snprintf(commit, sizeof(commit), "%.6f", commit_s > 0 ? commit_s : clock_wall_s());
    snprintf(nm, sizeof(nm), "%.*s", (int)name_len, name);
    const char *q[] = {group, rk, st, seq_s, nm, occ_s, kind, odd_key ? odd_s : NULL, runs_text, commit};
    PGresult *s = db_exec("cmp_store", 10, q, err, sizeof(err));
    free(runs_text);
    if (!s)
        return -1;
    if (PQntuples(s) > 0) {
        double lat = commit_s > 0 ? clock_wall_s() - commit_s : 0;
        metrics_divergence(lat > 0 ? lat : 0);
        log_info("divergence in group %s rank %d at step %" PRId64 " seq %" PRId64 " (%s, %s occurrence %u)", group,
                 rank, step, seq, kind, nm, occ);
        if (on_divergence)
            on_divergence(group); /* evidence, suspects and the group's alert */
    }
    PQclear(s);
    return 1;
}

/* find_divergence - apply the rule to the records of `step` on `rank` and store the divergence it finds.
 * Returns 1 stored (or an earlier one kept), 0 when the records match, -1 on a database error. */
static int find_divergence(const char *group, int rank, int64_t step, const cmp_group *g, double commit_s)
{
    char rk[16], st[32], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(st, sizeof(st), "%" PRId64, step);
    const char *p[] = {g->keyarr, rk, st};
    PGresult *r = db_exec("cmp_recs", 3, p, err, sizeof(err));
    if (!r)
        return -1;
    cmp_rows rows;
    cmp_rows_load(r, g, &rows);
    cmp_first f;
    cmp_rule_first(rows.recs, rows.n, g->nruns, &f);
    int rc = 0;
    if (f.found) {
        json_t *runs = json_array();
        for (int k = 0; k < g->nruns; k++) {
            json_t *e = cmp_run_entry(g->ids[k], f.by_run[k]);
            if (f.majority >= 0)
                json_object_set_new(e, "majority", json_boolean(f.agrees[k]));
            json_array_append_new(runs, e);
        }
        const rec_record *any = NULL;
        for (int k = 0; k < g->nruns && !any; k++)
            any = f.by_run[k] ? &f.by_run[k]->rec : NULL;
        rc = cmp_store_divergence(group, rank, step, f.seq, any->name, any->name_len, any->occurrence,
                                  f.missing ? "missing" : "mismatch", f.odd >= 0 ? g->keys[f.odd] : 0, runs, commit_s);
    }
    cmp_rows_release(&rows);
    PQclear(r);
    return rc;
}

int cmp_check(const char *group, int rank, double commit_s)
{
    char rk[16], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {group, rk};
    PGresult *r = db_exec("cmp_runs", 2, p, err, sizeof(err));
    if (!r)
        return -1;
    cmp_group G;
    memset(&G, 0, sizeof(G));
    cmp_group *g = &G;
    int64_t lo = INT64_MIN, hi = INT64_MAX, newest = 0;
    int with_records = 0, waiting = 0, layouts = 0;
    for (int i = 0; i < PQntuples(r) && g->nruns < GROUP_MAX_RUNS; i++) {
        int k = g->nruns;
        int ended = PQgetvalue(r, i, 4)[0] == 't';
        int empty = PQgetisnull(r, i, 3);
        if (empty && !ended)
            waiting = 1; /* a twin has not reached this rank yet */
        g->keys[k] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        if (g->keys[k] > newest)
            newest = g->keys[k];
        snprintf(g->ids[k], sizeof(g->ids[k]), "%s", PQgetvalue(r, i, 1));
        g->start[k] = strtoll(PQgetvalue(r, i, 2), NULL, 10);
        g->max_step[k] = empty ? INT64_MIN : strtoll(PQgetvalue(r, i, 3), NULL, 10);
        g->ended[k] = ended;
        g->ranks[k] = atoi(PQgetvalue(r, i, 5));
        layouts |= k > 0 && g->ranks[k] != g->ranks[0];
        if (g->start[k] > lo)
            lo = g->start[k];
        if (!empty) {
            /* an ended run without records on this rank bounds nothing: all of it is missing */
            int64_t complete = ended ? g->max_step[k] : g->max_step[k] - 1;
            if (complete < hi)
                hi = complete;
            with_records++;
        }
        g->nruns++;
    }
    PQclear(r);
    if (layouts) /* runs of different rank counts: their ranks hold different pieces; compare logical tensors */
        return g->nruns < 2 ? 0 : cmp_check_logical(group, commit_s);
    size_t len = 0;
    g->keyarr[len++] = '{';
    for (int k = 0; k < g->nruns; k++)
        len += (size_t)snprintf(g->keyarr + len, sizeof(g->keyarr) - len, "%s%" PRId64, k ? "," : "", g->keys[k]);
    snprintf(g->keyarr + len, sizeof(g->keyarr) - len, "}");
    int restored = g->nruns >= 2 ? cmp_check_restores(group, rank, g, commit_s) : 0;
    if (restored < 0)
        return -1;
    if (waiting || g->nruns < 2 || with_records < 1 || lo > hi)
        return restored;

    r = db_exec("cmp_checked", 2, p, err, sizeof(err));
    if (!r)
        return -1;
    int64_t from = lo;
    if (PQntuples(r) == 1) {
        int64_t done = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        if (done >= from)
            from = done + 1;
    }
    PQclear(r);
    if (from > hi)
        return restored;

    char from_s[32], hi_s[32], n_s[16];
    snprintf(from_s, sizeof(from_s), "%" PRId64, from);
    snprintf(hi_s, sizeof(hi_s), "%" PRId64, hi);
    snprintf(n_s, sizeof(n_s), "%d", g->nruns);
    /* The first step whose digests differ; when its records all match (digests written by an older
     * digest version), the next one: a step is only ever passed once its records were compared. */
    int rc = 0;
    for (int tries = 0; rc == 0 && tries < STEPS_PER_CHECK; tries++) {
        const char *q[] = {g->keyarr, rk, from_s, hi_s, n_s};
        r = db_exec("cmp_steps", 5, q, err, sizeof(err));
        if (!r)
            return -1;
        if (PQntuples(r) != 1) {
            PQclear(r);
            break;
        }
        int64_t step = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
        rc = find_divergence(group, rank, step, g, commit_s);
        if (rc == 0 && tries == STEPS_PER_CHECK - 1) {
            /* much to compare record by record: mark this far and come back */
            snprintf(hi_s, sizeof(hi_s), "%" PRId64, step);
            cmp_notify(group, rank, commit_s);
        }
        snprintf(from_s, sizeof(from_s), "%" PRId64, step + 1);
    }
    if (rc < 0)
        return -1;
    char newest_s[32];
    snprintf(newest_s, sizeof(newest_s), "%" PRId64, newest);
    const char *m[] = {group, rk, hi_s, newest_s};
    r = db_exec("cmp_mark", 4, m, err, sizeof(err));
    if (!r)
        return -1;
    PQclear(r);
    return rc > 0 || restored > 0;
}

/* sweep - queue the groups with recent activity; at start (`backlog`), every
 * group and rank whose shared steps are not all compared yet (work a killed
 * lockstepd left undone). */
static void sweep(int backlog)
{
    char err[256];
    const char *p[] = {"15 seconds"};
    PGresult *r = backlog ? db_exec("cmp_backlog", 0, NULL, err, sizeof(err))
                          : db_exec("cmp_active", 1, p, err, sizeof(err));
    if (!r)
        return;
    for (int i = 0; i < PQntuples(r); i++)
        cmp_notify(PQgetvalue(r, i, 0), atoi(PQgetvalue(r, i, 1)), 0);
    PQclear(r);
}

static void cmp_loop(worker *w)
{
    double next = clock_mono_s() + SWEEP_S;
    sweep(1);
    for (;;) {
        worker_lock(w);
        while (!q_len && !w->stopping && clock_mono_s() < next)
            worker_wait_locked(w, next - clock_mono_s());
        pending *work = queue;
        size_t n = q_len;
        queue = NULL;
        q_len = q_cap = 0;
        worker_unlock(w);
        int failed = 0;
        for (size_t i = 0; i < n; i++) {
            if (cmp_check(work[i].group, work[i].rank, work[i].commit_s) < 0 && !worker_stopping(w)) {
                cmp_notify(work[i].group, work[i].rank, work[i].commit_s); /* try again shortly */
                failed = 1;
            }
        }
        free(work);
        if (worker_stopping(w))
            return;
        if (failed)
            usleep(200000);
        if (clock_mono_s() >= next) {
            sweep(0);
            next = clock_mono_s() + SWEEP_S;
        }
    }
}

int cmp_start(void)
{
    return worker_start(&thread, 1);
}

void cmp_stop(void)
{
    worker_stop(&thread);
}
