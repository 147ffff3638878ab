/* effect_data.c - what GET /api/v1/compare reads: the runs its arguments name, their scalar metrics aligned step by
 * step, and the first record where a changed run departs from the baseline. */
#include "server/effect/effect_data.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cause.h"
#include "common/dtype.h"
#include "common/json/mdiff.h"
#include "common/recmatch.h"
#include "common/first.h"
#include "server/twins/first_json.h"
#include "server/twins/findings.h"
#include "server/core/limits.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"
#include "server/store/runs.h"

#define DIFF_PAIRS 256 /* differing (rank, step) pairs of two runs read at once */

void effect_data_register(void)
{
    db_register("eff_group", "SELECT run_key, run_id, coalesce(twin_group, ''), status FROM runs "
                             "WHERE twin_group = (SELECT lockstep_group_key($1)) ORDER BY run_key LIMIT 65");
    db_register("eff_run",
                "SELECT run_key, run_id, coalesce(twin_group, ''), status FROM runs WHERE run_id = $1::uuid");
    db_register("eff_span", "SELECT min(min_step), max(max_step), count(DISTINCT rank) FROM rank_progress "
                            "WHERE run_key = ANY($1::bigint[])");
    /* The (rank, step) pairs of steps $3..$4 whose digests differ between two runs, or that one of them lacks. */
    db_register("eff_diff", "SELECT coalesce(a.rank, b.rank), coalesce(a.step, b.step), "
                            "coalesce(a.n, 0) + coalesce(b.n, 0) FROM "
                            "(SELECT rank, step, n, digest FROM step_digests WHERE run_key = $1 "
                            "AND blk BETWEEN lockstep_step_block($3) AND lockstep_step_block($4) "
                            "AND step BETWEEN $3 AND $4) a FULL JOIN "
                            "(SELECT rank, step, n, digest FROM step_digests WHERE run_key = $2 "
                            "AND blk BETWEEN lockstep_step_block($3) AND lockstep_step_block($4) "
                            "AND step BETWEEN $3 AND $4) b ON a.rank = b.rank AND a.step = b.step "
                            "WHERE a.digest IS DISTINCT FROM b.digest OR a.n IS DISTINCT FROM b.n "
                            "ORDER BY 2, 1 LIMIT 256");
    /* Two runs and their manifests, for the one manifest diff (common/json/mdiff.h) the cause rule reads. */
    db_register("eff_mruns", "SELECT run_key, run_id, job_id, step_id, user_name, nodes, command, ranks FROM runs "
                             "WHERE run_key = ANY($1::bigint[]) ORDER BY array_position($1::bigint[], run_key)");
    db_register("eff_manifests", "SELECT run_key, rank, manifest::text FROM manifests "
                                 "WHERE run_key = ANY($1::bigint[]) ORDER BY run_key, rank");
}

int effect_fail_set(effect_fail *f, int status, const char *error, const char *detail, const char *hint)
{
    f->status = status;
    snprintf(f->error, sizeof(f->error), "%s", error);
    snprintf(f->detail, sizeof(f->detail), "%s", detail);
    snprintf(f->hint, sizeof(f->hint), "%s", hint);
    return -1;
}

int effect_fail_read(effect_fail *f, int rc, const char *err)
{
    if (rc == FRAMES_DAMAGED)
        return effect_fail_set(f, 500, "stored records are damaged", err,
                               "their frames fail their checksums: the rows were changed outside lockstepd or the "
                               "disk damaged them; restore them from a backup");
    return effect_fail_set(f, 503, "", err, "");
}

/* ---- the runs an argument names ---- */

/* add_runs - the rows of eff_group/eff_run into `s`, skipping runs it holds. Returns 0, or -1 when full. */
static int add_runs(effect_set *s, PGresult *r)
{
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t key = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        int dup = 0;
        for (int j = 0; j < s->n && !dup; j++)
            dup = s->keys[j] == key;
        if (dup)
            continue;
        if (s->n == EFFECT_MAX_SET)
            return -1;
        s->keys[s->n] = key;
        snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", PQgetvalue(r, i, 1));
        snprintf(s->groups[s->n], sizeof(s->groups[0]), "%s", PQgetvalue(r, i, 2));
        s->running[s->n] = !strcmp(PQgetvalue(r, i, 3), "running");
        s->n++;
    }
    return 0;
}

int effect_set_open(const char *role, const char *spec, effect_set *s, effect_fail *f)
{
    memset(s, 0, sizeof(*s));
    s->role = role;
    s->spec = spec;
    char detail[700];
    if (!spec || !*spec) {
        snprintf(detail, sizeof(detail), "?%s= names no twin group or run", role[0] == 'B' ? "base" : "changed");
        return effect_fail_set(f, 400, "missing argument", detail,
                               "e.g. /api/v1/compare?base=GROUP&changed=GROUP&noise=GROUP (groups or run ids, "
                               "comma-separated)");
    }
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", spec);
    char *save = NULL;
    for (char *part = strtok_r(buf, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        char err[512];
        const char *p[] = {part};
        PGresult *r = db_exec("eff_group", 1, p, err, sizeof(err));
        if (r && PQntuples(r) == 0 && store_uuid_valid(part)) {
            PQclear(r);
            r = db_exec("eff_run", 1, p, err, sizeof(err));
        }
        if (!r)
            return effect_fail_set(f, 503, "", err, "");
        if (PQntuples(r) == 0) {
            PQclear(r);
            snprintf(detail, sizeof(detail),
                     "%s names \"%.255s\": no twin group has runs of that name and no run has "
                     "that id",
                     role, part);
            return effect_fail_set(f, 404, "unknown twin group or run", detail,
                                   "list the groups and runs with GET /api/v1/runs (lockstep runs)");
        }
        int full = add_runs(s, r) < 0 || PQntuples(r) > EFFECT_MAX_SET;
        PQclear(r);
        if (full) {
            snprintf(detail, sizeof(detail), "%s names more than %d runs", role, EFFECT_MAX_SET);
            return effect_fail_set(f, 400, "too many runs", detail, "name fewer groups or runs");
        }
    }
    if (s->n == 0) {
        snprintf(detail, sizeof(detail), "%s is \"%.255s\", which names nothing", role, spec);
        return effect_fail_set(f, 400, "missing argument", detail, "name twin groups or run ids, comma-separated");
    }
    return 0;
}

/* ---- the first effect ---- */

/* cell_json - one run's record at the first effect, or null when it lacks it. */
static json_t *cell_json(const first_rec *c, const char *run_id)
{
    if (!c)
        return json_null();
    char fp[17], vb[17];
    snprintf(fp, sizeof(fp), "%016" PRIx64, c->rec.fp);
    json_t *o = json_pack("{s:s, s:I, s:s, s:I}", "run_id", run_id, "seq", (json_int_t)c->rec.seq, "fp", fp, "nbytes",
                          (json_int_t)c->rec.nbytes);
    if (c->rec.flags & REC_HAS_VALUE) {
        double v = dtype_value_to_double(c->rec.dtype, c->rec.value);
        snprintf(vb, sizeof(vb), "%016" PRIx64, c->rec.value);
        json_object_set_new(o, "value", isfinite(v) ? json_real(v) : json_null());
        json_object_set_new(o, "value_bits", json_string(vb));
    }
    return o;
}

/* first_json - the departure found by the rule at (rank, step) of records `r`, with its call site: the record's
 * as BASE holds it (CHANGED's when BASE lacks it), as the twin API gives a divergence's. */
static json_t *first_json(const first_div *fx, int rank, int64_t step, const char *base_id, const char *changed_id)
{
    const first_rec *b = fx->by_run[0], *c = fx->by_run[1], *any = b ? b : c;
    const char *kind = !b ? "extra" : !c ? "missing" : rec_diff_name(rec_compare(&b->rec, &c->rec));
    json_t *ulp = json_null();
    if (b && c && (b->rec.flags & REC_HAS_VALUE) && (c->rec.flags & REC_HAS_VALUE) && b->rec.dtype == c->rec.dtype &&
        b->rec.dtype != LS_BYTES) {
        uint64_t u = dtype_ulp_distance(b->rec.dtype, b->rec.value, c->rec.value);
        if (u != UINT64_MAX)
            ulp = json_integer((json_int_t)u);
    }
    json_t *o = json_pack("{s:s, s:I, s:i, s:s#, s:i, s:I, s:s, s:s, s:s, s:o, s:o, s:o}", "run_id", changed_id, "step",
                          (json_int_t)step, "rank", rank, "name", any->rec.name, (int)any->rec.name_len, "occurrence",
                          (int)any->rec.occurrence, "seq", (json_int_t)fx->seq, "level", level_name(any->rec.level),
                          "dtype", dtype_name(any->rec.dtype), "kind", kind, "base", cell_json(b, base_id), "changed",
                          cell_json(c, changed_id), "ulp", ulp);
    json_object_set_new(o, "site", first_json_site(&any->rec.site));
    return o;
}

/* inputs_of - what the two runs' input fingerprints of the departing record say (common/cause.h). */
static cause_inputs inputs_of(const first_div *fx)
{
    const uint64_t *lists[2];
    int counts[2];
    for (int k = 0; k < 2; k++) {
        const first_rec *c = fx->by_run[k];
        lists[k] = c ? c->rec.inputs : NULL;
        counts[k] = c ? c->rec.n_inputs : 0;
    }
    return cause_inputs_of(lists, counts, 2);
}

/* config_explains - whether the manifest diff of runs base and changed (common/json/mdiff.h) finds a
 * configuration difference that can change bits: 1 (its summary in *summary, a new reference), 0, or -1 with
 * the database's message in `f`. */
static int config_explains(int64_t base, int64_t changed, json_t **summary, effect_fail *f)
{
    *summary = NULL;
    char keys[64], err[512];
    snprintf(keys, sizeof(keys), "{%" PRId64 ",%" PRId64 "}", base, changed);
    const char *p[] = {keys};
    PGresult *runs = db_exec("eff_mruns", 1, p, err, sizeof(err));
    PGresult *man = runs ? db_exec("eff_manifests", 1, p, err, sizeof(err)) : NULL;
    if (!man) {
        PQclear(runs);
        return effect_fail_set(f, 503, "", err, "");
    }
    md_run rs[2];
    int n = findings_md_runs(runs, man, rs, 2);
    json_t *d = n == 2 ? md_diff(rs, 2) : NULL;
    for (int i = 0; i < n; i++)
        json_decref(rs[i].manifests);
    PQclear(runs);
    PQclear(man);
    int explains = json_is_true(json_object_get(d, "explains"));
    if (explains)
        *summary = json_incref(json_object_get(d, "summary"));
    json_decref(d);
    return explains;
}

/* judge_first - the cause rule (common/cause.h) over the ranks departing at the first step (`found`, one object
 * per rank, each first_json's): the departure that stands for them, with "cause", "cause_detail",
 * "origin_ranks", "thin_evidence", "configuration" and every departing rank in "ranks". Steals `found`'s
 * members' references into the result; NULL with why in `f`. */
static json_t *judge_first(json_t *found, const cause_rank *cr, int nranks, int64_t base, int64_t changed,
                           effect_fail *f)
{
    json_t *summary = NULL;
    int cfg = config_explains(base, changed, &summary, f);
    if (cfg < 0)
        return NULL;
    size_t n = json_array_size(found);
    cause_facts facts = {cr, n, nranks, cfg};
    cause_result cv;
    cause_judge(&facts, &cv);
    size_t at = cv.first ? (size_t)(cv.first - cr) : 0;
    json_t *o = json_incref(json_array_get(found, at)), *ranks = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(ranks, json_integer(cr[k].rank));
    first_json_judge(o, &cv, summary);
    json_decref(summary);
    json_object_set_new(o, "ranks", ranks);
    return o;
}

/* first_in - effect_first over steps lo..hi (one window): 1 with *out set when found, 0 when not, -1 with why
 * in `fail`. `nranks`: the ranks the two runs recorded (the cause rule's every-rank). */
static int first_in(int64_t base, const char *base_id, int64_t changed, const char *changed_id, int64_t lo, int64_t hi,
                    int nranks, json_t **out, effect_fail *fail)
{
    char a[24], b[24], f[32], t[32], err[512];
    snprintf(a, sizeof(a), "%" PRId64, base);
    snprintf(b, sizeof(b), "%" PRId64, changed);
    snprintf(f, sizeof(f), "%" PRId64, lo);
    snprintf(t, sizeof(t), "%" PRId64, hi);
    const char *p[] = {a, b, f, t};
    PGresult *d = db_exec("eff_diff", 4, p, err, sizeof(err));
    if (!d)
        return effect_fail_set(fail, 503, "", err, "");
    const int64_t keys[2] = {base, changed};
    json_t *found = json_array(); /* each departing rank's first_json at the first step */
    cause_rank *cr = xcalloc((size_t)PQntuples(d) + 1, sizeof(*cr));
    int64_t first_step = 0;
    int rc = 0;
    for (int i = 0; i < PQntuples(d) && rc == 0; i++) {
        int rank = atoi(PQgetvalue(d, i, 0));
        int64_t step = strtoll(PQgetvalue(d, i, 1), NULL, 10);
        if (json_array_size(found) && step != first_step)
            break; /* the other ranks that differ at the first step are listed; later steps are not needed */
        long long nrec = strtoll(PQgetvalue(d, i, 2), NULL, 10);
        if (nrec > COMPARE_STEP_RECORDS) { /* one step's records, whatever a job stored: bounded as the twin API's */
            char detail[300];
            snprintf(detail, sizeof(detail),
                     "step %" PRId64 " of rank %d holds %lld records in the two runs; the first effect's rule reads at "
                     "most %d",
                     step, rank, nrec, COMPARE_STEP_RECORDS);
            rc = effect_fail_set(fail, 413, "too many records in one step", detail,
                                 "compare the steps after it (?from=), or another rank (?rank=)");
            break;
        }
        /* The records of the step and rank in both runs, as lockstepd's comparison reads them: state blocks apart
         * (step digests leave them out), with their input fingerprints (the cause rule) and call sites. */
        frame_set set = {0};
        int got = frames_read_step(keys, 2, (uint32_t)rank, step, &set, err, sizeof(err));
        if (got < 0) {
            frame_set_release(&set);
            rc = effect_fail_read(fail, got, err);
            break;
        }
        int n = 0;
        first_rec *cs = xcalloc(set.n + 1, sizeof(*cs));
        for (size_t k = 0; k < set.n; k++)
            if (rec_in_steps(&set.recs[k]))
                cs[n++] = (first_rec){.run = set.run_key[k] == base ? 0 : 1, .rec = set.recs[k], .row = (int)k};
        first_div fx;
        first_find(cs, (size_t)n, 2, &fx);
        if (fx.found) { /* else: digests of an older version differ while every record matches */
            json_t *o = first_json(&fx, rank, step, base_id, changed_id);
            size_t at = json_array_size(found);
            json_array_append_new(found, o);
            const char *name = json_string_value(json_object_get(o, "name")); /* lives as long as `found` */
            cr[at] = (cause_rank){.rank = rank,
                                  .step = step,
                                  .seq = fx.seq,
                                  .name = name,
                                  .name_len = strlen(name),
                                  .occurrence = (uint32_t)json_integer_value(json_object_get(o, "occurrence")),
                                  .missing = fx.missing,
                                  .inputs = fx.missing ? CAUSE_IN_UNKNOWN : inputs_of(&fx)};
            first_step = step;
        }
        free(cs);
        frame_set_release(&set);
    }
    PQclear(d);
    json_t *first = NULL;
    if (rc == 0 && json_array_size(found)) {
        first = judge_first(found, cr, nranks, base, changed, fail);
        if (!first)
            rc = -1;
    }
    json_decref(found);
    free(cr);
    if (rc)
        return -1;
    *out = first;
    return first != NULL;
}

int effect_first(int64_t base, const char *base_id, int64_t changed, const char *changed_id, int64_t from, int64_t to,
                 json_t **out, effect_fail *f)
{
    *out = json_null();
    /* The steps either run holds, cut to from..to; searched in windows that double, so that an early effect (the
     * usual case) reads a few thousand digests, not every one. */
    char keys[64], err[512];
    snprintf(keys, sizeof(keys), "{%" PRId64 ",%" PRId64 "}", base, changed);
    const char *p[] = {keys};
    PGresult *r = db_exec("eff_span", 1, p, err, sizeof(err));
    if (!r)
        return effect_fail_set(f, 503, "", err, "");
    int none = PQgetisnull(r, 0, 0);
    int64_t lo = none ? 0 : strtoll(PQgetvalue(r, 0, 0), NULL, 10),
            hi = none ? -1 : strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    int nranks = atoi(PQgetvalue(r, 0, 2));
    PQclear(r);
    lo = lo > from ? lo : from;
    hi = hi < to ? hi : to;
    for (int64_t w = 512, at = lo; at <= hi; w = w < ((int64_t)1 << 40) ? w * 2 : w) {
        int64_t end = hi - at < w - 1 ? hi : at + w - 1;
        json_t *fe = NULL;
        int got = first_in(base, base_id, changed, changed_id, at, end, nranks, &fe, f);
        if (got < 0)
            return -1;
        if (got) {
            *out = fe;
            return 0;
        }
        if (end == hi)
            break;
        at = end + 1;
    }
    return 0;
}

int effect_base_departs(const effect_set *base, effect_base *out, effect_fail *f)
{
    memset(out, 0, sizeof(*out));
    if (base->n < 2)
        return 0;
    /* BASE is exactly one twin group: lockstepd compares it as records arrive; its findings (status and first
     * divergence, server/twins/findings.h) says. */
    int one_group = !strcmp(base->spec, base->groups[0]);
    for (int i = 1; i < base->n && one_group; i++)
        one_group = !strcmp(base->groups[i], base->groups[0]);
    if (one_group) {
        char err[512];
        grp_findings v;
        int got = findings_load(base->groups[0], &v, err, sizeof(err));
        if (got < 0)
            return effect_fail_set(f, 503, "", err, "");
        if (got > 0) {
            out->status = v.status; /* a constant of twin_status */
            snprintf(out->status_why, sizeof(out->status_why), "%s", v.status_why);
            if (json_is_object(v.first))
                out->first = json_incref(v.first);
        }
        findings_release(&v);
        return 0;
    }
    for (int j = 1; j < base->n && !out->first; j++) {
        json_t *fe;
        if (effect_first(base->keys[0], base->ids[0], base->keys[j], base->ids[j], INT64_MIN, INT64_MAX, &fe, f) < 0)
            return -1;
        if (json_is_object(fe))
            out->first = fe;
        else
            json_decref(fe);
    }
    return 0;
}
