/* suspects.c - evidence from twin divergences: the hardware that ran each diverging rank, hardware vs software, the
 * suspects thread. */
#include "server/fleet/suspects.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json/node_of.h"
#include "common/text.h"
#include "server/core/log.h"
#include "server/core/state.h"
#include "server/twins/findings.h"
#include "server/core/xalloc.h"
#include "server/fleet/divergence_alert.h"
#include "server/fleet/evidence.h"
#include "server/fleet/suspects_int.h"
#include "server/replay/narrow_read.h"
#include "server/fleet/rescore.h"
#include "server/store/db.h"
#include "server/store/frames.h"
#include "server/rules/group_rule.h"
#include "server/rules/hw_rule.h"
#include "server/store/sql.h"

#define MAX_ORIGIN 16

/* The run entries of an origin rank's first divergence (borrowed from the group's findings). */
typedef struct origin_entries {
    const div_entry *e;
    int n;
} origin_entries;

/* content_key - what run `run_id` holds for the divergence of `oe` (server/twins/divergence.h's key), or "unknown"
 * when it has no entry there. */
static void content_key(const origin_entries *oe, const char *run_id, char *out, size_t cap)
{
    const div_entry *e = div_entry_of(oe->e, oe->n, run_id);
    if (e)
        div_content_key(e, out, cap);
    else
        snprintf(out, cap, "unknown");
}

/* is_minority - whether run `run_id` is outside the majority of the divergence of `oe`. */
static int is_minority(const origin_entries *oe, const char *run_id)
{
    const div_entry *e = div_entry_of(oe->e, oe->n, run_id);
    return e && e->majority == DIV_MAJORITY_OUT;
}

static void add_implicated(grp_class *v, const char *node)
{
    if (!node || !*node)
        return;
    size_t l = strlen(node), n = strlen(v->implicated);
    for (const char *p = v->implicated; *p;) {
        const char *e = strchr(p, ',');
        size_t pl = e ? (size_t)(e - p) : strlen(p);
        if (pl == l && !strncmp(p, node, l))
            return;
        p += pl + (e ? 1 : 0);
    }
    if (n + l + 2 < sizeof(v->implicated))
        snprintf(v->implicated + n, sizeof(v->implicated) - n, "%s%s", n ? "," : "", node);
}

/* same_hardware - on the origin ranks: add the nodes of the runs that diverged to v->implicated (the minority's when
 * `strong`, else every run's), and note in `h` when two runs that differ ran the rank on the same hardware. */
static void same_hardware(const grp *g, const origin_entries *entries, const int *origin, int norigin, int strong,
                          grp_class *v, hw_facts *h)
{
    char ka[128], kb[128];
    for (int o = 0; o < norigin; o++) {
        for (int a = 0; a < g->nruns; a++) {
            const hw_slot *sa = group_slot(g, a, origin[o]);
            int implicated = strong ? is_minority(&entries[o], g->runs[a].id) : 1;
            if (implicated)
                add_implicated(v, sa->node);
            content_key(&entries[o], g->runs[a].id, ka, sizeof(ka));
            for (int b = a + 1; b < g->nruns && !h->same_hw; b++) {
                const hw_slot *sb = group_slot(g, b, origin[o]);
                content_key(&entries[o], g->runs[b].id, kb, sizeof(kb));
                if (!strcmp(ka, kb))
                    continue;
                if (sa->node && sb->node && !strcmp(sa->node, sb->node) &&
                    (!*sa->gpu || !*sb->gpu || !strcmp(sa->gpu, sb->gpu))) {
                    h->same_hw = 1;
                    h->same_hw_rank = origin[o];
                    h->same_hw_node = sa->node;
                    h->same_hw_gpu = sa->gpu;
                }
            }
        }
    }
}

/* classify_spread - does record `name` diverge, over the software window, in other groups of the program on
 * more unrelated nodes than one fault explains (software_spread)? Then classify as software and append the
 * other groups not yet classified so to `requeue`. 1 when it classified, 0 when not, -1 with `err`. */
static int classify_spread(const grp *g, const char *name, grp_class *v, char (*requeue)[256], int cap, int *nrequeue,
                           char *err, size_t ecap)
{
    char win[32];
    snprintf(win, sizeof(win), "%d days", g_srv.cfg.software_window_days);
    const char *p[] = {name, g->name, win, g->program};
    PGresult *r = db_exec_once("sus_spread", 4, p, err, ecap);
    if (!r)
        return -1;
    int n = PQntuples(r);
    const char **sets = xcalloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++)
        sets[i] = PQgetvalue(r, i, 1);
    sets[n] = v->implicated;
    int cover = ev_cover_size(sets, n + 1);
    free(sets);
    if (cover < g_srv.cfg.software_spread) {
        PQclear(r);
        return 0;
    }
    v->cls = "software";
    v->code = "spread";
    snprintf(v->reason, sizeof(v->reason),
             "record %s diverged in %d groups that need %d different nodes to explain (software_spread = %d)", name,
             n + 1, cover, g_srv.cfg.software_spread);
    for (int i = 0; i < n; i++)
        if (strcmp(PQgetvalue(r, i, 2), "spread") && *nrequeue < cap)
            snprintf(requeue[(*nrequeue)++], 256, "%s", PQgetvalue(r, i, 0));
    PQclear(r);
    return 1;
}

/* classify - the rules of docs/suspects.md (server/rules/hw_rule.h) on the group's findings and, on the origin ranks
 * only, the hardware that ran them; then, where the rule would give hardware evidence, the spread over unrelated
 * nodes (it needs the fleet's history); else hardware, with strong (minority of 3+) or weak (pair) weights set on
 * the runs. */
static int classify(grp *g, const grp_findings *vd, const origin_entries *entries, const int *origin, int norigin,
                    const char *name, grp_class *v, char (*requeue)[256], int cap, int *nrequeue, char *err,
                    size_t ecap)
{
    /* Which runs diverged on the origin ranks, and whether a majority names them. */
    int strong = g->nruns >= 3;
    for (int o = 0; o < norigin; o++)
        if (!div_has_majority(entries[o].e, entries[o].n))
            strong = 0;
    hw_facts h = {.cause = vd->cause,
                  .local = vd->local,
                  .root_input = vd->root_input,
                  .nranks = vd->nranks,
                  .cause_why = vd->cause_why,
                  .config_summary = json_string_value(json_object_get(vd->mdiff, "summary")),
                  .origin_rank = norigin ? origin[0] : 0,
                  .strong = strong,
                  .group = g->name};
    same_hardware(g, entries, origin, norigin, strong, v, &h);
    h.attested = v->implicated[0] != 0;
    h.implicated = v->implicated;
    hw_verdict hv;
    hw_judge(&h, &hv);
    if (hw_is_evidence(&hv)) {
        /* Spread: does one record diverge on more unrelated nodes than one fault explains? */
        int spread = classify_spread(g, name, v, requeue, cap, nrequeue, err, ecap);
        if (spread != 0)
            return spread < 0 ? -1 : 0;
    }
    v->cls = hv.cls;
    v->code = hv.code;
    snprintf(v->reason, sizeof(v->reason), "%s", hv.reason);
    for (int a = 0; a < g->nruns; a++) {
        int hit = 0;
        for (int o = 0; o < norigin; o++)
            hit |= strong ? is_minority(&entries[o], g->runs[a].id) : 1;
        g->runs[a].weight = hw_is_evidence(&hv) && hit ? (strong ? 1.0 : g_srv.cfg.weak_weight) : 0.0;
    }
    return 0;
}

static void fail_log(const char *what, const char *group, const char *err)
{
    log_warn("suspects: cannot %s group %s: %s (hint: retried on the next pass)", what, group, err);
}

/* An exposure row: hardware `node`/`gpu` ran part of run `run` with `weight`. */
typedef struct expo {
    int run;
    const char *node, *gpu, *gpu_name;
    int rank; /* an origin rank when weight > 0 */
    double weight;
} expo;

static int add_expo(expo *x, int n, int run, const hw_slot *s, int rank, double w)
{
    for (int i = 0; i < n; i++)
        if (x[i].run == run && !strcmp(x[i].node, s->node) && !strcmp(x[i].gpu, s->gpu)) {
            if (w > x[i].weight) {
                x[i].weight = w;
                x[i].rank = rank;
            }
            return n;
        }
    x[n] = (expo){run, s->node, s->gpu ? s->gpu : "", s->gpu_name, rank, w};
    return n + 1;
}

/* write_exposures - replace the group's exposures (none unless `exposed`: a group whose runs failed tells
 * nothing); history for each involvement that appeared, grew or went away, saying `why` (the classification's
 * reason, or the replay verdict's when the weights follow one). */
static int write_exposures(grp *g, const grp_class *v, const char *why, const int *origin, int norigin, int exposed,
                           const char *step, char *err, size_t cap)
{
    const char *p1[] = {g->name};
    PGresult *old = db_exec_once("sus_exposures", 1, p1, err, cap);
    if (!old)
        return -1;
    int rc = -1;
    const char *since = NULL;
    for (int i = 0; i < PQntuples(old); i++)
        if (!since || strcmp(PQgetvalue(old, i, 4), since) < 0)
            since = PQgetvalue(old, i, 4);
    expo *x = xcalloc((size_t)g->nruns * (size_t)g->nranks + 1, sizeof(expo));
    int n = 0;
    for (int a = 0; a < g->nruns && exposed; a++)
        for (int k = 0; k < g->nranks; k++) {
            const hw_slot *s = group_slot(g, a, k);
            if (!s->node || !*s->node)
                continue;
            int is_origin = 0;
            for (int o = 0; o < norigin; o++)
                is_origin |= origin[o] == k;
            n = add_expo(x, n, a, s, k, is_origin ? g->runs[a].weight : 0.0);
        }
    if (db_do("sus_exposures_clear", 1, p1, err, cap) < 0)
        goto out_free;
    for (int i = 0; i < n; i++) {
        char w[32], rank[16];
        snprintf(w, sizeof(w), "%g", x[i].weight);
        snprintf(rank, sizeof(rank), "%d", x[i].rank);
        const char *pn[] = {x[i].node};
        const char *pg[] = {x[i].gpu, x[i].node, x[i].gpu_name ? x[i].gpu_name : ""};
        const char *pe[] = {g->name, g->runs[x[i].run].key, x[i].node, x[i].gpu, w, since};
        if (db_do("sus_node_seen", 1, pn, err, cap) < 0)
            goto out_free;
        if (*x[i].gpu) {
            /* A GPU stays on the node it was first seen on: a run's report cannot move a GPU (and its
             * blame) to another node. One seen elsewhere counts only as its node here. */
            PGresult *gr = db_exec_once("sus_gpu_seen", 3, pg, err, cap);
            if (!gr)
                goto out_free;
            if (PQntuples(gr) == 0)
                pe[3] = x[i].gpu = "";
            PQclear(gr);
        }
        if (db_do("sus_exposure_add", 6, pe, err, cap) < 0)
            goto out_free;
        double before = 0;
        for (int j = 0; j < PQntuples(old); j++)
            if (!strcmp(PQgetvalue(old, j, 0), g->runs[x[i].run].key) && !strcmp(PQgetvalue(old, j, 1), x[i].node) &&
                !strcmp(PQgetvalue(old, j, 2), x[i].gpu))
                before = atof(PQgetvalue(old, j, 3));
        if (x[i].weight > 0 && x[i].weight != before) {
            char detail[1200]; /* `why`, cut to what detail holds */
            snprintf(detail, sizeof(detail), "%.*s", (int)sizeof(detail) - 1, why);
            const char *ph[] = {
                x[i].node, *x[i].gpu ? x[i].gpu : NULL, "involvement", g->name, g->runs[x[i].run].key, step, rank, w,
                detail};
            if (db_do("sus_history_involved", 9, ph, err, cap) < 0)
                goto out_free;
        }
    }
    /* involvements that went away */
    for (int j = 0; j < PQntuples(old); j++) {
        double before = atof(PQgetvalue(old, j, 3));
        if (before <= 0)
            continue;
        int still = 0;
        for (int i = 0; i < n && !still; i++)
            still = x[i].weight > 0 && !strcmp(PQgetvalue(old, j, 0), g->runs[x[i].run].key) &&
                    !strcmp(PQgetvalue(old, j, 1), x[i].node) && !strcmp(PQgetvalue(old, j, 2), x[i].gpu);
        if (still)
            continue;
        char detail[1200]; /* cut to what it holds: `why` to what is left beside the words around it */
        snprintf(detail, sizeof(detail), "re-evaluated as %s: %.*s", v->cls,
                 (int)(sizeof(detail) - sizeof("re-evaluated as : ")), why);
        const char *gpu = *PQgetvalue(old, j, 2) ? PQgetvalue(old, j, 2) : NULL;
        const char *ph[] = {PQgetvalue(old, j, 1), gpu, "withdrawn", g->name, PQgetvalue(old, j, 0), "0", detail};
        if (db_do("sus_history_cleared", 7, ph, err, cap) < 0)
            goto out_free;
    }
    rc = 0;
out_free:
    free(x);
    PQclear(old);
    return rc;
}

/* The manifests of the group's ranks, each cut to the keys the node rule reads (common/json/node_of.h). */
#define Q_MANIFESTS                                                                                                    \
    "SELECT m.run_key::text, m.rank, CASE WHEN jsonb_typeof(m.manifest) = 'object' THEN (SELECT "                      \
    "jsonb_object_agg(e.k, e.v) FROM jsonb_each(m.manifest) AS e(k, v) WHERE e.k = ANY('" NODE_OF_KEYS_SQL             \
    "'::text[]))::text END FROM manifests m JOIN runs r USING (run_key) WHERE r.twin_group = $1 AND m.rank "           \
    "< " GROUP_MAX_RANKS_TEXT

/* on_node - 1 when run `a` ran one of the origin ranks on `node`. */
static int on_node(const grp *g, int a, const int *origin, int norigin, const char *node)
{
    for (int o = 0; o < norigin; o++) {
        const hw_slot *s = group_slot(g, a, origin[o]);
        if (s->node && !strcmp(s->node, node))
            return 1;
    }
    return 0;
}

/* apply_replay - a replay verdict (server/replay/narrow.h) decides the group's evidence, beside the classification
 * (which stays what the rules above concluded, and what the twin API and the divergence alert say): software
 * withdraws the weights, persistent-hardware makes them strong on the node the replays named (and clears the
 * other runs), transient-hardware leaves the node a weaker share (replay_transient_weight). Writes why into
 * `why` and returns 1 when it decided the weights; an inconclusive verdict changes nothing (returns 0). */
static int apply_replay(grp *g, const narrow_verdict *nv, const int *origin, int norigin, char *why, size_t cap)
{
    int persistent = !strcmp(nv->verdict, "persistent-hardware"),
        transient = !strcmp(nv->verdict, "transient-hardware");
    if (!persistent && !transient && strcmp(nv->verdict, "software"))
        return 0;
    if (!persistent && !transient) {
        for (int a = 0; a < g->nruns; a++)
            g->runs[a].weight = 0;
        snprintf(why, cap, "replay verdict software (narrow %lld), no evidence against any node: %.900s", nv->id,
                 nv->reason);
        return 1;
    }
    for (int a = 0; a < g->nruns; a++)
        g->runs[a].weight =
            on_node(g, a, origin, norigin, nv->node) ? (persistent ? 1.0 : g_srv.cfg.replay_transient_weight) : 0.0;
    snprintf(why, cap, "replay verdict %s on %.100s (narrow %lld; %s evidence): %.800s", nv->verdict, nv->node, nv->id,
             persistent ? "strong" : "weaker", nv->reason);
    return 1;
}

/* replay_group - the evidence of a narrow's replay group, once its experiment has a verdict: every replay that ran
 * is an exposure of its nodes; under persistent-hardware, each replay that reproduced the divergence on the named
 * node is strong evidence against it. Software and inconclusive verdicts give none. */
static int replay_group(grp *g, const narrow_verdict *nv, grp_class *v, int *exposed, char *err, size_t cap)
{
    int persistent = !strcmp(nv->verdict, "persistent-hardware");
    *exposed = persistent || !strcmp(nv->verdict, "transient-hardware");
    v->code = "replay";
    v->cls = persistent ? "hardware" : *exposed ? "none" : !strcmp(nv->verdict, "software") ? "software" : "none";
    for (int a = 0; a < g->nruns; a++) {
        int d = narrow_replay_diverged(nv->id, g->runs[a].key, err, cap);
        if (d < -1)
            return -1;
        g->runs[a].weight = persistent && d == 1 && on_node(g, a, nv->origin, nv->norigin, nv->node) ? 1.0 : 0.0;
    }
    if (persistent)
        add_implicated(v, nv->node);
    snprintf(v->reason, sizeof(v->reason), "replays of group %.200s (narrow %lld), verdict %s%s%.100s: %.600s",
             nv->group, nv->id, nv->verdict, nv->node[0] ? " on " : "", nv->node, nv->reason);
    return 0;
}

/* What slurmstepd attested: per run of the group, each node and the global ranks it ran. */
#define Q_ATTESTED                                                                                                     \
    "SELECT r.run_key::text, a.node, a.ranks::text, a.nodes FROM runs r JOIN attestations a ON a.job_id = r.job_id "   \
    "AND a.step_id = r.step_id WHERE r.twin_group = $1 ORDER BY r.run_key, a.node"

/* place_ranks - which hardware ran each rank of each run, as far as it counts (common/json/node_of.h): slurmstepd's
 * attested node (a manifest that names another host takes the rank's evidence away: the job's word and Slurm's
 * disagree), or with trust_reported_hosts the manifest's own host (or the run's single node). A rank no one
 * attested counts for nothing: no unattested run can make a node suspect. The manifests `man` (run key, rank, the
 * node rule's keys) are parsed into docs[] (the caller's, one per row, released by it), which the slots borrow. */
static void place_ranks(grp *g, PGresult *man, PGresult *att, json_t **docs)
{
    size_t cells = (size_t)g->nruns * (size_t)g->nranks;
    const char **attested = xcalloc(cells + 1, sizeof(char *));
    json_t **of = xcalloc(cells + 1, sizeof(json_t *)); /* [run * nranks + rank]: its manifest, borrowed */
    for (int i = 0; i < PQntuples(att); i++) {
        int64_t ranks[ATTEST_MAX_RANKS];
        int n = db_int_array_parse(PQgetvalue(att, i, 2), ranks, ATTEST_MAX_RANKS);
        for (int a = 0; a < g->nruns; a++) {
            if (strcmp(g->runs[a].key, PQgetvalue(att, i, 0)))
                continue;
            for (int k = 0; k < n; k++)
                if (ranks[k] >= 0 && ranks[k] < g->nranks)
                    attested[(size_t)a * g->nranks + ranks[k]] = PQgetvalue(att, i, 1);
        }
    }
    for (int i = 0; i < PQntuples(man); i++) {
        int rk = atoi(PQgetvalue(man, i, 1));
        docs[i] = PQgetisnull(man, i, 2) ? NULL : json_loads(PQgetvalue(man, i, 2), 0, NULL);
        for (int a = 0; a < g->nruns && rk >= 0 && rk < g->nranks; a++)
            if (!strcmp(g->runs[a].key, PQgetvalue(man, i, 0)))
                of[(size_t)a * g->nranks + rk] = docs[i];
    }
    for (int a = 0; a < g->nruns; a++) {
        for (int k = 0; k < g->nranks; k++) {
            size_t c = (size_t)a * g->nranks + k;
            node_facts f = {attested[c], g_srv.cfg.trust_reported_hosts, g->runs[a].nodes};
            node_place p;
            node_of_rank(of[c], &f, &p);
            g->runs[a].ranks[k] = (hw_slot){p.node, p.gpu, p.gpu_name, p.reported, attested[c] != NULL};
        }
    }
    free(attested);
    free(of);
}

/* evaluation - one evaluation of a group: what it read in the transaction's snapshot, and the evidence it comes
 * to. The results and the group's runs are owned (evaluation_free). */
typedef struct evaluation {
    const char *group;
    grp *g;
    PGresult *sig, *runs, *man, *att;
    json_t **docs;   /* the manifests parsed, one per row of man (place_ranks), which the slots borrow */
    grp_findings vd; /* the group's findings: status, cause and origin ranks of its first divergence */
    int ndivs;       /* ranks that diverged (0 once a replay group's narrow speaks for it) */
    char step[32], rank0[16];
    origin_entries entries[MAX_ORIGIN]; /* per origin rank, its runs' entries of the first divergence (vd's) */
    int origin[MAX_ORIGIN], norigin;
    const char *origin_name;
    int replays, noise, exposed;
    grp_class v;
    char why[1400], evidence_narrow[32]; /* the weights' reason, and the narrow whose verdict set them */
} evaluation;

/* evaluation_read - read the group's signature, runs, manifests, attestations and findings into `ev`. Returns 1,
 * 0 when the group was evaluated already at this signature (nothing changed), or -1 with `err`. */
static int evaluation_read(evaluation *ev, char *err, size_t cap)
{
    const char *p1[] = {ev->group};
    grp *g = ev->g;
    ev->sig = db_exec_once("sus_signature", 1, p1, err, cap);
    if (!ev->sig)
        return -1;
    if (!PQgetisnull(ev->sig, 0, 1) && !strcmp(PQgetvalue(ev->sig, 0, 0), PQgetvalue(ev->sig, 0, 1)))
        return 0; /* evaluated already, nothing changed */
    ev->runs = db_exec_once("sus_runs", 1, p1, err, cap);
    ev->man = ev->runs ? db_exec_once("sus_manifests", 1, p1, err, cap) : NULL;
    ev->att = ev->man ? db_exec_once("sus_attested", 1, p1, err, cap) : NULL;
    /* The group's findings, in this transaction's snapshot: status, cause and origin ranks of its first
     * divergence (the same findings the twin API shows). */
    if (!ev->att || findings_load(ev->group, &ev->vd, err, cap) < 0)
        return -1;
    g->nruns = PQntuples(ev->runs) < GROUP_MAX_RUNS ? PQntuples(ev->runs) : GROUP_MAX_RUNS;
    g->program = g->nruns ? PQgetvalue(ev->runs, 0, 6) : "";
    ev->ndivs = strcmp(ev->vd.status, "diverged") ? 0 : (int)json_array_size(ev->vd.per_rank);
    if (ev->ndivs) {
        snprintf(ev->step, sizeof(ev->step), "%lld", (long long)ev->vd.first_div->step);
        snprintf(ev->rank0, sizeof(ev->rank0), "%d", ev->vd.first_rank);
    }
    return 1;
}

/* evaluation_ready - whether the group is ready to evaluate: 1 yes; 0 not yet (fewer than two runs, or no
 * divergence while a run is still running and no failure explains a difference); 2 diverged but not settled
 * (ask again soon); -1 with `err`. */
static int evaluation_ready(const evaluation *ev, char *err, size_t cap)
{
    const grp *g = ev->g;
    /* A group whose runs failed is incomplete even with a record some run lacks (the failure cut it short):
     * no divergence to weigh, no alert. */
    int all_ended = 1;
    for (int a = 0; a < g->nruns; a++)
        all_ended &= strcmp(PQgetvalue(ev->runs, a, 5), "running") != 0;
    /* An incomplete group with a first difference (a failure explains it) is decided too, even while the
     * launcher's killed ranks never report: an alert raised when it looked diverged must say so. */
    int explained = ev->vd.first_div && !strcmp(ev->vd.status, "incomplete");
    if (g->nruns < 2 || (!ev->ndivs && !all_ended && !explained))
        return 0; /* not ready: compared only once it diverged, a failure explains its difference, or every run ended */
    if (!ev->ndivs)
        return 1;
    /* Settled? Every rank compared past the first divergence's step (so a
     * rank whose divergence at that step comes first in the program has
     * been seen), or the divergence is 30 s old. Until then: not ready.
     * (Also when every run has ended: their last ranks may still wait in
     * the comparison queue.) */
    const char *ps[] = {ev->group, ev->step};
    PGresult *s = db_exec_once("sus_settled", 2, ps, err, cap);
    if (!s)
        return -1;
    int settled = PQgetvalue(s, 0, 0)[0] == 't';
    PQclear(s);
    return settled ? 1 : 2;
}

/* group_hardware - which hardware ran each rank of each run of the group, from the manifests and the attestations
 * `ev` read (rows of Q_MANIFESTS and Q_ATTESTED) of its runs: sets g->nranks and each run's slots (owned by the
 * run; place_ranks). */
static void group_hardware(evaluation *ev)
{
    grp *g = ev->g;
    PGresult *runs = ev->runs, *man = ev->man, *att = ev->att;
    for (int i = 0; i < PQntuples(man); i++) {
        int rk = atoi(PQgetvalue(man, i, 1));
        if (rk >= 0 && rk < GROUP_MAX_RANKS && rk + 1 > g->nranks)
            g->nranks = rk + 1;
    }
    for (int i = 0; i < PQntuples(att); i++) {
        int64_t ranks[ATTEST_MAX_RANKS];
        int n = db_int_array_parse(PQgetvalue(att, i, 2), ranks, ATTEST_MAX_RANKS);
        for (int k = 0; k < n; k++)
            if (ranks[k] >= 0 && ranks[k] < GROUP_MAX_RANKS && ranks[k] + 1 > g->nranks)
                g->nranks = (int)ranks[k] + 1;
    }
    for (int a = 0; a < g->nruns; a++) {
        grp_run *r = &g->runs[a];
        r->key = PQgetvalue(runs, a, 0);
        r->id = PQgetvalue(runs, a, 1);
        r->nodes = PQgetvalue(runs, a, 2);
        r->user = PQgetvalue(runs, a, 3);
        r->job = PQgetvalue(runs, a, 4);
        r->ranks = xcalloc((size_t)g->nranks + 1, sizeof(hw_slot));
    }
    ev->docs = xcalloc((size_t)PQntuples(man) + 1, sizeof(json_t *));
    place_ranks(g, man, att, ev->docs);
}

/* decide_diverged - the evidence of a diverged group: classify its first divergence on its origin ranks (the
 * ranks where the change began, not those that received it through a collective), then let the latest replay
 * verdict of its narrows decide the weights. 0, or -1 with `err`. */
static int decide_diverged(evaluation *ev, char (*requeue)[256], int cap, int *nrequeue, char *err, size_t ecap)
{
    const grp_findings *vd = &ev->vd;
    for (int o = 0; o < vd->norigin && ev->norigin < MAX_ORIGIN; o++) {
        for (int i = 0; i < vd->ndivs; i++)
            if (vd->divs[i].rank == vd->origin[o]) {
                ev->origin[ev->norigin] = vd->origin[o];
                ev->entries[ev->norigin++] = (origin_entries){vd->divs[i].entries, vd->divs[i].nentries};
                break;
            }
    }
    if (classify(ev->g, vd, ev->entries, ev->origin, ev->norigin, ev->origin_name, &ev->v, requeue, cap, nrequeue, err,
                 ecap) < 0)
        return -1;
    narrow_verdict nv;
    int has = narrow_latest(ev->group, &nv, err, ecap);
    if (has < 0)
        return -1;
    if (has && apply_replay(ev->g, &nv, ev->origin, ev->norigin, ev->why, sizeof(ev->why)))
        snprintf(ev->evidence_narrow, sizeof(ev->evidence_narrow), "%lld", nv.id);
    return 0;
}

/* evaluation_decide - the group's evidence into ev->v, ev->why and its exposure. A narrow's replay group: the
 * experiment's, once it has a verdict (it raises no alert of its own: the experiment's follow-up alert speaks
 * for it); noise replicas: none; a diverged group: decide_diverged; else what its status says. Returns 1, 0 when
 * a replay group's experiment has no verdict yet, or -1 with `err`. */
static int evaluation_decide(evaluation *ev, char (*requeue)[256], int cap, int *nrequeue, char *err, size_t ecap)
{
    narrow_verdict nv;
    ev->origin_name = ev->ndivs ? ev->vd.first_div->name : NULL;
    ev->replays = narrow_of_group(ev->group, &nv, err, ecap);
    ev->noise = group_kind_of(ev->group) == GROUP_NOISE;
    if (ev->replays < 0)
        return -1;
    if (ev->replays) {
        if (!nv.done)
            return 0;
        for (int o = 0; o < nv.norigin && ev->norigin < MAX_ORIGIN; o++)
            ev->origin[ev->norigin++] = nv.origin[o];
        if (replay_group(ev->g, &nv, &ev->v, &ev->exposed, err, ecap) < 0)
            return -1;
        snprintf(ev->evidence_narrow, sizeof(ev->evidence_narrow), "%lld", nv.id);
        snprintf(ev->why, sizeof(ev->why), "%s", ev->v.reason);
        ev->ndivs = 0;
        snprintf(ev->step, sizeof(ev->step), "%lld", (long long)nv.step);
        ev->origin_name = NULL;
    } else if (ev->ndivs && ev->noise) {
        /* Runs declared nondeterministic differ by design: their divergence says nothing of their hardware. */
        ev->v.cls = "software";
        ev->v.code = "nondeterministic";
        snprintf(ev->v.reason, sizeof(ev->v.reason),
                 "its runs are declared nondeterministic (noise replicas, %s: lockstep twin --noise), so their "
                 "differences are expected and no evidence",
                 ev->group);
    } else if (ev->ndivs) {
        if (decide_diverged(ev, requeue, cap, nrequeue, err, ecap) < 0)
            return -1;
    } else if (strcmp(ev->vd.status, "match")) {
        /* Runs that failed or recorded nothing in common tell nothing about their hardware. */
        ev->v.code = "incomplete";
        ev->exposed = 0;
        snprintf(ev->v.reason, sizeof(ev->v.reason), "%s", ev->vd.status_why);
    } else {
        snprintf(ev->v.reason, sizeof(ev->v.reason), "the %d runs matched on every step they share", ev->g->nruns);
    }
    if (ev->noise)
        ev->exposed = 0; /* noise replicas tell nothing of their hardware, whether they matched or not */
    if (!*ev->evidence_narrow)
        snprintf(ev->why, sizeof(ev->why), "%s", ev->v.reason);
    return 1;
}

/* evaluation_write - write the group's exposures and its evidence row, and enqueue its alert: raised for a
 * diverged group; for an incomplete one with a first difference, only to correct an alert raised before
 * (divergence_alert.h). A replay group raises none: its narrow's follow-up speaks; nor does a group of noise
 * replicas, which diverge by design. 0, or -1 with `err`. */
static int evaluation_write(evaluation *ev, char *err, size_t cap)
{
    if (write_exposures(ev->g, &ev->v, ev->why, ev->origin, ev->norigin, ev->exposed, ev->step, err, cap) < 0)
        return -1;
    const char *pe[] = {ev->group,
                        ev->v.cls,
                        ev->v.reason,
                        ev->v.code,
                        ev->ndivs ? ev->step : NULL,
                        ev->ndivs ? ev->rank0 : NULL,
                        ev->origin_name,
                        ev->v.implicated,
                        PQgetvalue(ev->sig, 0, 0),
                        ev->g->program,
                        *ev->evidence_narrow ? ev->evidence_narrow : NULL,
                        ev->why};
    if (db_do("sus_evidence_write", 12, pe, err, cap) < 0)
        return -1;
    if (!ev->replays && !ev->noise && (ev->ndivs || ev->vd.first_div) &&
        divergence_alert_enqueue(ev->g, &ev->vd, &ev->v, err, cap) < 0)
        return -1;
    return 0;
}

/* evaluation_free - free what `ev` holds, and `ev`. */
static void evaluation_free(evaluation *ev)
{
    for (int a = 0; a < ev->g->nruns; a++)
        free(ev->g->runs[a].ranks);
    free(ev->g);
    for (int i = 0; ev->docs && i < PQntuples(ev->man); i++)
        json_decref(ev->docs[i]);
    free(ev->docs);
    PQclear(ev->sig);
    PQclear(ev->runs);
    PQclear(ev->man);
    findings_release(&ev->vd);
    PQclear(ev->att);
    free(ev);
}

int suspects_evaluate(const char *group, char (*requeue)[256], int cap, int *nrequeue)
{
    char err[512];
    if (sql_begin(err, sizeof(err)) < 0) {
        fail_log("lock for", group, err);
        return -1;
    }
    int rc = -1;
    evaluation *ev = xcalloc(1, sizeof(*ev));
    ev->group = group;
    ev->g = xcalloc(1, sizeof(*ev->g));
    ev->g->name = group;
    ev->v = (grp_class){.cls = "none", .code = "match"};
    ev->exposed = 1;
    if ((rc = evaluation_read(ev, err, sizeof(err))) < 1)
        goto out_rollback;
    if ((rc = evaluation_ready(ev, err, sizeof(err))) != 1)
        goto out_rollback;
    group_hardware(ev);
    if ((rc = evaluation_decide(ev, requeue, cap, nrequeue, err, sizeof(err))) < 1)
        goto out_rollback;
    rc = -1;
    if (evaluation_write(ev, err, sizeof(err)) < 0)
        goto out_rollback;
    if (sql_commit(err, sizeof(err)) < 0)
        goto out_fail;
    log_info("suspects: group %s evaluated: %s (%s)", group, ev->v.cls, ev->v.reason);
    rc = 1;
    goto out_free;
out_rollback:
    sql_rollback();
out_fail:
    if (rc < 0)
        fail_log("evaluate", group, err);
out_free:
    evaluation_free(ev);
    return rc;
}

/* The statements of an evaluation, in the order it runs them; all inside its transaction (sql_begin). */
void suspects_register(void)
{
    db_register("sus_spread", "SELECT twin_group, implicated, reason_code FROM group_evidence WHERE origin_name = $1 "
                              "AND program = $4 AND twin_group <> $2 AND evaluated_at > now() - $3::interval "
                              "AND reason_code IN ('pair', 'minority', 'spread') AND implicated <> ''");
    db_register("sus_exposures",
                "SELECT run_key::text, node, gpu, weight, at::text FROM hw_exposures WHERE twin_group = $1");
    db_register("sus_exposures_clear", "DELETE FROM hw_exposures WHERE twin_group = $1");
    db_register("sus_node_seen",
                "INSERT INTO hw_nodes (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET last_seen = now()");
    db_register("sus_gpu_seen", "INSERT INTO hw_gpus (uuid, node, name) VALUES ($1, $2, $3) ON CONFLICT (uuid) DO "
                                "UPDATE SET name = excluded.name, last_seen = now() WHERE hw_gpus.node = "
                                "excluded.node RETURNING 1");
    db_register("sus_exposure_add",
                "INSERT INTO hw_exposures (twin_group, run_key, node, gpu, weight, at) VALUES ($1, $2, $3, $4, $5, "
                "coalesce($6::timestamptz, now())) ON CONFLICT (twin_group, run_key, node, gpu) DO UPDATE SET "
                "weight = greatest(hw_exposures.weight, excluded.weight)");
    db_register("sus_history_involved",
                "INSERT INTO hw_history (node, gpu, kind, twin_group, run_key, step, rank, weight, detail) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)");
    db_register("sus_history_cleared", "INSERT INTO hw_history (node, gpu, kind, twin_group, run_key, weight, detail) "
                                       "VALUES ($1, $2, $3, $4, $5, $6, $7)");
    db_register("sus_signature",
                "SELECT lockstep_group_signature($1), (SELECT signature FROM group_evidence WHERE twin_group = $1)");
    db_register("sus_runs", "SELECT run_key::text, run_id::text, nodes, user_name, job_id, status, command FROM runs "
                            "WHERE twin_group = $1 ORDER BY run_key");
    db_register("sus_manifests", Q_MANIFESTS);
    db_register("sus_attested", Q_ATTESTED);
    db_register("sus_settled",
                "SELECT (SELECT count(*) FROM (SELECT DISTINCT p.rank FROM rank_progress p JOIN runs r "
                "USING (run_key) WHERE r.twin_group = $1) x LEFT JOIN group_checks c ON c.twin_group = $1 "
                "AND c.rank = x.rank WHERE coalesce(c.checked_upto, -1) < $2::bigint OR c.waiting) = 0 OR "
                "(SELECT min(detected_at) FROM divergences WHERE twin_group = $1) < now() - interval '30 s'");
    db_register(
        "sus_evidence_write",
        "INSERT INTO group_evidence (twin_group, class, reason, reason_code, step, rank, origin_name, "
        "implicated, signature, program, evidence_narrow, evidence_reason) VALUES ($1, $2, $3, $4, $5, $6, $7, "
        "$8, $9, $10, $11::bigint, $12) "
        "ON CONFLICT (twin_group) DO UPDATE SET program = excluded.program, "
        "class = excluded.class, reason = excluded.reason, reason_code = excluded.reason_code, "
        "step = excluded.step, rank = excluded.rank, origin_name = excluded.origin_name, "
        "implicated = excluded.implicated, signature = excluded.signature, "
        "evidence_narrow = excluded.evidence_narrow, evidence_reason = excluded.evidence_reason, evaluated_at = "
        "now()");
}
