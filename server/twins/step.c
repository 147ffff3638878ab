/* step.c - one step of one rank compared record by record: its frames and digest counts read, records agents held back
 * asked for, the first-divergence rule applied and the divergence stored (alone, or many found at once together). */
#include "server/twins/cmp_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cause.h"
#include "common/dtype.h"
#include "common/recmatch.h"
#include "common/first.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

#define STEPS_PER_CHECK 256 /* differing digests whose records match (an older digest version): checked per call */

static void (*on_divergence)(const char *group);

void cmp_step_on_divergence(void (*fn)(const char *group))
{
    on_divergence = fn;
}

void cmp_step_register(void)
{
    /* The rank's lock, without waiting: when a batch or an end holds it they are committing, and each asks for
     * this comparison again once committed (so do comparisons of other lockstepd). The comparison's own commit
     * need not wait for the disk: what it writes is recomputed after a crash. */
    db_register("cmp_lock", "SELECT pg_try_advisory_xact_lock(lockstep_check_key($1, $2::int)), "
                            "set_config('synchronous_commit', 'off', true)");
    /* The same, waiting for it (5 s at most), for a comparison a reply waits for: the timeout is set first (the
     * lock's subquery depends on it, so it runs after) */
    db_register("cmp_lock_wait", "SELECT true, set_config('synchronous_commit', 'off', true) "
                                 "FROM set_config('lock_timeout', '5s', true) t(v), LATERAL (SELECT "
                                 "pg_advisory_xact_lock(lockstep_check_key($1, $2::int)) WHERE t.v IS NOT NULL) l");
    /* What the last check of this rank compared (row 0 of a full join: either side may be missing), and the
     * divergence it keeps. */
    db_register("cmp_checked", "SELECT c.checked_upto, c.members::text, c.rank IS NOT NULL, d.step, d.kind "
                               "FROM (SELECT 1) one LEFT JOIN group_checks c ON c.twin_group = $1 AND c.rank = $2 "
                               "LEFT JOIN divergences d ON d.twin_group = $1 AND d.rank = $2");
    /* The mark: how far this rank was compared, how far it was to go, with which runs, when, and whether a
     * running run has not reached it yet; written only if no run joined the group after the runs this check
     * compared ($7 = the newest run key seen): a joining run resets the group's checks (group_reset), and a mark
     * computed without it must not overwrite that reset. */
    db_register("cmp_mark", "INSERT INTO group_checks (twin_group, rank, checked_upto, target, members, checked_at, "
                            "waiting) SELECT $1, $2, $3, $4, $5::bigint[], clock_timestamp(), $6 "
                            "WHERE NOT EXISTS (SELECT 1 FROM runs WHERE twin_group = $1 AND run_key > $7::bigint) "
                            "ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto, "
                            "target = excluded.target, members = excluded.members, checked_at = excluded.checked_at, "
                            "waiting = excluded.waiting");
    /* The latest start of the runs a look compared: a run's start moved since (a restored state block arrived,
     * server/twins/resume.c) makes the look stale. */
    db_register("cmp_starts", "SELECT coalesce(max(start_step), 0) FROM runs WHERE run_key = ANY($1::bigint[])");
    /* A step comparison's divergence the runs no longer show (a restore difference is not its to drop). */
    db_register("cmp_drop", "DELETE FROM divergences WHERE twin_group = $1 AND rank = $2 AND kind <> 'restore' "
                            "RETURNING 1");
    db_register("cmp_steps", "SELECT step FROM step_digests WHERE run_key = ANY($1::bigint[]) AND rank = $2 "
                             "AND blk BETWEEN lockstep_step_block($3) AND lockstep_step_block($4) "
                             "AND step BETWEEN $3 AND $4 GROUP BY step HAVING count(*) < $5 "
                             "OR min(digest) <> max(digest) OR min(n) <> max(n) ORDER BY step LIMIT 1");
    /* In one round trip: the step's stored segments (what = 0) and, per run, the records its digests stand for,
     * when the step became comparable (lockstep_shown_at: the detection latency counts from that commit,
     * whatever the queue coalesced, and for held records from the step digests' commit) and whether lockstepd
     * asked agents for the step's records (what = 1). */
    db_register("cmp_step",
                "SELECT 0::int2, f.run_key, f.n, f.frames, NULL::float8, false, NULL::bigint "
                "FROM record_frames f "
                "WHERE f.run_key = ANY($1::bigint[]) AND f.rank = $2 AND f.step = $3 UNION ALL "
                "SELECT 0::int2, f.run_key, f.n, f.frames, NULL::float8, false, NULL::bigint "
                "FROM record_frames f WHERE f.run_key = ANY($1::bigint[]) AND f.rank = $2 AND " FRAMES_SPANNING(
                    "$3") " UNION ALL "
                          "SELECT 1::int2, s.run_key, s.n, NULL::bytea, lockstep_shown_at($1::bigint[], $2, $3), "
                          "EXISTS (SELECT 1 FROM record_requests q WHERE q.run_key = ANY($1::bigint[]) "
                          "AND q.rank = $2 AND q.step = $3), s.digest FROM step_digests s "
                          "WHERE s.run_key = ANY($1::bigint[]) AND s.rank = $2 AND s.blk = lockstep_step_block($3) "
                          "AND s.step = $3");
    /* Digest streaming: a run whose agent held the step's records back is asked for them (the reply to its
     * rank's next batch says so); `committed_at` keeps the commit that showed the difference, for the latency. */
    /* The runs still short are asked (again); the others' requests are answered, whatever raced with this read
     * (a held batch stored after it was read must not be asked for again forever). A run short because retention
     * removed its records of the step (records_removed) is not asked: its request is kept answered and `removed`,
     * and the rank's comparison stops there as for held records, which the group's status says. */
    db_register("cmp_request", "WITH ask AS (INSERT INTO record_requests AS q (run_key, rank, step, committed_at, "
                               "answered, removed) SELECT k, $2, $3, to_timestamp($4), g.gone, g.gone "
                               "FROM unnest($1::bigint[]) AS k CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM "
                               "records_removed x WHERE x.run_key = k AND x.rank = $2 AND $3::bigint BETWEEN x.step_lo "
                               "AND x.step_hi) AS gone) g "
                               "ON CONFLICT (run_key, rank, step) DO UPDATE SET answered = excluded.answered, "
                               "removed = excluded.removed WHERE q.answered) "
                               "UPDATE record_requests SET answered = true WHERE run_key = ANY($5::bigint[]) "
                               "AND rank = $2 AND step = $3 AND NOT answered");
    db_register("cmp_answered", "DELETE FROM record_requests WHERE run_key = ANY($1::bigint[]) AND rank = $2 "
                                "AND step = $3");
    /* A divergence is written unless the same one is stored. An earlier one (step, seq) always replaces the
     * stored one; with $11 (the step comparison, which knows the stored divergence under the rank's lock and
     * compared from where it stands) any other than a restore difference is replaced too, so that late records
     * move it. Restore differences (restore.c) and logical ones (logical.c) keep the earliest. */
    db_register(
        "cmp_store",
        "INSERT INTO divergences AS d (twin_group, rank, step, seq, name, occ, kind, odd_run_key, runs, "
        "committed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, to_timestamp($10)) "
        "ON CONFLICT (twin_group, rank) DO UPDATE SET step = excluded.step, seq = excluded.seq, "
        "name = excluded.name, occ = excluded.occ, kind = excluded.kind, odd_run_key = excluded.odd_run_key, "
        "runs = excluded.runs, committed_at = excluded.committed_at, detected_at = clock_timestamp() "
        "WHERE (excluded.step, excluded.seq, excluded.name, excluded.occ, excluded.kind, excluded.runs) IS DISTINCT "
        "FROM (d.step, d.seq, d.name, d.occ, d.kind, d.runs) AND ((excluded.step, excluded.seq) < (d.step, d.seq) "
        "OR ((excluded.step, excluded.seq) = (d.step, d.seq) AND excluded.runs IS DISTINCT FROM d.runs) "
        "OR ($11::boolean AND d.kind <> 'restore')) RETURNING 1");
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

json_t *cmp_run_entry(const char *run_id, const first_rec *c)
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
    /* the collective's communicator: the agent's comm field, else the size its shape states (older agents) */
    int csize = x.has_comm ? (int)x.comm_size : cause_comm_size(r->name, r->name_len, r->ndim, r->shape);
    if (csize > 0) {
        json_t *cm = json_pack("{s:i}", "size", csize);
        if (x.has_comm && x.comm_nlisted) {
            json_t *w = json_array();
            for (uint32_t i = 0; i < x.comm_nlisted; i++)
                json_array_append_new(w, json_integer(x.comm_ranks[i]));
            json_object_set_new(cm, "ranks", w);
        }
        json_object_set_new(o, "comm", cm);
    }
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
        first_rec *c = &out->recs[out->n];
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
    PGresult *s = db_exec("cmp_store", 11, q, err, sizeof(err));
    free(runs_text);
    if (!s)
        return -1;
    if (PQntuples(s) > 0 && out->stored <= 0) { /* told once the check commits (cmp_tell) */
        out->stored = 1;
        out->rank = rank;
        out->step = step;
        out->seq = seq;
        out->occ = occ;
        out->commit_s = commit_s;
        snprintf(out->name, sizeof(out->name), "%s", nm);
        snprintf(out->kind, sizeof(out->kind), "%s", kind);
    }
    PQclear(s);
    return 1;
}

void cmp_key_array(cmp_group *g)
{
    size_t len = (size_t)snprintf(g->keyarr, sizeof(g->keyarr), "{");
    for (int k = 0; k < g->nruns && len < sizeof(g->keyarr); k++)
        len += (size_t)snprintf(g->keyarr + len, sizeof(g->keyarr) - len, "%s%" PRId64, k ? "," : "", g->keys[k]);
    if (len < sizeof(g->keyarr))
        snprintf(g->keyarr + len, sizeof(g->keyarr) - len, "}");
}

int cmp_txn_begin(const char *group, int rank, int wait)
{
    char rk[16], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {group, rk};
    if (db_begin(err, sizeof(err)) < 0)
        return -1;
    PGresult *r = db_exec_once(wait ? "cmp_lock_wait" : "cmp_lock", 2, p, err, sizeof(err));
    if (!r) {
        db_rollback();
        return -1;
    }
    int locked = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!locked) /* a batch or an end of this rank is committing: it asks again when it has */
        db_rollback();
    return locked;
}

int cmp_txn_end(const char *group, int rc, const cmp_found *f)
{
    char err[512];
    if (rc < 0 || db_commit(err, sizeof(err)) < 0) {
        db_rollback();
        return -1;
    }
    cmp_tell(group, f);
    return rc;
}

void cmp_tell(const char *group, const cmp_found *f)
{
    if (f->stored > 0) {
        double lat = f->commit_s > 0 ? clock_wall_s() - f->commit_s : 0;
        metrics_divergence(lat > 0 ? lat : 0);
        log_info("divergence in group %s rank %d at step %" PRId64 " seq %" PRId64 " (%s, %s occurrence %u)", group,
                 f->rank, f->step, f->seq, f->kind, f->name, f->occ);
    } else if (f->stored < 0) {
        log_info("group %s rank %d: its divergence no longer shows (late records, or other runs compared)", group,
                 f->rank);
    }
    if (f->stored && on_divergence)
        on_divergence(group); /* evidence, suspects and the group's alert */
}

/* load_step - the records of `step` on `rank` of the group's runs (read into `set`), as rule input. Returns the
 * count; *out is a new array (caller frees); per run the count of its records in `counts` and the XOR of their
 * digest terms in `terms`. */
static size_t load_step(const frame_set *set, int nruns, const int64_t *keys, first_rec **out, int64_t *counts,
                        uint64_t *terms)
{
    first_rec *recs = xcalloc(set->n + 1, sizeof(*recs));
    for (int k = 0; k < nruns; k++) {
        counts[k] = 0;
        terms[k] = 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (!rec_in_steps(&set->recs[i]))
            continue; /* entries of state blocks: the restore checks' (server/twins/restore.c) */
        first_rec *c = &recs[n++];
        c->row = (int)i;
        c->run = 0;
        while (c->run < nruns && keys[c->run] != set->run_key[i])
            c->run++;
        if (c->run < nruns) {
            counts[c->run]++;
            terms[c->run] ^= rec_digest_term(&set->recs[i]);
        }
        c->rec = set->recs[i];
    }
    *out = recs;
    return n;
}

/* The digest side of a step: per run the records its digests stand for. */
typedef struct step_digest_info {
    int64_t n[GROUP_MAX_RUNS]; /* -1: no digest */
    uint64_t digest[GROUP_MAX_RUNS];
    double shown; /* when the step became comparable; 0 unknown */
    int asked;    /* lockstepd asked agents for the step's records */
} step_digest_info;

/* short_of - 1 when run `k`'s stored records of the step are not yet (or cannot be) what its step digest stands
 * for: fewer, as when its agent held them back (digest streaming), or, once lockstepd asked for held records of
 * the step, records that do not reproduce the digest (common/recmatch.h, rec_held_answers), which are never taken
 * as agreeing with anything (ingest refuses them, server/store/held.c; two held batches of one step stored at once
 * would pass it each). Steps nobody asked for hold no held records: their digests were summed from the records
 * themselves, and may be of an older digest version (STEPS_PER_CHECK). */
static int short_of(int k, const int64_t *counts, const uint64_t *terms, const step_digest_info *di, int rank,
                    int64_t step, const int64_t *keys)
{
    if (!di->asked || counts[k] < di->n[k])
        return counts[k] < di->n[k];
    int a = rec_held_answers(counts[k], terms[k], di->n[k], di->digest[k]);
    if (a < 0) {
        metrics_held_refused(MH_COMPARE);
        log_warn("run %" PRId64 " rank %d step %" PRId64 ": its %" PRId64 " stored records do not reproduce its step "
                 "digest of %" PRId64 " records; the step is not compared until they do",
                 keys[k], rank, step, counts[k], di->n[k]);
    }
    return a != 1;
}

/* held_back - the runs whose stored records are not what their step digests stand for: fewer when their agents
 * held them back (digest streaming), or records that do not answer the digest (short_of). Asks for them and
 * returns how many runs are short, or -1 on a database error; when every run is complete, settles the requests. */
static int held_back(int rank, int64_t step, int nruns, const int64_t *keys, const char *keyarr, const int64_t *counts,
                     const uint64_t *terms, const step_digest_info *di, double commit_s)
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
        if (short_of(k, counts, terms, di, rank, step, keys))
            len +=
                (size_t)snprintf(shortarr + len, sizeof(shortarr) - len, "%s%" PRId64, n_short++ ? "," : "", keys[k]);
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

/* find_divergence - apply the rule to the records of `step` on `rank` and store the divergence it finds (replacing
 * a stored step divergence: the caller compared from where it stands, under the rank's lock). Returns 1 when they
 * diverge (stored, or the same one kept), 0 when the records match, 2 when some run's agent holds the step's
 * records back (asked for; the step is compared again when they come), -1 on a database error. What was written
 * goes to `out`. */
static int find_divergence(const char *group, int rank, int64_t step, int nruns, const int64_t *keys, char ids[][40],
                           const char *keyarr, double commit_s, cmp_found *out)
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
            if (keys[k] == key) {
                di.n[k] = frames_be32(PQgetvalue(sr, i, 2));
                di.digest[k] = (uint64_t)frames_be64(PQgetvalue(sr, i, 6));
            }
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
    first_rec *recs;
    int64_t counts[GROUP_MAX_RUNS];
    uint64_t terms[GROUP_MAX_RUNS];
    size_t n = load_step(&set, nruns, keys, &recs, counts, terms);
    int held = held_back(rank, step, nruns, keys, keyarr, counts, terms, &di, commit_s);
    if (held != 0) {
        free(recs);
        frame_set_release(&set);
        return held < 0 ? -1 : 2;
    }
    first_div f;
    first_find(recs, n, nruns, &f);
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
    rc = cmp_store_divergence(group, rank, step, f.seq, any->name, any->name_len, any->occurrence,
                              f.missing ? "missing" : "mismatch", f.odd >= 0 ? keys[f.odd] : 0, runs, commit_s, 1, out);
out_free:
    free(recs);
    frame_set_release(&set);
    return rc;
}

/* rank_locked - cmp_found_run's comparison of one rank, inside the transaction that holds the rank's lock: from the
 * step the look found differing up to `upto` (the shared complete steps, up to the stored divergence), replacing a
 * stored step divergence by what the runs show now and dropping it when they no longer show it in the range
 * compared; then the rank's mark. Returns 1 when a divergence was found, 0 when none, -1 on a database error;
 * *again when the rank is to be looked at again (much left to compare, or a late batch moved the mark back since
 * the look). */
static int rank_locked(const found_item *it, cmp_found *out, int *again)
{
    char rk[16], err[512], keyarr[GROUP_MAX_RUNS * 22 + 3];
    PGresult *r;
    snprintf(rk, sizeof(rk), "%d", it->rank);
    size_t len = (size_t)snprintf(keyarr, sizeof(keyarr), "{");
    for (int k = 0; k < it->nruns; k++)
        len += (size_t)snprintf(keyarr + len, sizeof(keyarr) - len, "%s%" PRId64, k ? "," : "", it->keys[k]);
    snprintf(keyarr + len, sizeof(keyarr) - len, "}");
    const char *p[] = {it->group, rk};
    r = db_exec("cmp_checked", 2, p, err, sizeof(err));
    if (!r)
        return -1;
    int same_members = PQntuples(r) == 1 && PQgetvalue(r, 0, 2)[0] == 't' && !strcmp(PQgetvalue(r, 0, 1), keyarr);
    int has_done = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0);
    int64_t done = has_done ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    int has_div = PQntuples(r) == 1 && !PQgetisnull(r, 0, 3);
    int64_t div_step = has_div ? strtoll(PQgetvalue(r, 0, 3), NULL, 10) : 0;
    int div_restore = has_div && !strcmp(PQgetvalue(r, 0, 4), "restore");
    PQclear(r);
    if (same_members && has_done && done + 1 < it->from) {
        *again = 1; /* a late batch moved the mark back after the look: look again from there */
        return 0;
    }
    const char *ps[] = {keyarr};
    r = db_exec("cmp_starts", 1, ps, err, sizeof(err));
    if (!r)
        return -1;
    int64_t latest = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    if (latest > it->from) {
        *again = 1; /* a run restored a checkpoint after the look: its start moved past the look's range */
        return 0;
    }
    char n_s[16], upto_s[32], from_s[32];
    snprintf(n_s, sizeof(n_s), "%d", it->nruns);
    snprintf(upto_s, sizeof(upto_s), "%" PRId64, it->upto);
    int64_t mark = it->hi, from = it->step;
    int rc = 0, held = 0;
    /* The first step whose digests differ; when its records all match (digests written by an older digest
     * version), the next one: a step is only ever passed once its records were compared. */
    for (int tries = 0; rc == 0 && from <= it->upto && tries < STEPS_PER_CHECK; tries++) {
        int64_t step = it->step;
        if (tries > 0) {
            snprintf(from_s, sizeof(from_s), "%" PRId64, from);
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
        rc = find_divergence(it->group, it->rank, step, it->nruns, it->keys, (char(*)[40])it->ids, keyarr, it->commit_s,
                             out);
        if (rc == 2) { /* records held back by an agent: compared from this step once they come */
            mark = step - 1;
            held = 1;
            rc = 0;
            break;
        }
        if (rc == 0 && tries == STEPS_PER_CHECK - 1) {
            mark = step; /* much to compare record by record: mark this far and come back */
            *again = 1;
        }
        from = step + 1;
    }
    if (rc < 0)
        return -1;
    if (rc == 0 && !*again && !held && has_div && !div_restore && div_step >= it->from && div_step <= it->hi) {
        /* The stored divergence was in the range just compared and the runs no longer show it there (a late
         * record filled it in, or the runs compared changed). A restore difference stays: restore.c checks it
         * once. */
        r = db_exec("cmp_drop", 2, p, err, sizeof(err));
        if (!r)
            return -1;
        if (PQntuples(r) > 0 && out->stored == 0) {
            out->stored = -1;
            out->rank = it->rank;
        }
        PQclear(r);
    }
    char mark_s[32], target_s[32], newest_s[32];
    snprintf(mark_s, sizeof(mark_s), "%" PRId64, mark);
    snprintf(target_s, sizeof(target_s), "%" PRId64, it->hi);
    snprintf(newest_s, sizeof(newest_s), "%" PRId64, it->newest);
    const char *m[] = {it->group, rk, mark_s, target_s, keyarr, it->waiting ? "true" : "false", newest_s};
    r = db_exec("cmp_mark", 7, m, err, sizeof(err));
    if (!r)
        return -1;
    PQclear(r);
    return rc;
}

int cmp_found_run(const found_item *f, int *again)
{
    *again = 0;
    int locked = cmp_txn_begin(f->group, f->rank, f->wait);
    if (locked <= 0) {
        *again = locked < 0;
        return locked; /* 0: a batch or an end of the rank is committing; it asks again */
    }
    cmp_found out;
    memset(&out, 0, sizeof(out));
    int more = 0;
    int rc = cmp_txn_end(f->group, rank_locked(f, &out, &more), &out);
    *again = rc < 0 || more;
    return rc;
}
