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
#include "server/compare/members.h"
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
    /* Per run of the group (first GROUP_MAX_RUNS by key), on rank $2: its start, its progress there, whether
     * it ended there, and whether it recorded anything at all. */
    db_register("cmp_runs",
                "SELECT r.run_key, r.run_id, r.start_step, p.max_step, "
                "(e.run_key IS NOT NULL OR r.status <> 'running') AS ended, "
                "EXISTS (SELECT 1 FROM rank_progress q WHERE q.run_key = r.run_key) AS any_records, r.ranks "
                "FROM runs r LEFT JOIN rank_progress p ON p.run_key = r.run_key AND p.rank = $2 "
                "LEFT JOIN rank_ends e ON e.run_key = r.run_key AND e.rank = $2 "
                "WHERE r.twin_group = $1 ORDER BY r.run_key LIMIT " GROUP_MAX_RUNS_TEXT);
    /* The rank's lock, without waiting: when a batch or an end holds it they are committing, and each
     * asks for this comparison again once committed (so do comparisons of other lockstepd). The
     * comparison's own commit need not wait for the disk: what it writes is recomputed after a crash. */
    db_register("cmp_lock", "SELECT pg_try_advisory_xact_lock(lockstep_check_key($1, $2::int)), "
                            "set_config('synchronous_commit', 'off', true)");
    /* What the last check of this rank compared (row 0 of a full join: either side may be missing), and the
     * divergence it keeps. */
    db_register("cmp_checked", "SELECT c.checked_upto, c.members::text, c.rank IS NOT NULL, d.step, d.kind "
                               "FROM (SELECT 1) one LEFT JOIN group_checks c ON c.twin_group = $1 AND c.rank = $2 "
                               "LEFT JOIN divergences d ON d.twin_group = $1 AND d.rank = $2");
    /* The mark: how far this rank was compared, how far it was to go, with which runs, and when (under the
     * lock: every batch and end of this rank committed before is seen; one committed after re-opens it). */
    db_register("cmp_mark", "INSERT INTO group_checks (twin_group, rank, checked_upto, target, members, checked_at, "
                            "waiting) VALUES ($1, $2, $3, $4, $5::bigint[], clock_timestamp(), $6) "
                            "ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto, "
                            "target = excluded.target, members = excluded.members, checked_at = excluded.checked_at, "
                            "waiting = excluded.waiting");
    db_register("cmp_steps", "SELECT step FROM step_digests WHERE run_key = ANY($1::bigint[]) AND rank = $2 "
                             "AND step BETWEEN $3 AND $4 GROUP BY step HAVING count(*) < $5 "
                             "OR min(digest) <> max(digest) OR min(n) <> max(n) ORDER BY step LIMIT 1");
    db_register("cmp_recs", "SELECT " CMP_REC_COLS " FROM records WHERE run_key = ANY($1::bigint[]) AND rank = $2 "
                            "AND step = $3 AND flags & 12 = 0 ORDER BY run_key, seq"); /* state blocks: restore.c */
    /* A divergence is written unless the same one is stored. An earlier one (step, seq) always replaces the
     * stored one; with $11 (the step comparison, which knows the stored divergence under the rank's lock and
     * compared from where it stands) any other than a restore difference is replaced too, so that late
     * records move it. Restore differences (restore.c) and logical ones (logical.c) keep the earliest. */
    db_register("cmp_store",
                "INSERT INTO divergences AS d (twin_group, rank, step, seq, name, occ, kind, odd_run_key, runs, "
                "committed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, to_timestamp($10)) "
                "ON CONFLICT (twin_group, rank) DO UPDATE SET step = excluded.step, seq = excluded.seq, "
                "name = excluded.name, occ = excluded.occ, kind = excluded.kind, odd_run_key = excluded.odd_run_key, "
                "runs = excluded.runs, committed_at = excluded.committed_at, detected_at = clock_timestamp() "
                "WHERE (excluded.step, excluded.seq, excluded.name, excluded.occ, excluded.kind, excluded.runs) IS DISTINCT "
                "FROM (d.step, d.seq, d.name, d.occ, d.kind, d.runs) AND ((excluded.step, excluded.seq) < (d.step, d.seq) "
                "OR ((excluded.step, excluded.seq) = (d.step, d.seq) AND excluded.runs IS DISTINCT FROM d.runs) "
                "OR ($11::boolean AND d.kind <> 'restore')) RETURNING 1");
    /* A step comparison's divergence the runs no longer show (a restore difference is not its to drop). */
    db_register("cmp_drop", "DELETE FROM divergences WHERE twin_group = $1 AND rank = $2 AND kind <> 'restore' "
                            "RETURNING 1");
    /* At start: every group and rank whose comparison is older than its data (work a killed lockstepd left). */
    db_register("cmp_backlog",
                "SELECT x.twin_group, x.rank FROM (SELECT r.twin_group, p.rank, max(p.updated_at) AS t "
                "FROM rank_progress p JOIN runs r USING (run_key) WHERE r.twin_group IS NOT NULL GROUP BY 1, 2) x "
                "LEFT JOIN group_checks g USING (twin_group, rank) WHERE g.rank IS NULL OR g.checked_at < x.t "
                "OR g.checked_upto IS DISTINCT FROM g.target AND g.target IS NOT NULL "
                "UNION SELECT r.twin_group, e.rank FROM rank_ends e JOIN runs r USING (run_key) "
                "LEFT JOIN group_checks g ON g.twin_group = r.twin_group AND g.rank = e.rank "
                "WHERE r.twin_group IS NOT NULL AND (g.rank IS NULL OR g.checked_at < e.ended_at)");
    /* Every few seconds: ranks with recent records or ends that no comparison has seen yet (written by
     * another lockstepd on the same database, or a notice that got lost). */
    db_register("cmp_active",
                "SELECT DISTINCT r.twin_group, p.rank FROM rank_progress p JOIN runs r USING (run_key) "
                "LEFT JOIN group_checks g ON g.twin_group = r.twin_group AND g.rank = p.rank "
                "WHERE r.twin_group IS NOT NULL AND p.updated_at > now() - $1::interval "
                "AND (g.rank IS NULL OR g.checked_at < p.updated_at) "
                "UNION SELECT DISTINCT r.twin_group, e.rank FROM rank_ends e JOIN runs r USING (run_key) "
                "LEFT JOIN group_checks g ON g.twin_group = r.twin_group AND g.rank = e.rank "
                "WHERE r.twin_group IS NOT NULL AND e.ended_at > now() - $1::interval "
                "AND (g.rank IS NULL OR g.checked_at < e.ended_at)");
    cmp_register_restores();
    cmp_register_logical();
}
/* The queue's index: open addressing over (group, rank), each slot 0 or a queue position + 1; twice as
 * many slots as the queue can hold, so that a run of 65536 ranks ending queues in linear time. */
static size_t *slots; /* under thread.lock */
static size_t n_slots;

static size_t key_hash(const char *group, int rank)
{
    size_t h = 1469598103934665603u;
    for (const unsigned char *p = (const unsigned char *)group; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    return (h ^ (size_t)(unsigned)rank) * 1099511628211u;
}

/* slot_of - the slot of (group, rank) in the index: the one holding it, or the empty one where it goes. */
static size_t *slot_of(const char *group, int rank)
{
    size_t i = key_hash(group, rank) & (n_slots - 1);
    while (slots[i] && (queue[slots[i] - 1].rank != rank || strcmp(queue[slots[i] - 1].group, group) != 0))
        i = (i + 1) & (n_slots - 1);
    return &slots[i];
}

void cmp_notify(const char *group, int rank, double commit_s)
{
    if (!group || !*group)
        return;
    worker_lock(&thread);
    if (q_len * 2 >= n_slots) { /* grow the index (and rebuild it) */
        n_slots = n_slots ? n_slots * 2 : 256;
        free(slots);
        slots = xcalloc(n_slots, sizeof(*slots));
        for (size_t k = 0; k < q_len; k++)
            *slot_of(queue[k].group, queue[k].rank) = k + 1;
    }
    size_t *slot = slot_of(group, rank);
    if (*slot) {
        pending *p = &queue[*slot - 1];
        if (commit_s > 0 && (p->commit_s == 0 || commit_s < p->commit_s))
            p->commit_s = commit_s;
    } else {
        if (q_len == q_cap) {
            q_cap = q_cap ? q_cap * 2 : 64;
            queue = xrealloc(queue, q_cap * sizeof(*queue));
        }
        snprintf(queue[q_len].group, sizeof(queue[q_len].group), "%s", group);
        queue[q_len].rank = rank;
        queue[q_len].commit_s = commit_s;
        q_len++;
        *slot = q_len;
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
                         uint32_t occ, const char *kind, int64_t odd_key, json_t *runs, double commit_s, int replace,
                         cmp_found *out)
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
    const char *q[] = {
        group, rk, st, seq_s, nm, occ_s, kind, odd_key ? odd_s : NULL, runs_text, commit, replace ? "true" : "false"};
    PGresult *s = db_exec_once("cmp_store", 11, q, err, sizeof(err));
    free(runs_text);
    if (!s)
        return -1;
    if (PQntuples(s) > 0 && out->stored <= 0) { /* told once the check commits (cmp_check) */
        out->stored = 1;
        out->rank = rank;
        out->step = step;
        out->seq = seq;
        out->occ = occ;
        snprintf(out->name, sizeof(out->name), "%s", nm);
        snprintf(out->kind, sizeof(out->kind), "%s", kind);
    }
    PQclear(s);
    return 1;
}

/* find_divergence - apply the rule to the records of `step` on `rank` of the compared runs `g` and, when they
 * diverge, write the divergence (unless the same one is stored). Returns 1 when they diverge, 0 when the
 * records match, -1 on a database error. */
static int find_divergence(const char *group, int rank, int64_t step, const cmp_group *g, double commit_s,
                           cmp_found *out)
{
    char rk[16], st[32], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(st, sizeof(st), "%" PRId64, step);
    const char *p[] = {g->keyarr, rk, st};
    PGresult *r = db_exec_once("cmp_recs", 3, p, err, sizeof(err));
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
                                  f.missing ? "missing" : "mismatch", f.odd >= 0 ? g->keys[f.odd] : 0, runs, commit_s,
                                  1, out);
    }
    cmp_rows_release(&rows);
    PQclear(r);
    return rc;
}

void cmp_key_array(cmp_group *g)
{
    size_t len = (size_t)snprintf(g->keyarr, sizeof(g->keyarr), "{");
    for (int k = 0; k < g->nruns && len < sizeof(g->keyarr); k++)
        len += (size_t)snprintf(g->keyarr + len, sizeof(g->keyarr) - len, "%s%" PRId64, k ? "," : "", g->keys[k]);
    if (len < sizeof(g->keyarr))
        snprintf(g->keyarr + len, sizeof(g->keyarr) - len, "}");
}

/* check_locked - the comparison of one group's rank, inside the transaction that holds its lock. Returns 1
 * when a divergence was found (stored or kept), 0 when none, -1 on a database error; `out` says what
 * changed, *again when there is more to compare at once. */
static int check_locked(const char *group, int rank, double commit_s, cmp_found *out, int *again)
{
    char rk[16], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {group, rk};
    PGresult *r = db_exec_once("cmp_runs", 2, p, err, sizeof(err));
    if (!r)
        return -1;
    int n = PQntuples(r) < GROUP_MAX_RUNS ? PQntuples(r) : GROUP_MAX_RUNS, layouts = 0;
    /* every run of the group (the restore check pairs any two of them), and the compared ones (members.h) */
    cmp_group all, in;
    memset(&all, 0, sizeof(all));
    memset(&in, 0, sizeof(in));
    cmp_member m[GROUP_MAX_RUNS];
    for (int i = 0; i < n; i++) {
        int has = !PQgetisnull(r, i, 3);
        m[i] = (cmp_member){strtoll(PQgetvalue(r, i, 2), NULL, 10), has, PQgetvalue(r, i, 5)[0] == 't',
                            has ? strtoll(PQgetvalue(r, i, 3), NULL, 10) : 0, PQgetvalue(r, i, 4)[0] == 't', 0, NULL};
        all.keys[i] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        snprintf(all.ids[i], sizeof(all.ids[i]), "%s", PQgetvalue(r, i, 1));
        all.start[i] = m[i].start_step;
        all.max_step[i] = has ? m[i].max_step : INT64_MIN;
        all.ended[i] = m[i].ended;
        all.ranks[i] = atoi(PQgetvalue(r, i, 6));
        layouts |= i > 0 && all.ranks[i] != all.ranks[0];
    }
    all.nruns = n;
    PQclear(r);
    if (layouts) /* runs of different rank counts: their ranks hold different pieces; compare logical tensors */
        return cmp_check_logical(group, commit_s, out, again);
    cmp_key_array(&all);
    int restored = n >= 2 ? cmp_check_restores(group, rank, &all, commit_s, out) : 0;
    if (restored < 0)
        return -1;

    int64_t lo = 0, hi = INT64_MAX;
    int nin = cmp_members_pick(m, n, &lo), with_records = 0, waiting = 0;
    for (int i = 0; i < n; i++) /* a running run left out may still join this rank's comparison */
        waiting |= !m[i].in && !m[i].ended && strcmp(m[i].why, CMP_OUT_BEFORE_START) != 0;
    for (int i = 0; i < n; i++) {
        if (!m[i].in)
            continue;
        int k = in.nruns++;
        in.keys[k] = all.keys[i];
        memcpy(in.ids[k], all.ids[i], sizeof(in.ids[k]));
        in.start[k] = all.start[i];
        in.max_step[k] = all.max_step[i];
        in.ended[k] = all.ended[i];
        in.ranks[k] = all.ranks[i];
        if (m[i].has_records) { /* an ended run without records here bounds nothing: all of it is missing */
            int64_t complete = m[i].ended ? m[i].max_step : m[i].max_step - 1;
            if (complete < hi)
                hi = complete;
            with_records++;
        }
    }
    cmp_key_array(&in);

    /* What the last check of this rank compared, and the divergence it keeps. */
    r = db_exec_once("cmp_checked", 2, p, err, sizeof(err));
    if (!r)
        return -1;
    int same_members = PQntuples(r) == 1 && PQgetvalue(r, 0, 2)[0] == 't' && !strcmp(PQgetvalue(r, 0, 1), in.keyarr);
    int64_t done = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : INT64_MIN;
    int has_div = PQntuples(r) == 1 && !PQgetisnull(r, 0, 3);
    int64_t div_step = has_div ? strtoll(PQgetvalue(r, 0, 3), NULL, 10) : 0;
    int div_restore = has_div && !strcmp(PQgetvalue(r, 0, 4), "restore");
    PQclear(r);

    int comparable = nin >= 2 && with_records >= 1 && lo <= hi;
    /* Where to start: after what was compared with these same runs; from the shared start when the runs
     * compared changed (a run joined or left) or a late batch re-opened earlier steps. */
    int64_t from = same_members && done != INT64_MIN && done >= lo ? done + 1 : lo;
    int64_t mark = comparable ? hi : (same_members ? done : INT64_MIN);
    int rc = 0;
    if (comparable && has_div && div_step < from) {
        rc = 1; /* the first divergence is before what is left to compare: it stands */
    } else if (comparable && from <= hi) {
        char from_s[32], hi_s[32], n_s[16];
        snprintf(hi_s, sizeof(hi_s), "%" PRId64, hi);
        snprintf(n_s, sizeof(n_s), "%d", nin);
        /* The first step whose digests differ; when its records all match (digests written by an older
         * digest version), the next one: a step is only ever passed once its records were compared. */
        int64_t at = from;
        for (int tries = 0; tries < STEPS_PER_CHECK; tries++) {
            snprintf(from_s, sizeof(from_s), "%" PRId64, at);
            const char *q[] = {in.keyarr, rk, from_s, hi_s, n_s};
            r = db_exec_once("cmp_steps", 5, q, err, sizeof(err));
            if (!r)
                return -1;
            if (PQntuples(r) != 1) {
                PQclear(r);
                break;
            }
            int64_t step = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
            PQclear(r);
            rc = find_divergence(group, rank, step, &in, commit_s, out);
            if (rc != 0)
                break;
            if (tries == STEPS_PER_CHECK - 1) {
                mark = step; /* much to compare record by record: mark this far and come back */
                *again = 1;
            }
            at = step + 1;
        }
        if (rc < 0)
            return -1;
        if (rc == 0 && !*again && has_div && !div_restore && div_step >= from && div_step <= hi) {
            /* The stored divergence was in the range just compared and the runs no longer show it there (a
             * late record filled it in, or the runs compared changed). A restore difference stays: it is
             * checked once, by restore.c. */
            r = db_exec_once("cmp_drop", 2, p, err, sizeof(err));
            if (!r)
                return -1;
            if (PQntuples(r) > 0 && out->stored == 0)
                out->stored = -1;
            PQclear(r);
        }
    }
    char mark_s[32], target_s[32];
    snprintf(mark_s, sizeof(mark_s), "%" PRId64, mark);
    snprintf(target_s, sizeof(target_s), "%" PRId64, hi);
    const char *mk[] = {group, rk, mark == INT64_MIN ? NULL : mark_s, comparable ? target_s : NULL, in.keyarr,
                        waiting ? "true" : "false"};
    r = db_exec_once("cmp_mark", 6, mk, err, sizeof(err));
    if (!r)
        return -1;
    PQclear(r);
    return rc > 0 || restored > 0;
}

int cmp_check(const char *group, int rank, double commit_s)
{
    char rk[16], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {group, rk};
    if (db_begin(err, sizeof(err)) < 0)
        return -1;
    PGresult *r = db_exec_once("cmp_lock", 2, p, err, sizeof(err));
    if (!r) {
        db_rollback();
        return -1;
    }
    int locked = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!locked) { /* a batch or an end of this rank is committing: it asks again when it has */
        db_rollback();
        return 0;
    }
    cmp_found f;
    memset(&f, 0, sizeof(f));
    int again = 0;
    int rc = check_locked(group, rank, commit_s, &f, &again);
    if (rc < 0 || db_commit(err, sizeof(err)) < 0) {
        db_rollback();
        return -1;
    }
    if (again)
        cmp_notify(group, rank, commit_s);
    if (f.stored > 0) {
        double lat = commit_s > 0 ? clock_wall_s() - commit_s : 0;
        metrics_divergence(lat > 0 ? lat : 0);
        log_info("divergence in group %s rank %d at step %" PRId64 " seq %" PRId64 " (%s, %s occurrence %u)", group,
                 f.rank, f.step, f.seq, f.kind, f.name, f.occ);
    } else if (f.stored < 0) {
        log_info("group %s rank %d: its divergence no longer shows (late records, or other runs compared)", group,
                 rank);
    }
    if (f.stored && on_divergence)
        on_divergence(group); /* evidence, suspects and the group's alert */
    return rc;
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
        if (slots)
            memset(slots, 0, n_slots * sizeof(*slots));
        worker_unlock(w);
        int failed = 0;
        for (size_t i = 0; i < n; i++) {
            if (i % 64 == 63 && worker_stopping(w))
                break; /* what is left is found again at the next start (the backlog) */
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
