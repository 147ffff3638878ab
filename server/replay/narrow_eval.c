/* narrow_eval.c - the running replay experiments evaluated: placements decided as their replays record the window, the
 * verdict, its history and alert (server/replay/narrow_eval.h). */
#include "server/replay/narrow_eval.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "server/rules/replay.h"
#include "server/replay/replay_cmp.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/alerts/alerts.h"
#include "server/replay/narrow_int.h"
#include "server/replay/narrow_read.h"
#include "server/replay/verdict_alert.h"
#include "server/store/db.h"
#include "server/store/sql.h"

/* One run of the group, as the evaluation needs it. */
typedef struct orig {
    char key[32], id[40], job[64], nodes[512], probe[512], gpus[512];
    long long start;
    int content, odd;
} orig;

/* One placement. */
typedef struct plc {
    int idx;
    char role[64], nodes[512], job[80], run_key[32], outcome[16], probe[512], gpus[512], source_key[32];
    char detail[1200];
    int content; /* -1 none */
    int decided, changed;
    long long start;
} plc;

/* An experiment being evaluated. */
typedef struct nexp {
    long long id;
    char ids[32], group[300], ngroup[300];
    long long step, from, to;
    int late; /* the deadline passed */
    json_t *design;
    orig o[RP_MAX_RUNS];
    int no;
    plc p[RP_MAX_PLACEMENTS];
    int np;
    int origin[RC_MAX_ORIGIN], norigin;
    int nclasses; /* content classes known (the group's, then new ones) */
} nexp;

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* load - the experiment's row, the group's runs and its placements. Returns 0, -1 on a database error. */
static int load(nexp *x, char *err, size_t cap)
{
    const char *p[] = {x->ids};
    PGresult *r = db_exec_once("neval_narrow", 1, p, err, cap);
    if (!r)
        return -1;
    if (!PQntuples(r)) {
        PQclear(r);
        return 1; /* finished meanwhile */
    }
    snprintf(x->group, sizeof(x->group), "%s", PQgetvalue(r, 0, 0));
    snprintf(x->ngroup, sizeof(x->ngroup), "%s", PQgetvalue(r, 0, 1));
    x->step = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    x->from = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
    x->to = strtoll(PQgetvalue(r, 0, 4), NULL, 10);
    x->design = json_loads(PQgetvalue(r, 0, 5), 0, NULL);
    x->late = PQgetvalue(r, 0, 6)[0] == 't';
    PQclear(r);
    if (!x->design)
        x->design = json_object();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(x->design, "origin_ranks"), i, v) if (x->norigin < RC_MAX_ORIGIN)
        x->origin[x->norigin++] = (int)json_integer_value(v);
    x->nclasses = (int)json_array_size(json_object_get(x->design, "contents"));

    const char *pg[] = {x->group};
    r = db_exec_once("neval_runs", 1, pg, err, cap);
    if (!r)
        return -1;
    json_array_foreach(json_object_get(x->design, "runs"), i, v)
    {
        if (x->no >= RP_MAX_RUNS)
            break;
        orig *o = &x->o[x->no];
        memset(o, 0, sizeof(*o));
        snprintf(o->id, sizeof(o->id), "%s", jstr(v, "run_id"));
        for (int k = 0; k < PQntuples(r); k++)
            if (!strcmp(PQgetvalue(r, k, 1), o->id)) {
                snprintf(o->key, sizeof(o->key), "%s", PQgetvalue(r, k, 0));
                o->start = strtoll(PQgetvalue(r, k, 4), NULL, 10);
            }
        if (!o->key[0])
            continue; /* a run gone since (retention): not an execution any more */
        snprintf(o->job, sizeof(o->job), "%s", jstr(v, "job_id"));
        snprintf(o->nodes, sizeof(o->nodes), "%s", jstr(v, "nodes"));
        snprintf(o->probe, sizeof(o->probe), "%s", jstr(v, "probe_nodes"));
        snprintf(o->gpus, sizeof(o->gpus), "%s", jstr(v, "gpus"));
        o->content = (int)json_integer_value(json_object_get(v, "content"));
        o->odd = json_is_true(json_object_get(v, "odd"));
        x->no++;
    }
    PQclear(r);

    r = db_exec_once("neval_placements", 1, p, err, cap);
    if (!r)
        return -1;
    for (int k = 0; k < PQntuples(r) && x->np < RP_MAX_PLACEMENTS; k++) {
        plc *c = &x->p[x->np++];
        memset(c, 0, sizeof(*c));
        c->idx = atoi(PQgetvalue(r, k, 0));
        snprintf(c->role, sizeof(c->role), "%s", PQgetvalue(r, k, 1));
        snprintf(c->nodes, sizeof(c->nodes), "%s", PQgetvalue(r, k, 2));
        snprintf(c->job, sizeof(c->job), "%s", PQgetvalue(r, k, 3));
        snprintf(c->run_key, sizeof(c->run_key), "%s", PQgetvalue(r, k, 4));
        snprintf(c->outcome, sizeof(c->outcome), "%s", PQgetvalue(r, k, 5));
        c->content = atoi(PQgetvalue(r, k, 6));
        snprintf(c->probe, sizeof(c->probe), "%s", PQgetvalue(r, k, 7));
        snprintf(c->detail, sizeof(c->detail), "%s", PQgetvalue(r, k, 8));
        snprintf(c->source_key, sizeof(c->source_key), "%s", PQgetvalue(r, k, 9));
        c->start = strtoll(PQgetvalue(r, k, 10), NULL, 10);
        c->decided = c->outcome[0] != 0;
        if (c->content >= x->nclasses)
            x->nclasses = c->content + 1;
    }
    PQclear(r);
    return 0;
}

static char letter(int c)
{
    return (char)('A' + (c < 0 ? 0 : c % 26));
}

/* describe - what a comparison found, for people. */
static void describe(const rc_result *rc, char *out, size_t cap)
{
    const rc_rec *f = &rc->first;
    snprintf(out, cap, "step %" PRId64 ", rank %d, \"%s\" occurrence %u (cause %s)", f->step, f->rank, f->name,
             f->occurrence, cause_name(rc->cause));
}

/* resume_check - a placement that resumed from a checkpoint (its run `key`, start c->start): its restored state
 * block at the checkpoint's step against the block the run it replays (c->source_key) saved there, on the origin
 * ranks. Returns 1 when they differ (why in `note`: the placement did not replay what it should), 0 when not (a
 * note on what was or could not be verified, starting "; ", or ""), -1 on a database error. */
static int resume_check(const nexp *x, const plc *c, const char *key, char *note, size_t ncap, char *err, size_t cap)
{
    note[0] = 0;
    if (c->start <= 0 || !c->source_key[0])
        return 0; /* it ran from the start: nothing was loaded */
    char ranks[400];
    db_int_array_text(x->origin, x->norigin, ranks, sizeof(ranks));
    rc_resume rs;
    long long step = c->start - 1;
    if (rc_resume_check(strtoll(key, NULL, 10), strtoll(c->source_key, NULL, 10), step, x->norigin ? ranks : NULL, &rs,
                        err, cap) < 0)
        return -1;
    if (rs.differs) {
        snprintf(note, ncap,
                 "resumed from state that is not what the run it replays saved at step %lld: on rank %d, entry %s "
                 "(occurrence %u) %s%s%s; it loaded another checkpoint, so its result does not count",
                 step, rs.rank, rs.name[0] ? rs.name : "?", rs.occurrence, rs.status, rs.diff ? " in " : "",
                 rs.diff ? rs.diff : "");
        return 1;
    }
    if (rs.checked && !rs.not_restored && !rs.not_saved)
        snprintf(note, ncap, "; its restored state at step %lld is what the run it replays saved there", step);
    else if (rs.checked)
        snprintf(note, ncap,
                 "; its restored state at step %lld is what the run it replays saved there on %d rank%s (%d without a "
                 "restored block, %d without a saved one)",
                 step, rs.checked, rs.checked == 1 ? "" : "s", rs.not_restored, rs.not_saved);
    else
        snprintf(note, ncap,
                 "; the checkpoint it loaded is not verified: %s at step %lld (programs record them with "
                 "ls_state_begin)",
                 rs.not_restored ? "it recorded no restored state block"
                 : rs.not_saved  ? "the run it replays saved no state block"
                                 : "neither it nor the run it replays recorded a state block",
                 step);
    return 0;
}

/* settings_check - whether placement `c`'s replay run `key` recorded as the run it replays did (its ignore and step
 * rules, its trace: narrow_settings_check). Returns 1 with why not in `note`, 0 when it did, -1 on a database
 * error. */
static int settings_check(const nexp *x, const plc *c, const char *key, char *note, size_t ncap, char *err, size_t cap)
{
    char ix[16];
    snprintf(ix, sizeof(ix), "%d", c->idx);
    const char *p[] = {x->ids, ix};
    PGresult *r = db_exec_once("neval_settings", 2, p, err, cap);
    if (!r)
        return -1;
    json_t *settings = PQntuples(r) ? json_loads(PQgetvalue(r, 0, 0), 0, NULL) : NULL;
    PQclear(r);
    int got = narrow_settings_check(key, settings, note, ncap);
    json_decref(settings);
    if (got < 0)
        snprintf(err, cap, "cannot read the manifest of replay run %s", key);
    return got;
}

/* What a placement's replay run shows: its newest run in the narrow group, and how far it got. */
typedef struct replay_row {
    char key[32], status[16], exits[200]; /* exits: its ranks' nonzero exit codes, ','-separated */
    int ranks, reporting;                 /* ranks it has, ranks that reported progress */
    long long start, reached;             /* its start step; the step its slowest rank reached (-1 none) */
    int recorded, ended;                  /* it recorded the whole window; it ended (or a rank failed) */
} replay_row;

/* find_replay - the run placement `c`'s job registered in the narrow group, into `rr`. Returns 1; 0 when it
 * registered none (then, past the deadline, the placement is decided timed-out); -1 on a database error. */
static int find_replay(nexp *x, plc *c, replay_row *rr, char *err, size_t cap)
{
    const char *pj[] = {x->ngroup, c->job};
    PGresult *r = db_exec_once("neval_replay", 2, pj, err, cap);
    if (!r)
        return -1;
    if (!PQntuples(r)) {
        PQclear(r);
        if (x->late) {
            snprintf(c->outcome, sizeof(c->outcome), "timed-out");
            snprintf(c->detail, sizeof(c->detail),
                     "job %s registered no run in group %s before the deadline: it did not start (queued, or refused "
                     "by Slurm), or started without the Lockstep plugin",
                     c->job, x->ngroup);
            c->decided = c->changed = 1;
        }
        return 0;
    }
    snprintf(rr->key, sizeof(rr->key), "%s", PQgetvalue(r, 0, 0));
    snprintf(rr->status, sizeof(rr->status), "%s", PQgetvalue(r, 0, 1));
    snprintf(rr->exits, sizeof(rr->exits), "%s", PQgetvalue(r, 0, 6));
    rr->ranks = atoi(PQgetvalue(r, 0, 2));
    rr->reporting = atoi(PQgetvalue(r, 0, 4));
    rr->start = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
    rr->reached = PQgetisnull(r, 0, 5) ? -1 : strtoll(PQgetvalue(r, 0, 5), NULL, 10);
    PQclear(r);
    rr->recorded = rr->reporting >= rr->ranks && rr->reached >= x->to;
    rr->ended = strcmp(rr->status, "running") != 0 || rr->exits[0];
    return 1;
}

/* Which result a replay produced. */
typedef struct replay_seen {
    int content;    /* its content class, -1 when none is known */
    int common_any; /* it shares a record of the window with a run of the group */
    int have_diff;  /* it differs from a run of the group; first_diff is the earliest such difference */
    rc_result first_diff;
    char seen_as[700]; /* how it was recognised, for people */
} replay_seen;

/* replay_content - which result replay run `key` of placement `c` produced over steps lo..x->to: against the
 * group's runs first, then the replays with new results; else a new content class when it differs from them.
 * 0, or -1 on a database error. */
static int replay_content(nexp *x, const plc *c, const char *key, long long lo, replay_seen *s, char *err, size_t cap)
{
    memset(s, 0, sizeof(*s));
    s->content = -1;
    for (int i = 0; i < x->no && s->content < 0; i++) {
        rc_result rc;
        long long l2 = lo > x->o[i].start ? lo : x->o[i].start;
        if (rc_compare(strtoll(key, NULL, 10), strtoll(x->o[i].key, NULL, 10), l2, x->to, NULL, &rc, err, cap) < 0)
            return -1;
        s->common_any |= rc.common > 0;
        if (rc.common > 0 && !rc.differs) {
            s->content = x->o[i].content;
            snprintf(s->seen_as, sizeof(s->seen_as), "matches the run of job %s%s (result %c)", x->o[i].job,
                     x->o[i].odd ? ", the odd one" : "", letter(s->content));
        } else if (rc.differs && (!s->have_diff || rc.first.step < s->first_diff.first.step)) {
            s->first_diff = rc;
            s->have_diff = 1;
        }
    }
    for (int k = 0; k < x->np && s->content < 0; k++) {
        const plc *q = &x->p[k];
        int known = 0;
        for (int i = 0; i < x->no; i++)
            known |= x->o[i].content == q->content;
        if (q == c || strcmp(q->outcome, "ran") || known || !q->run_key[0])
            continue;
        rc_result rc;
        long long l2 = lo > q->start ? lo : q->start;
        if (rc_compare(strtoll(key, NULL, 10), strtoll(q->run_key, NULL, 10), l2, x->to, NULL, &rc, err, cap) < 0)
            return -1;
        if (rc.common > 0 && !rc.differs) {
            s->content = q->content;
            snprintf(s->seen_as, sizeof(s->seen_as),
                     "differs from every run of the group, as placement %d (%s) does (result %c)", q->idx, q->role,
                     letter(s->content));
        }
    }
    if (s->content < 0 && s->have_diff) {
        s->content = x->nclasses++;
        char d[300];
        describe(&s->first_diff, d, sizeof(d));
        snprintf(s->seen_as, sizeof(s->seen_as), "differs from every run of the group (result %c), first at %.400s",
                 letter(s->content), d);
    }
    return 0;
}

/* settle_placement - placement `c`'s outcome from its replay run `rr` and the result it produced `s` (over
 * steps lo..x->to): ran (unless it resumed from other state than the run it replays saved: failed), failed or
 * timed-out, with the detail. 0, or -1 on a database error. */
static int settle_placement(nexp *x, plc *c, const replay_row *rr, const replay_seen *s, long long lo, char *err,
                            size_t cap)
{
    if (s->content >= 0 && (rr->recorded || (s->have_diff && s->first_diff.first.step <= rr->reached))) {
        char resumed[600] = "";
        int bad = resume_check(x, c, rr->key, resumed, sizeof(resumed), err, cap);
        if (bad < 0)
            return -1;
        if (bad) { /* it did not start from the state the run it replays saved: its result says nothing */
            snprintf(c->outcome, sizeof(c->outcome), "failed");
            snprintf(c->detail, sizeof(c->detail), "job %s %s", c->job, resumed);
            c->decided = c->changed = 1;
            return 0;
        }
        char other[900];
        bad = settings_check(x, c, rr->key, other, sizeof(other), err, cap);
        if (bad < 0)
            return -1;
        if (bad) { /* it recorded another set of records than the run it replays: a difference may be only that */
            snprintf(c->outcome, sizeof(c->outcome), "failed");
            snprintf(c->detail, sizeof(c->detail),
                     "job %s recorded differently from the run it replays (%s), so its result does not count", c->job,
                     other);
            c->decided = c->changed = 1;
            return 0;
        }
        snprintf(c->outcome, sizeof(c->outcome), "ran");
        c->content = s->content;
        snprintf(c->detail, sizeof(c->detail), "job %s %s%s%s", c->job, s->seen_as,
                 rr->recorded ? "" : "; it ended before the window's end, after the difference", resumed);
        if (narrow_probe(rr->key, x->origin, x->norigin, c->nodes, c->probe, sizeof(c->probe), c->gpus, sizeof(c->gpus),
                         err, cap) < 0)
            return -1;
    } else if (rr->recorded) {
        snprintf(c->outcome, sizeof(c->outcome), "failed");
        snprintf(c->detail, sizeof(c->detail),
                 "job %s recorded steps %lld-%lld but shares no record with the group's runs there (another program, "
                 "or records the runs did not make)",
                 c->job, lo, x->to);
    } else if (rr->ended) {
        snprintf(c->outcome, sizeof(c->outcome), "failed");
        snprintf(c->detail, sizeof(c->detail),
                 "job %s ended (%s%s) having recorded up to step %lld on its slowest rank (%d of %d ranks reported), "
                 "before the window's end at step %lld%s",
                 c->job, rr->exits[0] ? "exit codes " : "status ", rr->exits[0] ? rr->exits : rr->status, rr->reached,
                 rr->reporting, rr->ranks, x->to,
                 !s->common_any ? "; it shares no record of the window with the group's runs" : "");
    } else {
        snprintf(c->outcome, sizeof(c->outcome), "timed-out");
        snprintf(c->detail, sizeof(c->detail),
                 "job %s had recorded up to step %lld on its slowest rank (%d of %d ranks reported) when the deadline "
                 "passed; the window ends at step %lld",
                 c->job, rr->reached, rr->reporting, rr->ranks, x->to);
    }
    c->decided = c->changed = 1;
    return 0;
}

/* decide - the placement's outcome, when its replay has recorded the window (or ended, or the deadline passed).
 * Returns 0 (decided or still pending), -1 on a database error. */
static int decide_one(nexp *x, plc *c, char *err, size_t cap)
{
    if (!c->job[0]) {
        if (x->late) {
            snprintf(c->outcome, sizeof(c->outcome), "not-run");
            snprintf(c->detail, sizeof(c->detail),
                     "no Slurm job was reported for it before the deadline (the lockstep "
                     "command that started the narrow stopped?)");
            c->decided = c->changed = 1;
        }
        return 0;
    }
    replay_row rr;
    int found = find_replay(x, c, &rr, err, cap);
    if (found <= 0)
        return found;
    if (strcmp(c->run_key, rr.key)) {
        snprintf(c->run_key, sizeof(c->run_key), "%s", rr.key);
        c->changed = 1;
    }
    if (!rr.recorded && !rr.ended && !x->late)
        return 0;
    long long lo = x->from > rr.start ? x->from : rr.start;
    replay_seen s;
    if (replay_content(x, c, rr.key, lo, &s, err, cap) < 0)
        return -1;
    return settle_placement(x, c, &rr, &s, lo, err, cap);
}

static rp_outcome outcome_of(const char *o)
{
    if (!strcmp(o, "ran"))
        return RP_RAN;
    if (!strcmp(o, "failed"))
        return RP_FAILED;
    if (!strcmp(o, "timed-out"))
        return RP_TIMED_OUT;
    return RP_NOT_RUN;
}

/* split - a ','-separated list into pointers into `buf` (modified). Returns how many. */
static int split(char *buf, const char **out, int max)
{
    int n = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        out[n++] = t;
    return n;
}

/* record_json - the record a narrow names, from a comparison of a diverging replay with another. */
static json_t *record_json(const rc_result *rc, const char *replay_run, const char *ref_run)
{
    const rc_rec *f = rc->has_clean ? &rc->clean : &rc->first;
    char fa[17], fb[17];
    snprintf(fa, sizeof(fa), "%016" PRIx64, f->fp_a);
    snprintf(fb, sizeof(fb), "%016" PRIx64, f->fp_b);
    static const char *const levels[] = {"metric", "collective", "module", "op"};
    json_t *o = json_pack("{s:I, s:i, s:s, s:i, s:s, s:s, s:s, s:b, s:s, s:s, s:s, s:s}", "step", (json_int_t)f->step,
                          "rank", f->rank, "name", f->name, "occurrence", (int)f->occurrence, "level",
                          f->level >= 0 && f->level < 4 ? levels[f->level] : "?", "dtype",
                          dtype_name((unsigned)f->dtype), "inputs",
                          f->inputs == 1   ? "matched"
                          : f->inputs == 2 ? "differed"
                                           : "none recorded",
                          "output_differs_while_inputs_matched", rc->has_clean, "replay_run_id", replay_run,
                          "reference_run_id", ref_run, "fp", fa, "reference_fp", fb);
    if (f->has_value) {
        char va[17], vb[17];
        snprintf(va, sizeof(va), "%016" PRIx64, f->value_a);
        snprintf(vb, sizeof(vb), "%016" PRIx64, f->value_b);
        json_object_set_new(o, "value_bits", json_string(va));
        json_object_set_new(o, "reference_value_bits", json_string(vb));
        json_object_set_new(o, "value", json_real(dtype_value_to_double((unsigned)f->dtype, f->value_a)));
        json_object_set_new(o, "reference_value", json_real(dtype_value_to_double((unsigned)f->dtype, f->value_b)));
    }
    return o;
}

/* run_id_of - the run id of run key `key`, into `out`. */
static int run_id_of(const char *key, char *out, size_t ocap, char *err, size_t cap)
{
    const char *p[] = {key};
    PGresult *r = db_exec_once("neval_run_id", 1, p, err, cap);
    if (!r)
        return -1;
    snprintf(out, ocap, "%s", PQntuples(r) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return 0;
}

/* How many steps before the window a software verdict's comparison may look back for where two runs of a
 * nondeterministic program began to differ (their collectives are traced at every step; the window's finer trace
 * only inside it). */
#define NAME_LOOKBACK 64

/* A replay and a reference it is compared with to name the record: another replay (ri >= 0) or a run of the
 * group (oi >= 0). */
typedef struct npair {
    int pi, ri, oi;
} npair;

/* pair_ref - the run key of pair `p`'s reference. */
static const char *pair_ref(const nexp *x, const npair *p)
{
    return p->ri >= 0 ? x->p[p->ri].run_key : x->o[p->oi].key;
}

/* name_pairs - the pairs name_record may compare, most telling first: a replay that diverged (else one that ran)
 * against a replay with another result, of the same job first; for a software verdict, then against a run of the
 * group with another result, the replayed one first. Only the first pair, unless `all` (every replay that ran).
 * Returns how many, at most `max`. */
static int name_pairs(const nexp *x, const rp_verdict *v, int base, int all, npair *out, int max)
{
    int order[RP_MAX_PLACEMENTS], n = 0, np = 0;
    for (int k = 0; k < x->np; k++)
        if (v->diverged[base + k] == 1)
            order[n++] = k;
    for (int k = 0; k < x->np; k++)
        if (v->diverged[base + k] != 1 && !strcmp(x->p[k].outcome, "ran"))
            order[n++] = k;
    for (int a = 0; a < n && (all || a == 0); a++) {
        const plc *pp = &x->p[order[a]];
        int first = np;
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < x->np && np < max; k++)
                if (k != order[a] && !strcmp(x->p[k].outcome, "ran") && x->p[k].content != pp->content &&
                    !strcmp(x->p[k].source_key, pp->source_key) == !pass)
                    out[np++] = (npair){order[a], k, -1};
        for (int pass = 0; pass < 2 && (all || np == first) && !strcmp(v->verdict, "software"); pass++)
            for (int i = 0; i < x->no && np < max; i++)
                if (x->o[i].content != pp->content && !strcmp(x->o[i].key, pp->source_key) == !pass)
                    out[np++] = (npair){order[a], -1, i};
        if (!all && np > first + 1)
            np = first + 1;
    }
    return np;
}

/* name_record - the first record whose output differs while its inputs matched, between a replay that diverged
 * and one that did not (or that produced another result), inside the window on the origin ranks; for a software
 * verdict whose replays all produced the same result (a nondeterministic program can repeat itself twice), between a
 * replay and a run of the group with another result, over the records they share. A software verdict tries every
 * such pair, then the NAME_LOOKBACK steps before the window: two runs of a nondeterministic program can part before
 * the window, and the record where they part is the one to name, not the window's first record that follows from
 * it. Otherwise the first difference of the first pair. json null when no two such runs differ (a one-off that no
 * replay reproduced names none). */
static json_t *name_record(nexp *x, const rp_verdict *v, int base, char *err, size_t cap, int *failed)
{
    int software = !strcmp(v->verdict, "software");
    npair pr[2 * RP_MAX_PLACEMENTS + 2 * RP_MAX_RUNS];
    int n = name_pairs(x, v, base, software, pr, (int)(sizeof(pr) / sizeof(pr[0])));
    char ranks[400];
    db_int_array_text(x->origin, x->norigin, ranks, sizeof(ranks));
    long long lo = x->step - (x->to - x->step);
    rc_result best, rc;
    int have = -1; /* the pair of `best` */
    for (int widen = 0; widen < 1 + software && (have < 0 || !best.has_clean); widen++)
        for (int k = 0; k < n && (have < 0 || !best.has_clean); k++) {
            long long from = widen ? lo - NAME_LOOKBACK : lo, s1 = x->p[pr[k].pi].start;
            long long s2 = pr[k].ri >= 0 ? x->p[pr[k].ri].start : x->o[pr[k].oi].start;
            from = from > s1 ? from : s1;
            from = from > s2 ? from : s2;
            if (from < 0)
                from = 0;
            if (rc_compare(strtoll(x->p[pr[k].pi].run_key, NULL, 10), strtoll(pair_ref(x, &pr[k]), NULL, 10), from,
                           x->to, x->norigin ? ranks : NULL, &rc, err, cap) < 0) {
                if (widen) /* too many records to look back over: the window's answer stands */
                    continue;
                *failed = 1;
                return NULL;
            }
            if (rc.differs && (have < 0 || (rc.has_clean && !best.has_clean))) {
                best = rc;
                have = k;
            }
        }
    if (have < 0)
        return json_null();
    const char *ref_key = pair_ref(x, &pr[have]);
    char a[40], b[40];
    if (run_id_of(x->p[pr[have].pi].run_key, a, sizeof(a), err, cap) < 0 ||
        run_id_of(ref_key, b, sizeof(b), err, cap) < 0) {
        *failed = 1;
        return NULL;
    }
    return record_json(&best, a, b);
}

/* history - the verdict in the history of each node concerned. */
static int history(nexp *x, const rp_verdict *v, char *err, size_t cap)
{
    char nodes[2048] = "", buf[600];
    if (v->node[0])
        snprintf(nodes, sizeof(nodes), "%s", v->node);
    for (int i = 0; i < x->no; i++)
        if (v->diverged[i] == 1 && x->o[i].probe[0]) {
            size_t l = strlen(nodes);
            snprintf(nodes + l, sizeof(nodes) - l, "%s%s", l ? "," : "", x->o[i].probe);
        }
    const char *list[64];
    int n = split(nodes, list, 64);
    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= !strcmp(list[i], list[j]);
        if (dup)
            continue;
        snprintf(buf, sizeof(buf), "%s", list[i]);
        int named = !strcmp(v->node, list[i]);
        char detail[2400];
        snprintf(detail, sizeof(detail), "replay verdict %s%s%s of group %s (narrow %lld, replays in group %s): %s",
                 v->verdict, named ? " naming this node" : "", named && v->gpu[0] ? " and its GPU" : "", x->group,
                 x->id, x->ngroup, v->reason);
        const char *pn[] = {buf};
        const char *ph[] = {buf, named && v->gpu[0] ? v->gpu : NULL, x->group, detail};
        if (db_do("neval_node_seen", 1, pn, err, cap) < 0 || db_do("neval_history_add", 4, ph, err, cap) < 0)
            return -1;
    }
    return 0;
}

/* The facts a verdict is judged on: every execution (the group's runs, then the placements) and the design's
 * notes, with the text they borrow. */
typedef struct jfacts {
    rp_exec e[RP_MAX_EXEC];
    char bufs[RP_MAX_EXEC][512], gbufs[RP_MAX_EXEC][512], labels[RP_MAX_EXEC][200];
    int n;
    char notes[RP_MAX_NOTES][320];
    int nnotes;
} jfacts;

/* split_gpus - execution `e`'s GPU list `gbuf` (','-separated, one entry per probe node, empty entries kept)
 * into e->gpu, "" where none is known. */
static void split_gpus(rp_exec *e, char *gbuf)
{
    char *gp[RP_MAX_PROBE];
    int g = 0;
    char *s = gbuf;
    for (; g < e->nprobe; g++) {
        gp[g] = s;
        char *comma = strchr(s, ',');
        if (!comma) {
            g++;
            break;
        }
        *comma = 0;
        s = comma + 1;
    }
    for (int k = 0; k < e->nprobe; k++)
        e->gpu[k] = k < g ? gp[k] : "";
}

/* executions_of - every execution of `x` into `j`: the group's runs (originals), then the placements, each with
 * its label, outcome, content and the nodes (and GPUs) that ran the origin ranks. 0, or -1 on a database error. */
static int executions_of(nexp *x, jfacts *j, char *err, size_t cap)
{
    int n = 0;
    memset(j->e, 0, sizeof(j->e));
    for (int i = 0; i < x->no; i++, n++) {
        snprintf(j->bufs[n], sizeof(j->bufs[n]), "%s", x->o[i].probe);
        snprintf(j->gbufs[n], sizeof(j->gbufs[n]), "%s", x->o[i].gpus);
        snprintf(j->labels[n], sizeof(j->labels[n]), "the %srun of job %s on %s", x->o[i].odd ? "odd " : "",
                 x->o[i].job, x->o[i].probe[0] ? x->o[i].probe : x->o[i].nodes);
        j->e[n].original = 1;
        j->e[n].label = j->labels[n];
        j->e[n].outcome = RP_RAN;
        j->e[n].content = x->o[i].content;
    }
    for (int k = 0; k < x->np; k++, n++) {
        plc *c = &x->p[k];
        /* A placement decided in an earlier pass comes back from narrow_placements with its nodes but not its GPUs
         * (the table keeps no GPU column): probe its manifests again, or the verdict names no GPU. */
        if (!c->changed && !strcmp(c->outcome, "ran") && c->run_key[0] &&
            narrow_probe(c->run_key, x->origin, x->norigin, c->nodes, c->probe, sizeof(c->probe), c->gpus,
                         sizeof(c->gpus), err, cap) < 0)
            return -1;
        snprintf(j->bufs[n], sizeof(j->bufs[n]), "%s", c->probe[0] ? c->probe : c->nodes);
        snprintf(j->gbufs[n], sizeof(j->gbufs[n]), "%s", c->gpus);
        snprintf(j->labels[n], sizeof(j->labels[n]), "%s on %s%s%s%s", c->role, c->probe[0] ? c->probe : c->nodes,
                 c->job[0] ? " (job " : "", c->job, c->job[0] ? ")" : "");
        j->e[n].label = j->labels[n];
        j->e[n].outcome = outcome_of(c->outcome);
        j->e[n].content = c->content;
    }
    for (int i = 0; i < n; i++) {
        j->e[i].nprobe = split(j->bufs[i], j->e[i].probe, RP_MAX_PROBE);
        /* the GPU list keeps empty entries: split it by hand */
        split_gpus(&j->e[i], j->gbufs[i]);
    }
    j->n = n;
    return 0;
}

/* facts_of - the facts rp_judge weighs, from the executions in `j` and the design `d` (its cause, majority and
 * notes, copied into `j`). */
static rp_facts facts_of(json_t *d, jfacts *j)
{
    const char *cause = jstr(d, "cause");
    int software = !strcmp(cause, "configuration") || !strcmp(cause, "every-rank") || !strcmp(cause, "operation");
    json_t *mj = json_object_get(d, "majority_content");
    size_t i;
    json_t *v;
    j->nnotes = 0;
    json_array_foreach(json_object_get(d, "notes"), i, v) if (j->nnotes < RP_MAX_NOTES)
        snprintf(j->notes[j->nnotes++], sizeof(j->notes[0]), "%s", json_string_value(v) ? json_string_value(v) : "");
    return (rp_facts){
        cause, jstr(d, "cause_detail"),      software, json_is_integer(mj) ? (int)json_integer_value(mj) : -1, j->e,
        j->n,  (const char(*)[320])j->notes, j->nnotes};
}

/* store_verdict - the narrow done with verdict `vd`: the design again with each run's judgement, the reasoning,
 * `record` (the record the finer trace names, or null), and each placement's judgement. 0, or -1 on a database
 * error. */
static int store_verdict(nexp *x, const rp_verdict *vd, json_t *record, char *err, size_t cap)
{
    json_t *d = x->design;
    json_t *runs = json_object_get(d, "runs");
    for (int k = 0; k < x->no && k < (int)json_array_size(runs); k++)
        json_object_set_new(json_array_get(runs, (size_t)k), "diverged",
                            vd->diverged[k] < 0 ? json_null() : json_boolean(vd->diverged[k]));
    json_object_set_new(d, "healthy_content", vd->healthy >= 0 ? json_integer(vd->healthy) : json_null());
    json_t *steps = json_array();
    for (int k = 0; k < vd->nsteps; k++)
        json_array_append_new(steps, json_string(vd->steps[k]));
    char *design_txt = json_dumps(d, JSON_COMPACT), *steps_txt = json_dumps(steps, JSON_COMPACT),
         *record_txt = json_is_null(record) ? NULL : json_dumps(record, JSON_COMPACT);
    json_decref(steps);
    const char *pu[] = {
        x->ids,     vd->verdict, vd->node[0] ? vd->node : NULL, vd->gpu[0] ? vd->gpu : NULL, vd->reason, steps_txt,
        record_txt, design_txt};
    int rc = db_do("neval_done", 8, pu, err, cap);
    free(design_txt);
    free(steps_txt);
    free(record_txt);
    for (int k = 0; k < x->np && rc == 0; k++) {
        char ix[16];
        snprintf(ix, sizeof(ix), "%d", x->p[k].idx);
        const char *dv = vd->diverged[x->no + k] < 0 ? NULL : vd->diverged[x->no + k] ? "true" : "false";
        const char *pp[] = {x->ids, ix, dv};
        rc = db_do("neval_diverged", 3, pp, err, cap);
    }
    return rc;
}

/* follow_up - the verdict's history on the node and its follow-up alert (server/replay/verdict_alert.h). 0, or
 * -1 with `err`. */
static int follow_up(nexp *x, const rp_verdict *vd, char *err, size_t cap)
{
    int rc = history(x, vd, err, cap);
    if (rc == 0) {
        int st;
        srv_error se;
        json_t *doc = narrow_json(x->id, &st, &se);
        if (!doc) {
            snprintf(err, cap, "%.100s: %.300s", se.error, se.detail);
            rc = -1;
        } else {
            rc = verdict_alert_enqueue(doc, err, cap);
            json_decref(doc);
        }
    }
    return rc;
}

/* judge - every placement decided: the verdict, stored with its record, history and alert. */
static int judge(nexp *x, char *err, size_t cap)
{
    jfacts *j = xcalloc(1, sizeof(*j));
    if (executions_of(x, j, err, cap) < 0) {
        free(j);
        return -1;
    }
    rp_facts f = facts_of(x->design, j);
    rp_verdict vd;
    rp_judge(&f, &vd);
    free(j);

    int failed = 0;
    json_t *record = name_record(x, &vd, x->no, err, cap, &failed);
    if (failed)
        return -1;
    int rc = store_verdict(x, &vd, record, err, cap);
    if (rc == 0)
        rc = follow_up(x, &vd, err, cap);
    json_decref(record);
    if (rc == 0)
        log_info("narrow %lld of group %s: %s%s%s: %s", x->id, x->group, vd.verdict, vd.node[0] ? " on " : "", vd.node,
                 vd.reason);
    return rc;
}

/* evaluate - one running experiment. Returns 1 finished, 0 not yet, -1 on a database error. */
static int evaluate(long long id, void (*wake)(const char *group))
{
    char err[512];
    nexp *x = xcalloc(1, sizeof(*x));
    x->id = id;
    snprintf(x->ids, sizeof(x->ids), "%lld", id);
    int rc = -1, finished = 0;
    if (sql_begin(err, sizeof(err)) < 0)
        goto out_log;
    int got = load(x, err, sizeof(err));
    if (got != 0) {
        rc = got > 0 ? 0 : -1;
        goto out_rollback;
    }
    int all = 1;
    for (int k = 0; k < x->np; k++) {
        plc *c = &x->p[k];
        if (!c->decided && decide_one(x, c, err, sizeof(err)) < 0)
            goto out_rollback;
        all &= c->decided;
        if (!c->changed)
            continue;
        char ix[16], content[16];
        snprintf(ix, sizeof(ix), "%d", c->idx);
        snprintf(content, sizeof(content), "%d", c->content);
        const char *pp[] = {x->ids,
                            ix,
                            c->run_key[0] ? c->run_key : NULL,
                            c->decided ? c->outcome : NULL,
                            c->decided && !strcmp(c->outcome, "ran") ? content : NULL,
                            c->probe,
                            c->detail};
        if (db_do("neval_placement_outcome", 7, pp, err, sizeof(err)) < 0)
            goto out_rollback;
    }
    if (all) {
        if (judge(x, err, sizeof(err)) < 0)
            goto out_rollback;
        finished = 1;
    }
    if (sql_commit(err, sizeof(err)) < 0)
        goto out_log;
    rc = finished;
    if (finished) {
        wake(x->group);
        wake(x->ngroup);
        alert_notify();
    }
    goto out_free;
out_rollback:
    sql_rollback();
out_log:
    if (rc < 0)
        log_warn("narrow %lld: cannot evaluate: %s (hint: retried on the next pass)", id, err);
out_free:
    json_decref(x->design);
    free(x);
    return rc;
}

int narrow_pass(int *running, void (*wake)(const char *group))
{
    char err[512];
    *running = 0;
    PGresult *r = db_exec_once("neval_running", 0, NULL, err, sizeof(err));
    if (!r) {
        log_warn("narrow: cannot list the running experiments: %s (hint: retried on the next pass)", err);
        return -1;
    }
    int done = 0, failed = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int got = evaluate(strtoll(PQgetvalue(r, i, 0), NULL, 10), wake);
        if (got < 0)
            failed = 1;
        else
            done += got;
        if (got <= 0)
            (*running)++;
    }
    PQclear(r);
    return failed ? -1 : done;
}

void narrow_eval_register(void)
{
    db_register("neval_settings",
                "SELECT settings::text FROM narrow_placements WHERE narrow_id = $1::bigint AND idx = $2::int");
    db_register("neval_narrow",
                "SELECT twin_group, narrow_group, step, from_step, to_step, design::text, now() > deadline_at "
                "FROM narrows WHERE id = $1::bigint AND state = 'running'");
    db_register("neval_runs",
                "SELECT run_key::text, run_id::text, job_id, nodes, start_step FROM runs WHERE twin_group = $1");
    db_register("neval_placements",
                "SELECT idx, role, nodes, coalesce(job_id, ''), coalesce(run_key::text, ''), coalesce(outcome, ''), "
                "coalesce(content, -1), probe_nodes, detail, source_run_key::text, coalesce(resume_step + 1, -1) "
                "FROM narrow_placements WHERE narrow_id = $1::bigint ORDER BY idx");
    db_register("neval_replay",
                "SELECT run_key::text, status, ranks, start_step, (SELECT count(*) FROM rank_progress p WHERE "
                "p.run_key = r.run_key), (SELECT min(max_step) FROM rank_progress p WHERE p.run_key = "
                "r.run_key), (SELECT string_agg(exit_code::text, ',' ORDER BY rank) FROM rank_ends e WHERE "
                "e.run_key = r.run_key AND exit_code <> 0) FROM runs r WHERE twin_group = $1 AND job_id = $2 "
                "ORDER BY run_key DESC LIMIT 1");
    db_register("neval_run_id", "SELECT run_id::text FROM runs WHERE run_key = $1::bigint");
    db_register("neval_node_seen", "INSERT INTO hw_nodes (name) VALUES ($1) ON CONFLICT (name) DO NOTHING");
    db_register("neval_history_add",
                "INSERT INTO hw_history (node, gpu, kind, twin_group, detail) VALUES ($1, $2, 'verdict', $3, $4)");
    db_register("neval_done",
                "UPDATE narrows SET state = 'done', verdict = $2, node = $3, gpu = $4, reason = $5, reasoning = "
                "$6::jsonb, record = $7::jsonb, design = $8::jsonb, finished_at = now() WHERE id = $1::bigint");
    db_register("neval_diverged",
                "UPDATE narrow_placements SET diverged = $3::boolean WHERE narrow_id = $1::bigint AND idx = $2::int");
    db_register("neval_placement_outcome",
                "UPDATE narrow_placements SET run_key = $3::bigint, outcome = $4, content = $5::int, probe_nodes = "
                "$6, detail = $7, decided_at = CASE WHEN $4::text IS NULL THEN NULL ELSE now() END "
                "WHERE narrow_id = $1::bigint AND idx = $2::int");
    db_register("neval_running", "SELECT id FROM narrows WHERE state = 'running' ORDER BY id LIMIT 100");
}
