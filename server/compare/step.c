/* step.c - one step of one rank compared record by record: its frames and digest counts read, records agents held back asked for, the first-divergence rule applied and the divergence stored (alone, or many found at once together). */
#include "server/compare/cmp_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/recmatch.h"
#include "server/compare/compare.h"
#include "server/compare/rule.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

#define STEPS_PER_CHECK 256 /* differing digests whose records match (an older digest version): checked per call */

static cmp_divergence_fn on_divergence;

void cmp_step_on_divergence(void (*fn)(const char *group))
{
    on_divergence = fn;
}

void cmp_step_register(void)
{
    /* The mark is written only if no run joined the group after the runs this check compared
     * ($4 = the newest run key seen): a joining run resets the group's checks, and a mark computed
     * without it must not overwrite that reset, or its early steps would never be compared. */
    db_register("cmp_mark", "INSERT INTO group_checks (twin_group, rank, checked_upto) SELECT $1, $2, $3 "
                            "WHERE NOT EXISTS (SELECT 1 FROM runs WHERE twin_group = $1 AND run_key > $4::bigint) "
                            "ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto");
    db_register("cmp_steps", "SELECT step FROM step_digests WHERE run_key = ANY($1::bigint[]) AND rank = $2 "
                             "AND step BETWEEN $3 AND $4 GROUP BY step HAVING count(*) < $5 "
                             "OR min(digest) <> max(digest) OR min(n) <> max(n) ORDER BY step LIMIT 1");
    /* In one round trip: the step's stored segments (what = 0) and, per run, the records its digests stand for,
     * when the step became comparable (lockstep_shown_at: the detection latency counts from that commit,
     * whatever the queue coalesced, and for held records from the step digests' commit) and whether lockstepd
     * asked agents for the step's records (what = 1). */
    db_register("cmp_step", "SELECT 0::int2, f.run_key, f.n, f.frames, NULL::float8, false FROM record_frames f "
                            "WHERE f.run_key = ANY($1::bigint[]) AND f.rank = $2 AND f.step = $3 UNION ALL "
                            "SELECT 1::int2, s.run_key, s.n, NULL::bytea, lockstep_shown_at($1::bigint[], $2, $3), "
                            "EXISTS (SELECT 1 FROM record_requests q WHERE q.run_key = ANY($1::bigint[]) "
                            "AND q.rank = $2 AND q.step = $3) FROM step_digests s "
                            "WHERE s.run_key = ANY($1::bigint[]) AND s.rank = $2 AND s.step = $3");
    /* Digest streaming: a run whose agent held the step's records back is asked for them (the reply to its
     * rank's next batch says so); `committed_at` keeps the commit that showed the difference, for the latency. */
    /* The runs still short are asked (again); the others' requests are answered, whatever raced with this read
     * (a held batch stored after it was read must not be asked for again forever). */
    db_register("cmp_request", "WITH ask AS (INSERT INTO record_requests (run_key, rank, step, committed_at) "
                               "SELECT k, $2, $3, to_timestamp($4) FROM unnest($1::bigint[]) AS k "
                               "ON CONFLICT (run_key, rank, step) DO UPDATE SET answered = false "
                               "WHERE record_requests.answered) "
                               "UPDATE record_requests SET answered = true WHERE run_key = ANY($5::bigint[]) "
                               "AND rank = $2 AND step = $3 AND NOT answered");
    db_register("cmp_answered", "DELETE FROM record_requests WHERE run_key = ANY($1::bigint[]) AND rank = $2 "
                                "AND step = $3");
    /* Many differing ranks of one group at once (a look that found several): their steps' segments and digest
     * counts in one round trip, as cmp_step (what, rank, step, run_key, n, frames, shown, asked) ... */
    db_register("cmp_steps_many",
                "SELECT 0::int2, f.rank, f.step, f.run_key, f.n, f.frames, NULL::float8, false "
                "FROM unnest($2::int[], $3::bigint[]) AS q(rk, st) JOIN record_frames f ON f.rank = q.rk "
                "AND f.step = q.st WHERE f.run_key = ANY($1::bigint[]) UNION ALL "
                "SELECT 1::int2, s.rank, s.step, s.run_key, s.n, NULL::bytea, lockstep_shown_at($1::bigint[], s.rank, "
                "s.step), EXISTS (SELECT 1 FROM record_requests r WHERE r.run_key = ANY($1::bigint[]) "
                "AND r.rank = s.rank AND r.step = s.step) "
                "FROM unnest($2::int[], $3::bigint[]) AS q(rk, st) JOIN step_digests s ON s.rank = q.rk "
                "AND s.step = q.st WHERE s.run_key = ANY($1::bigint[])");
    /* ... and their divergences and marks in one statement (returns the ranks whose divergence is new or
     * earlier) */
    db_register("cmp_store_many",
                "WITH v AS (SELECT * FROM unnest($2::int[], $3::bigint[], $4::bigint[], $5::text[], $6::int[], "
                "$7::text[], $8::bigint[], $9::text[], $10::float8[], $11::bigint[]) "
                "AS v(rank, step, seq, name, occ, kind, odd, runs, committed, hi)), "
                "d AS (INSERT INTO divergences AS d (twin_group, rank, step, seq, name, occ, kind, odd_run_key, runs, "
                "committed_at) SELECT $1, v.rank, v.step, v.seq, v.name, v.occ, v.kind, v.odd, v.runs::jsonb, "
                "to_timestamp(v.committed) FROM v ORDER BY v.rank "
                "ON CONFLICT (twin_group, rank) DO UPDATE SET step = excluded.step, seq = excluded.seq, "
                "name = excluded.name, occ = excluded.occ, kind = excluded.kind, odd_run_key = excluded.odd_run_key, "
                "runs = excluded.runs, committed_at = excluded.committed_at, detected_at = clock_timestamp() "
                "WHERE (excluded.step, excluded.seq) < (d.step, d.seq) OR ((excluded.step, excluded.seq) = "
                "(d.step, d.seq) AND excluded.runs IS DISTINCT FROM d.runs) RETURNING d.rank), "
                "m AS (INSERT INTO group_checks (twin_group, rank, checked_upto) SELECT $1, v.rank, v.hi FROM v "
                "WHERE NOT EXISTS (SELECT 1 FROM runs WHERE twin_group = $1 AND run_key > $12::bigint) "
                "ORDER BY v.rank ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto "
                "RETURNING 1) SELECT rank FROM d");
    /* a divergence alone (restore checks, logical tensors): kept when it is earlier than the stored one */
    db_register("cmp_store_one",
                "INSERT INTO divergences AS d (twin_group, rank, step, seq, name, occ, kind, odd_run_key, runs, "
                "committed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, to_timestamp($10)) "
                "ON CONFLICT (twin_group, rank) DO UPDATE SET step = excluded.step, seq = excluded.seq, "
                "name = excluded.name, occ = excluded.occ, kind = excluded.kind, odd_run_key = excluded.odd_run_key, "
                "runs = excluded.runs, committed_at = excluded.committed_at, detected_at = clock_timestamp() "
                "WHERE (excluded.step, excluded.seq) < (d.step, d.seq) OR ((excluded.step, excluded.seq) = "
                "(d.step, d.seq) AND excluded.runs IS DISTINCT FROM d.runs) RETURNING 1");
    /* the divergence and, in the same statement, the rank's mark ($11, unless a run newer than $12 joined) */
    db_register("cmp_store",
                "WITH d AS (INSERT INTO divergences AS d (twin_group, rank, step, seq, name, occ, kind, odd_run_key, "
                "runs, committed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, to_timestamp($10)) "
                "ON CONFLICT (twin_group, rank) DO UPDATE SET step = excluded.step, seq = excluded.seq, "
                "name = excluded.name, occ = excluded.occ, kind = excluded.kind, odd_run_key = excluded.odd_run_key, "
                "runs = excluded.runs, committed_at = excluded.committed_at, detected_at = clock_timestamp() "
                "WHERE (excluded.step, excluded.seq) < (d.step, d.seq) OR ((excluded.step, excluded.seq) = "
                "(d.step, d.seq) AND excluded.runs IS DISTINCT FROM d.runs) RETURNING 1), "
                "m AS (INSERT INTO group_checks (twin_group, rank, checked_upto) SELECT $1, $2, $11 "
                "WHERE NOT EXISTS (SELECT 1 FROM runs WHERE twin_group = $1 AND run_key > $12::bigint) "
                "ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto RETURNING 1) "
                "SELECT 1 FROM d");
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

void cmp_rows_from_set(frame_set *set, const cmp_group *g, int (*keep)(const rec_record *), cmp_rows *out)
{
    out->set = *set;
    memset(set, 0, sizeof(*set));
    out->recs = xcalloc(out->set.n + 1, sizeof(*out->recs));
    out->n = 0;
    for (size_t i = 0; i < out->set.n; i++) {
        if (keep && !keep(&out->set.recs[i]))
            continue;
        cmp_rec *c = &out->recs[out->n];
        c->row = (int)i;
        c->run = 0;
        while (c->run < g->nruns && g->keys[c->run] != out->set.run_key[i])
            c->run++;
        c->rec = out->set.recs[i];
        out->n++;
    }
}

void cmp_rows_release(cmp_rows *rows)
{
    free(rows->recs);
    frame_set_release(&rows->set);
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
    PGresult *s = db_exec("cmp_store_one", 10, q, err, sizeof(err));
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

/* load_step - the records of `step` on `rank` of the group's runs (read into `set`), as rule input. Returns the
 * count; *out is a new array (caller frees); per run the count of its records in `counts`. */
static size_t load_step(const frame_set *set, int nruns, const int64_t *keys, cmp_rec **out, int64_t *counts)
{
    cmp_rec *recs = xcalloc(set->n + 1, sizeof(*recs));
    for (int k = 0; k < nruns; k++)
        counts[k] = 0;
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (!rec_in_steps(&set->recs[i]))
            continue; /* entries of state blocks: the restore checks' (server/compare/restore.c) */
        cmp_rec *c = &recs[n++];
        c->row = (int)i;
        c->run = 0;
        while (c->run < nruns && keys[c->run] != set->run_key[i])
            c->run++;
        if (c->run < nruns)
            counts[c->run]++;
        c->rec = set->recs[i];
    }
    *out = recs;
    return n;
}

/* The digest side of a step: per run the records its digests stand for. */
typedef struct step_digest_info {
    int64_t n[GROUP_MAX_RUNS]; /* -1: no digest */
    double shown;              /* when the step became comparable; 0 unknown */
    int asked;                 /* lockstepd asked agents for the step's records */
} step_digest_info;

/* held_back - the runs whose step digests stand for more records than are stored: their agents held them back
 * (digest streaming). Asks for them and returns how many runs are short, or -1 on a database error; when every
 * run is complete, settles the requests. */
static int held_back(int rank, int64_t step, int nruns, const int64_t *keys, const char *keyarr, const int64_t *counts,
                     const step_digest_info *di, double commit_s)
{
    char rk[16], st[32], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(st, sizeof(st), "%" PRId64, step);
    char shortarr[GROUP_MAX_RUNS * 22 + 3], whole[GROUP_MAX_RUNS * 22 + 3];
    size_t len = 0, wlen = 0;
    int n_short = 0, n_whole = 0;
    shortarr[len++] = '{';
    whole[wlen++] = '{';
    for (int k = 0; k < nruns; k++) {
        if (di->n[k] < 0)
            continue;
        if (counts[k] < di->n[k])
            len += (size_t)snprintf(shortarr + len, sizeof(shortarr) - len, "%s%" PRId64, n_short++ ? "," : "",
                                    keys[k]);
        else
            wlen += (size_t)snprintf(whole + wlen, sizeof(whole) - wlen, "%s%" PRId64, n_whole++ ? "," : "", keys[k]);
    }
    snprintf(shortarr + len, sizeof(shortarr) - len, "}");
    snprintf(whole + wlen, sizeof(whole) - wlen, "}");
    PGresult *r;
    if (n_short) {
        char when[48];
        snprintf(when, sizeof(when), "%.6f", commit_s > 0 ? commit_s : clock_wall_s());
        const char *q[] = {shortarr, rk, st, when, whole};
        r = db_exec("cmp_request", 5, q, err, sizeof(err));
        if (!r)
            return -1;
        PQclear(r);
        return n_short;
    }
    if (!di->asked)
        return 0;
    const char *p[] = {keyarr, rk, st};
    r = db_exec("cmp_answered", 3, p, err, sizeof(err));
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

/* find_divergence - apply the rule to the records of `step` on `rank` and store the divergence it finds, with the
 * rank's mark at `hi_s` (unless a run newer than `newest_s` joined). Returns 1 stored (or an earlier one kept),
 * 0 when the records match, 2 when some run's agent holds the step's records back (asked for; the step is
 * compared again when they come), -1 on a database error. */
static int find_divergence(const char *group, int rank, int64_t step, int nruns, const int64_t *keys,
                           char ids[][40], const char *keyarr, double commit_s, const char *hi_s,
                           const char *newest_s)
{
    char rk[16], st[32], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(st, sizeof(st), "%" PRId64, step);
    const char *ps[] = {keyarr, rk, st};
    PGresult *sr = db_exec_bin("cmp_step", 3, ps, err, sizeof(err));
    if (!sr)
        return -1;
    step_digest_info di = {.shown = 0};
    for (int k = 0; k < nruns; k++)
        di.n[k] = -1;
    for (int i = 0; i < PQntuples(sr); i++) {
        if (frames_be16(PQgetvalue(sr, i, 0)) != 1)
            continue;
        int64_t key = frames_be64(PQgetvalue(sr, i, 1));
        for (int k = 0; k < nruns; k++)
            if (keys[k] == key)
                di.n[k] = frames_be32(PQgetvalue(sr, i, 2));
        if (!PQgetisnull(sr, i, 4)) {
            uint64_t bits = (uint64_t)frames_be64(PQgetvalue(sr, i, 4));
            memcpy(&di.shown, &bits, sizeof(double));
        }
        di.asked = PQgetvalue(sr, i, 5)[0] != 0;
    }
    if (di.shown > 0)
        commit_s = di.shown;
    frame_set set = {0};
    if (frames_step_result(&set, sr, 0, 1, 3, keys, nruns, (uint32_t)rank, step, err, sizeof(err)) < 0) {
        log_warn("comparing group %s rank %d step %" PRId64 ": %s", group, rank, step, err);
        frame_set_release(&set);
        return -1;
    }
    cmp_rec *recs;
    int64_t counts[GROUP_MAX_RUNS];
    size_t n = load_step(&set, nruns, keys, &recs, counts);
    int held = held_back(rank, step, nruns, keys, keyarr, counts, &di, commit_s);
    if (held != 0) {
        free(recs);
        frame_set_release(&set);
        return held < 0 ? -1 : 2;
    }
    cmp_first f;
    cmp_rule_first(recs, n, nruns, &f);
    int rc = 0;
    if (!f.found)
        goto out_free;

    json_t *runs = json_array();
    for (int k = 0; k < nruns; k++) {
        json_t *e = cmp_run_entry(ids[k], f.by_run[k]);
        if (f.majority >= 0)
            json_object_set_new(e, "majority", json_boolean(f.agrees[k]));
        json_array_append_new(runs, e);
    }
    const rec_record *any = NULL;
    for (int k = 0; k < nruns && !any; k++)
        any = f.by_run[k] ? &f.by_run[k]->rec : NULL;
    char *runs_text = json_dumps(runs, JSON_COMPACT);
    json_decref(runs);
    char seq_s[32], occ_s[16], odd_s[32], commit[48], name[LS_NAME_MAX + 1];
    snprintf(seq_s, sizeof(seq_s), "%" PRId64, f.seq);
    snprintf(occ_s, sizeof(occ_s), "%u", any->occurrence);
    snprintf(odd_s, sizeof(odd_s), "%" PRId64, f.odd >= 0 ? keys[f.odd] : 0);
    snprintf(commit, sizeof(commit), "%.6f", commit_s > 0 ? commit_s : clock_wall_s());
    snprintf(name, sizeof(name), "%.*s", (int)any->name_len, any->name);
    const char *q[] = {group, rk, st, seq_s, name, occ_s, f.missing ? "missing" : "mismatch",
                       f.odd >= 0 ? odd_s : NULL, runs_text, commit, hi_s, newest_s};
    PGresult *s = db_exec("cmp_store", 12, q, err, sizeof(err));
    free(runs_text);
    if (!s) {
        rc = -1;
        goto out_free;
    }
    rc = 1;
    if (PQntuples(s) > 0) {
        double lat = commit_s > 0 ? clock_wall_s() - commit_s : 0;
        metrics_divergence(lat > 0 ? lat : 0);
        log_info("divergence in group %s rank %d at step %" PRId64 " seq %" PRId64 " (%s, %s occurrence %u)", group,
                 rank, step, f.seq, f.missing ? "missing" : "mismatch", name, any->occurrence);
        if (on_divergence)
            on_divergence(group); /* evidence, suspects and the group's alert */
    }
    PQclear(s);
out_free:
    free(recs);
    frame_set_release(&set);
    return rc;
}

/* cmp_rank - compare rank `rank` from `first_step` on (the first step lockstep_cmp_ranks found differing) up to
 * `upto`, and mark the rank compared up to `hi` (or the step before one whose records agents hold back). Returns
 * 1 when a divergence was stored or made earlier, 0 when none, -1 on a database error. */
int cmp_rank(const char *group, int rank, int nruns, const int64_t *keys, char ids[][40], int64_t hi,
                    int64_t upto, int64_t newest, int64_t first_step, double commit_s)
{
    char rk[16], err[512];
    PGresult *r;
    snprintf(rk, sizeof(rk), "%d", rank);
    char keyarr[GROUP_MAX_RUNS * 22 + 3], from_s[32], hi_s[32], upto_s[32], n_s[16];
    size_t len = 0;
    keyarr[len++] = '{';
    for (int k = 0; k < nruns; k++)
        len += (size_t)snprintf(keyarr + len, sizeof(keyarr) - len, "%s%" PRId64, k ? "," : "", keys[k]);
    snprintf(keyarr + len, sizeof(keyarr) - len, "}");
    int64_t from = first_step;
    snprintf(from_s, sizeof(from_s), "%" PRId64, from);
    snprintf(hi_s, sizeof(hi_s), "%" PRId64, hi);
    snprintf(upto_s, sizeof(upto_s), "%" PRId64, upto);
    snprintf(n_s, sizeof(n_s), "%d", nruns);
    char newest_s[32];
    snprintf(newest_s, sizeof(newest_s), "%" PRId64, newest);
    /* The first step whose digests differ; when its records all match (digests written by an older
     * digest version), the next one: a step is only ever passed once its records were compared. */
    int rc = 0;
    for (int tries = 0; rc == 0 && from <= upto && tries < STEPS_PER_CHECK; tries++) {
        int64_t step = first_step;
        if (tries > 0) {
            const char *q[] = {keyarr, rk, from_s, upto_s, n_s};
            r = db_exec("cmp_steps", 5, q, err, sizeof(err));
            if (!r)
                return -1;
            if (PQntuples(r) != 1) {
                PQclear(r);
                break;
            }
            step = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
            PQclear(r);
        }
        rc = find_divergence(group, rank, step, nruns, keys, ids, keyarr, commit_s, hi_s, newest_s);
        if (rc == 2) { /* records held back by an agent: compared from this step once they come */
            snprintf(hi_s, sizeof(hi_s), "%" PRId64, step - 1);
            rc = 0;
            break;
        }
        if (rc == 0 && tries == STEPS_PER_CHECK - 1) {
            /* much to compare record by record: mark this far and come back */
            snprintf(hi_s, sizeof(hi_s), "%" PRId64, step);
            cmp_notify(group, rank, commit_s);
        }
        from = step + 1;
        snprintf(from_s, sizeof(from_s), "%" PRId64, from);
    }
    if (rc < 0)
        return -1;
    if (rc == 1)
        return 1; /* marked with the divergence */
    const char *m[] = {group, rk, hi_s, newest_s};
    r = db_exec("cmp_mark", 4, m, err, sizeof(err));
    if (!r)
        return -1;
    PQclear(r);
    return rc;
}


/* found_run - compare a found rank's records (see cmp_rank); on a database error it is queued again. */
int cmp_found_run(const found_item *f)
{
    int got = cmp_rank(f->group, f->rank, f->nruns, f->keys, (char(*)[40])f->ids, f->hi, f->upto, f->newest, f->step,
                       f->commit_s);
    if (got < 0)
        cmp_notify(f->group, f->rank, f->commit_s);
    return got;
}

/* arr_text - append `s` (len bytes) to a PostgreSQL array literal as a quoted element. */
static void arr_text(char **buf, size_t *len, size_t *cap, const char *s, size_t n, int first)
{
    size_t need = *len + 2 * n + 8;
    if (need > *cap) {
        while (*cap < need)
            *cap = *cap ? 2 * *cap : 1024;
        *buf = xrealloc(*buf, *cap);
    }
    char *p = *buf + *len;
    *p++ = first ? '{' : ',';
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\')
            *p++ = '\\';
        *p++ = s[i];
    }
    *p++ = '"';
    *len = (size_t)(p - *buf);
    (*buf)[*len] = 0;
}

/* arr_null - append a NULL element to a PostgreSQL array literal. */
static void arr_null(char **buf, size_t *len, size_t *cap, int first)
{
    if (*len + 8 > *cap) {
        *cap = *cap ? 2 * *cap + 8 : 1024;
        *buf = xrealloc(*buf, *cap);
    }
    *len += (size_t)sprintf(*buf + *len, "%sNULL", first ? "{" : ",");
}

static void arr_close(char **buf, size_t *len, size_t *cap)
{
    if (*len + 3 > *cap) {
        *cap = *len + 3;
        *buf = xrealloc(*buf, *cap);
    }
    if (!*len)
        (*buf)[(*len)++] = '{';
    (*buf)[(*len)++] = '}';
    (*buf)[*len] = 0;
}

/* found_batch - the differing ranks `f` (n of them, one look's, so one group and one set of runs) compared in
 * two round trips: their steps' segments and digests, then every divergence and mark. Ranks that need more (an
 * agent holds records back, or the step's records all match) are compared on their own after. */
void cmp_found_batch(found_item **f, size_t n)
{
    const found_item *f0 = f[0];
    char keyarr[GROUP_MAX_RUNS * 22 + 3], err[512], newest_s[32];
    size_t len = 0;
    keyarr[len++] = '{';
    for (int k = 0; k < f0->nruns; k++)
        len += (size_t)snprintf(keyarr + len, sizeof(keyarr) - len, "%s%" PRId64, k ? "," : "", f0->keys[k]);
    snprintf(keyarr + len, sizeof(keyarr) - len, "}");
    snprintf(newest_s, sizeof(newest_s), "%" PRId64, f0->newest);
    char *ranks = xmalloc(n * 12 + 3), *steps = xmalloc(n * 22 + 3);
    size_t rl = 0, sl = 0;
    for (size_t i = 0; i < n; i++) {
        rl += (size_t)sprintf(ranks + rl, "%c%d", i ? ',' : '{', f[i]->rank);
        sl += (size_t)sprintf(steps + sl, "%c%" PRId64, i ? ',' : '{', f[i]->step);
    }
    strcpy(ranks + rl, "}");
    strcpy(steps + sl, "}");
    const char *p[] = {keyarr, ranks, steps};
    PGresult *sr = db_exec_bin("cmp_steps_many", 3, p, err, sizeof(err));
    free(ranks);
    free(steps);
    int *alone = xcalloc(n, sizeof(int)); /* 1: compared on its own after */
    double *shown = xcalloc(n, sizeof(double)); /* the commit each divergence counts from */
    /* the divergences' columns, as array literals */
    char *a[10] = {0};
    size_t al[10] = {0}, ac[10] = {0};
    size_t n_div = 0;
    for (size_t i = 0; i < n; i++) {
        const found_item *it = f[i];
        if (!sr) {
            alone[i] = 1;
            continue;
        }
        step_digest_info di = {.shown = 0};
        for (int k = 0; k < it->nruns; k++)
            di.n[k] = -1;
        for (int row = 0; row < PQntuples(sr); row++) {
            if (frames_be16(PQgetvalue(sr, row, 0)) != 1 || frames_be32(PQgetvalue(sr, row, 1)) != it->rank ||
                frames_be64(PQgetvalue(sr, row, 2)) != it->step)
                continue;
            int64_t key = frames_be64(PQgetvalue(sr, row, 3));
            for (int k = 0; k < it->nruns; k++)
                if (it->keys[k] == key)
                    di.n[k] = frames_be32(PQgetvalue(sr, row, 4));
            if (!PQgetisnull(sr, row, 6)) {
                uint64_t bits = (uint64_t)frames_be64(PQgetvalue(sr, row, 6));
                memcpy(&di.shown, &bits, sizeof(double));
            }
            di.asked |= PQgetvalue(sr, row, 7)[0] != 0;
        }
        frame_set set = {0};
        if (frames_step_rows(&set, sr, 0, 3, 5, 1, 2, it->keys, it->nruns, (uint32_t)it->rank, it->step, err,
                             sizeof(err)) < 0) {
            frame_set_release(&set);
            alone[i] = 1;
            continue;
        }
        cmp_rec *recs;
        int64_t counts[GROUP_MAX_RUNS];
        size_t nr = load_step(&set, it->nruns, it->keys, &recs, counts);
        int whole = !di.asked;
        for (int k = 0; k < it->nruns; k++)
            whole &= di.n[k] < 0 || counts[k] >= di.n[k];
        cmp_first fr;
        if (whole)
            cmp_rule_first(recs, nr, it->nruns, &fr);
        if (!whole || !fr.found) {
            alone[i] = 1; /* held back (digest streaming), or records that match: the single path */
            free(recs);
            frame_set_release(&set);
            continue;
        }
        json_t *runs = json_array();
        for (int k = 0; k < it->nruns; k++) {
            json_t *e = cmp_run_entry(it->ids[k], fr.by_run[k]);
            if (fr.majority >= 0)
                json_object_set_new(e, "majority", json_boolean(fr.agrees[k]));
            json_array_append_new(runs, e);
        }
        const rec_record *any = NULL;
        for (int k = 0; k < it->nruns && !any; k++)
            any = fr.by_run[k] ? &fr.by_run[k]->rec : NULL;
        char *runs_text = json_dumps(runs, JSON_COMPACT);
        json_decref(runs);
        char num[8][48];
        snprintf(num[0], 48, "%d", it->rank);
        snprintf(num[1], 48, "%" PRId64, it->step);
        snprintf(num[2], 48, "%" PRId64, fr.seq);
        snprintf(num[4], 48, "%u", any->occurrence);
        snprintf(num[6], 48, "%" PRId64, fr.odd >= 0 ? it->keys[fr.odd] : 0);
        double commit_s = di.shown > 0 ? di.shown : it->commit_s > 0 ? it->commit_s : clock_wall_s();
        shown[i] = commit_s;
        snprintf(num[7], 48, "%.6f", commit_s);
        const char *kind = fr.missing ? "missing" : "mismatch";
        int first = n_div == 0;
        arr_text(&a[0], &al[0], &ac[0], num[0], strlen(num[0]), first);
        arr_text(&a[1], &al[1], &ac[1], num[1], strlen(num[1]), first);
        arr_text(&a[2], &al[2], &ac[2], num[2], strlen(num[2]), first);
        arr_text(&a[3], &al[3], &ac[3], any->name, any->name_len, first);
        arr_text(&a[4], &al[4], &ac[4], num[4], strlen(num[4]), first);
        arr_text(&a[5], &al[5], &ac[5], kind, strlen(kind), first);
        if (fr.odd >= 0)
            arr_text(&a[6], &al[6], &ac[6], num[6], strlen(num[6]), first);
        else
            arr_null(&a[6], &al[6], &ac[6], first);
        arr_text(&a[7], &al[7], &ac[7], runs_text, strlen(runs_text), first);
        arr_text(&a[8], &al[8], &ac[8], num[7], strlen(num[7]), first);
        char hi_s[32];
        snprintf(hi_s, sizeof(hi_s), "%" PRId64, it->hi);
        arr_text(&a[9], &al[9], &ac[9], hi_s, strlen(hi_s), first);
        free(runs_text);
        free(recs);
        frame_set_release(&set);
        n_div++;
    }
    PQclear(sr);
    if (n_div) {
        for (int c = 0; c < 10; c++)
            arr_close(&a[c], &al[c], &ac[c]);
        const char *q[] = {f0->group, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], newest_s};
        PGresult *r = db_exec("cmp_store_many", 12, q, err, sizeof(err));
        if (!r) {
            for (size_t i = 0; i < n; i++)
                alone[i] = 1; /* try them on their own */
        } else {
            for (int row = 0; row < PQntuples(r); row++) {
                int rank = atoi(PQgetvalue(r, row, 0));
                for (size_t i = 0; i < n; i++)
                    if (f[i]->rank == rank && !alone[i]) {
                        double lat = clock_wall_s() - shown[i];
                        metrics_divergence(lat > 0 ? lat : 0);
                        log_info("divergence in group %s rank %d at step %" PRId64 " (found with %zu others, "
                                 "%.1f ms after the commit that showed it)",
                                 f0->group, rank, f[i]->step, n - 1, lat * 1e3);
                    }
            }
            if (PQntuples(r) > 0 && on_divergence)
                on_divergence(f0->group); /* evidence, suspects and the group's alert */
            PQclear(r);
        }
    }
    for (int c = 0; c < 10; c++)
        free(a[c]);
    for (size_t i = 0; i < n; i++)
        if (alone[i])
            cmp_found_run(f[i]);
    free(alone);
    free(shown);
}

