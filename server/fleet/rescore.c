/* rescore.c - the fleet pass: involvements and exposures per node and GPU, scores, state changes, their history and
 * alerts. */
#include "server/fleet/rescore.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/log.h"
#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/alerts/alerts.h"
#include "server/fleet/evidence.h"
#include "server/rules/score.h"
#include "server/fleet/slurm_action.h"
#include "server/store/db.h"
#include "server/store/sql.h"

#define MAX_TURNED 64

/* One scored entity (node or GPU). */
typedef struct ent {
    const char *id, *node, *state;
    double old_score, old_k, expo, strong, k;
    double fleet; /* the fleet baseline of its kind (nodes, GPUs): score_fleet_baseline */
    score_result res;
} ent;

static int find_ent(ent *e, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(e[i].id, id))
            return i;
    return -1;
}

/* load - entities (`list`: id, node, state, score, involvements) with their exposures
 * (`expo`: id, count) and involvement rows (`inv`: group, id, weight) into a
 * new array; weak rows become blame shares. */
static ent *load(PGresult *list, PGresult *expo, PGresult *inv, int *nout)
{
    int n = PQntuples(list);
    ent *e = xcalloc((size_t)n + 1, sizeof(ent));
    for (int i = 0; i < n; i++)
        e[i] = (ent){.id = PQgetvalue(list, i, 0),
                     .node = PQgetvalue(list, i, 1),
                     .state = PQgetvalue(list, i, 2),
                     .old_score = atof(PQgetvalue(list, i, 3)),
                     .old_k = atof(PQgetvalue(list, i, 4))};
    for (int i = 0; i < PQntuples(expo); i++) {
        int j = find_ent(e, n, PQgetvalue(expo, i, 0));
        if (j >= 0)
            e[j].expo = atof(PQgetvalue(expo, i, 1));
    }
    int ni = PQntuples(inv), nw = 0;
    ev_weak *w = xcalloc((size_t)ni + 1, sizeof(ev_weak));
    for (int i = 0; i < ni;) {
        const char *grp = PQgetvalue(inv, i, 0);
        ev_weak *cur = &w[nw];
        for (; i < ni && !strcmp(PQgetvalue(inv, i, 0), grp); i++) {
            int j = find_ent(e, n, PQgetvalue(inv, i, 1));
            double wt = atof(PQgetvalue(inv, i, 2));
            if (j < 0)
                continue;
            if (wt >= 1.0) {
                e[j].strong += 1.0;
                continue;
            }
            int dup = 0;
            for (int c = 0; c < cur->ncand; c++)
                dup |= cur->cand[c] == j;
            if (!dup && cur->ncand < 8) {
                cur->cand[cur->ncand++] = j;
                cur->mass += wt;
            }
        }
        if (cur->ncand)
            nw++;
    }
    double *strong = xcalloc((size_t)n + 1, sizeof(double)), *ex = xcalloc((size_t)n + 1, sizeof(double)),
           *k = xcalloc((size_t)n + 1, sizeof(double));
    for (int i = 0; i < n; i++) {
        strong[i] = e[i].strong;
        ex[i] = e[i].expo;
    }
    ev_share_blame(w, nw, strong, ex, n, k);
    double fk = 0, fn = 0;
    for (int i = 0; i < n; i++) {
        e[i].k = k[i];
        fk += k[i];
        fn += e[i].expo;
    }
    const score_params params = {g_srv.cfg.suspect_threshold, g_srv.cfg.suspect_min_evidence, g_srv.cfg.suspect_ratio,
                                 g_srv.cfg.suspect_prior};
    for (int i = 0; i < n; i++) {
        score_compute(&params, e[i].k, e[i].expo, fk, fn, &e[i].res);
        e[i].fleet = score_fleet_baseline(fk, fn);
    }
    free(strong);
    free(ex);
    free(k);
    free(w);
    *nout = n;
    return e;
}

/* history - a score or state event of entity `e` (`gpu`: one of node's GPUs), with its score, involvements and runs
 * as numbers (the node page's charts: GET /api/v1/nodes/{name}/timeline). */
static int history(const ent *e, const char *gpu, const char *kind, const char *state, const char *detail, char *id_out,
                   size_t idcap, char *err, size_t cap)
{
    char sc[32], k[32], n[32];
    snprintf(sc, sizeof(sc), "%.6f", e->res.score);
    snprintf(k, sizeof(k), "%.6f", e->k);
    snprintf(n, sizeof(n), "%.0f", e->expo);
    const char *p[] = {e->node, gpu, kind, sc, state, detail, k, n};
    PGresult *r = db_exec_once("rescore_event_add", 8, p, err, cap);
    if (!r)
        return -1;
    if (id_out)
        snprintf(id_out, idcap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

/* next_state - the one automatic transition: ok/repaired -> suspect when
 * the score says so. A suspect stays one until an admin drains or repairs
 * it (a score that dips while evidence arrives must not flap the state,
 * the alerts and the Slurm drain). */
static const char *next_state(const ent *e)
{
    if ((!strcmp(e->state, "ok") || !strcmp(e->state, "repaired")) && e->res.suspect)
        return "suspect";
    return e->state;
}

static int suspect_alert(const ent *e, const char *hist_id, char *err, size_t cap)
{
    char key[300], summary[400], body[2048], frag[300], rate[32], ref[32], fleet[32];
    score_format_rate(e->res.rate, rate, sizeof(rate));
    score_format_rate(e->res.reference, ref, sizeof(ref));
    score_format_rate(e->fleet, fleet, sizeof(fleet));
    snprintf(key, sizeof(key), "suspect:%s:%s", e->id, hist_id);
    snprintf(summary, sizeof(summary), "node %s is a hardware suspect (score %.3f)", e->id, e->res.score);
    snprintf(frag, sizeof(frag), "/nodes/%s", e->id);
    char *url = alert_url(frag);
    snprintf(body, sizeof(body),
             "Node %s turned suspect: its runs were blamed for %.2f divergences in %.0f twin-compared runs "
             "(rate %s; fleet baseline %s, the rest of the fleet %s); score %.3f >= %.2f (P(rate > %.1f x the rest "
             "of the fleet's rate)).\n%s"
             "Dashboard: %s\n",
             e->id, e->k, e->expo, rate, fleet, ref, e->res.score, g_srv.cfg.suspect_threshold, g_srv.cfg.suspect_ratio,
             g_srv.cfg.slurm_drain ? "lockstepd drains it in Slurm (slurm_action = drain).\n" : "", url);
    json_t *d =
        json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f}", "node", e->id, "score", e->res.score, "involvements", e->k,
                  "runs", e->expo, "rate", e->res.rate, "baseline", e->fleet, "reference_rate", e->res.reference);
    const char *blames[] = {e->id};
    char score[32], inv[160];
    snprintf(score, sizeof(score), "%.3f", e->res.score);
    snprintf(inv, sizeof(inv), "%.2f in %.0f runs (rate %s, fleet baseline %s)", e->k, e->expo, rate, fleet);
    json_t *labels = json_pack("{s:s}", "node", e->id);
    char description[600];
    snprintf(description, sizeof(description),
             "Its runs were blamed for %.2f divergences in %.0f twin-compared runs (rate %s; fleet baseline %s, the "
             "rest of the fleet %s); score %.3f >= %.2f.%s",
             e->k, e->expo, rate, fleet, ref, e->res.score, g_srv.cfg.suspect_threshold,
             g_srv.cfg.slurm_drain ? " lockstepd drains it in Slurm." : "");
    json_t *ann = json_pack("{s:s, s:s, s:s}", "score", score, "involvements", inv, "classification", "hardware");
    alert_spec a = {.dedup_key = key,
                    .kind = "suspect",
                    .node = e->id,
                    .severity = "critical",
                    .summary = summary,
                    .description = description,
                    .body = body,
                    .url = url,
                    .details = d,
                    .mail_to = g_srv.cfg.mail_admin[0] ? g_srv.cfg.mail_admin : NULL,
                    .labels = labels,
                    .annotations = ann,
                    .blames = blames,
                    .nblames = 1};
    long long id = alert_enqueue(&a, err, cap);
    json_decref(d);
    json_decref(labels);
    json_decref(ann);
    free(url);
    return id < 0 ? -1 : 0;
}

/* apply - write scores and state changes of one kind of entity. `gpus`:
 * GPU rows (state changes only in history, no alerts or Slurm). */
static int apply(ent *e, int n, int gpus, char turned[][256], int *nturned, char *err, size_t cap)
{
    for (int i = 0; i < n; i++) {
        char sc[32], k[32], ex[32], base[32], detail[512];
        snprintf(sc, sizeof(sc), "%.6f", e[i].res.score);
        snprintf(k, sizeof(k), "%.6f", e[i].k);
        snprintf(ex, sizeof(ex), "%.0f", e[i].expo);
        snprintf(base, sizeof(base), "%.6f", e[i].res.reference);
        const char *st = next_state(&e[i]);
        const char *p[] = {e[i].id, sc, k, ex, base, st};
        if (db_do(gpus ? "rescore_gpu_set" : "rescore_node_set", 6, p, err, cap) < 0)
            return -1;
        const char *gpu = gpus ? e[i].id : NULL;
        /* a score event when the score or the involvements moved (the node page draws both over time) */
        if (fabs(e[i].res.score - e[i].old_score) >= 0.01 || fabs(e[i].k - e[i].old_k) >= 0.01) {
            char rate[32], ref[32], fleet[32];
            score_format_rate(e[i].res.rate, rate, sizeof(rate));
            score_format_rate(e[i].res.reference, ref, sizeof(ref));
            score_format_rate(e[i].fleet, fleet, sizeof(fleet));
            if (gpus)
                snprintf(detail, sizeof(detail), "involvements %.2f of %.0f runs (rate %s); the other GPUs %s", e[i].k,
                         e[i].expo, rate, ref);
            else
                snprintf(detail, sizeof(detail),
                         "involvements %.2f of %.0f runs (rate %s); fleet baseline %s, the rest of the fleet %s",
                         e[i].k, e[i].expo, rate, fleet, ref);
            if (history(&e[i], gpu, "score", NULL, detail, NULL, 0, err, cap) < 0)
                return -1;
        }
        if (strcmp(st, e[i].state)) {
            char hid[32];
            snprintf(detail, sizeof(detail), "%s -> %s: score %.3f %s %.2f, involvements %.2f (minimum %.2f)",
                     e[i].state, st, e[i].res.score, e[i].res.suspect ? ">=" : "<", g_srv.cfg.suspect_threshold, e[i].k,
                     g_srv.cfg.suspect_min_evidence);
            if (history(&e[i], gpu, "state", st, detail, hid, sizeof(hid), err, cap) < 0)
                return -1;
            log_info("suspects: %s %s: %s", gpus ? "GPU" : "node", e[i].id, detail);
            if (!gpus && !strcmp(st, "suspect")) {
                if (suspect_alert(&e[i], hid, err, cap) < 0)
                    return -1;
                if (*nturned < MAX_TURNED)
                    snprintf(turned[(*nturned)++], 256, "%s", e[i].id);
            }
        }
    }
    return 0;
}

int rescore_fleet(void)
{
    char err[512];
    if (sql_begin(err, sizeof(err)) < 0)
        goto out_log;
    PGresult *r[6] = {0};
    r[0] = db_exec_once("rescore_nodes", 0, NULL, err, sizeof(err));
    r[1] = r[0] ? db_exec_once("rescore_node_exposures", 0, NULL, err, sizeof(err)) : NULL;
    r[2] = r[1] ? db_exec_once("rescore_node_involvements", 0, NULL, err, sizeof(err)) : NULL;
    r[3] = r[2] ? db_exec_once("rescore_gpus", 0, NULL, err, sizeof(err)) : NULL;
    r[4] = r[3] ? db_exec_once("rescore_gpu_exposures", 0, NULL, err, sizeof(err)) : NULL;
    r[5] = r[4] ? db_exec_once("rescore_gpu_involvements", 0, NULL, err, sizeof(err)) : NULL;
    int rc = -1, nn = 0, ng = 0, nturned = 0;
    char turned[MAX_TURNED][256];
    ent *nodes = NULL, *gpus = NULL;
    if (!r[5])
        goto out_rollback;
    nodes = load(r[0], r[1], r[2], &nn);
    gpus = load(r[3], r[4], r[5], &ng);
    if (apply(nodes, nn, 0, turned, &nturned, err, sizeof(err)) < 0 ||
        apply(gpus, ng, 1, turned, &nturned, err, sizeof(err)) < 0)
        goto out_rollback;
    if (sql_commit(err, sizeof(err)) < 0)
        goto out_free;
    rc = nturned;
    goto out_free;
out_rollback:
    sql_rollback();
out_free:
    free(nodes);
    free(gpus);
    for (int i = 0; i < 6; i++)
        PQclear(r[i]);
    if (rc < 0)
        goto out_log;
    if (nturned)
        alert_notify();
    for (int i = 0; i < nturned; i++) {
        char reason[300];
        snprintf(reason, sizeof(reason), "hardware suspect (twin divergences), see lockstep node history");
        slurm_apply(turned[i], 1, reason);
    }
    return rc;
out_log:
    log_warn("suspects: cannot rescore the fleet: %s (hint: retried on the next pass)", err);
    return -1;
}

/* The evidence the score reads: twin groups' exposures (hw_exposures) and runs' consensus disagreements
 * (consensus_exposures, server/fleet/consensus.c), as (g, run_key, node, gpu, weight, at) with g the group, or ''
 * for a consensus row. A run counts once as a node's exposure whatever shows it. */
#define EXPOSURES                                                                                                      \
    "(SELECT twin_group AS g, run_key, node, gpu, at FROM hw_exposures UNION ALL SELECT '', c.run_key, c.node, "       \
    "c.gpu, c.at FROM consensus_exposures c WHERE NOT EXISTS (SELECT 1 FROM hw_exposures h WHERE h.run_key = "         \
    "c.run_key AND h.node = c.node))"
/* Involvements likewise: a consensus disagreement is its own weak group ('consensus:RUN', the blame shares of a
 * pair); where a run's twin group and its consensus both involve one node (GPU), the stronger counts, once. */
#define INVOLVEMENTS(col)                                                                                              \
    "(SELECT twin_group AS g, run_key, node, gpu, weight, at FROM hw_exposures h WHERE weight > 0 AND NOT EXISTS "     \
    "(SELECT 1 FROM consensus_exposures c WHERE c.run_key = h.run_key AND c." #col " = h." #col                        \
    " AND c.weight > h.weight) UNION ALL SELECT 'consensus:' || run_key, run_key, node, gpu, weight, at FROM "         \
    "consensus_exposures c WHERE weight > 0 AND NOT EXISTS (SELECT 1 FROM hw_exposures h WHERE h.run_key = "           \
    "c.run_key AND h." #col " = c." #col " AND h.weight >= c.weight))"

void rescore_register(void)
{
    db_register("rescore_gpu_set", "UPDATE hw_gpus SET score = $2, involvements = $3, exposures = $4, state = $6 WHERE "
                                   "uuid = $1 AND $5::float8 >= 0");
    db_register("rescore_node_set", "UPDATE hw_nodes SET score = $2, involvements = $3, exposures = $4, baseline = $5, "
                                    "state_since = CASE WHEN state = $6 THEN state_since ELSE now() END, state = $6 "
                                    "WHERE name = $1");
    db_register("rescore_event_add",
                "INSERT INTO hw_history (node, gpu, kind, score, state, detail, involvements, exposures) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id");
    db_register("rescore_nodes", "SELECT name, name, state, score, involvements FROM hw_nodes ORDER BY name");
    db_register("rescore_node_exposures", "SELECT e.node, count(DISTINCT (e.g, e.run_key)) FROM " EXPOSURES
                                          " e JOIN hw_nodes n ON n.name = e.node WHERE e.at >= n.evidence_since "
                                          "GROUP BY e.node");
    db_register("rescore_node_involvements",
                "SELECT e.g, e.node, max(e.weight) FROM " INVOLVEMENTS(
                    node) " e JOIN hw_nodes n ON n.name = "
                          "e.node WHERE e.at >= n.evidence_since GROUP BY e.g, e.run_key, e.node ORDER BY e.g");
    db_register("rescore_gpus", "SELECT uuid, node, state, score, involvements FROM hw_gpus ORDER BY uuid");
    db_register("rescore_gpu_exposures", "SELECT e.gpu, count(DISTINCT (e.g, e.run_key)) FROM " EXPOSURES
                                         " e JOIN hw_nodes n ON n.name = e.node WHERE e.gpu <> '' AND e.at >= "
                                         "n.evidence_since GROUP BY e.gpu");
    db_register(
        "rescore_gpu_involvements",
        "SELECT e.g, e.gpu, max(e.weight) FROM " INVOLVEMENTS(
            gpu) " e JOIN hw_nodes n ON n.name = "
                 "e.node WHERE e.gpu <> '' AND e.at >= n.evidence_since GROUP BY e.g, e.run_key, e.gpu ORDER BY e.g");
}
