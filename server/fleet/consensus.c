/* consensus.c - runs' consensus disagreements as hardware evidence: each new or changed consensus_divergences row
 * evaluated once by the rule of server/rules/cons_evidence.h on the attested hardware of its odd ranks; its
 * exposures, involvements, history and alert; and each checked run that ended, once, as an exposure of its hardware. */
#include "server/fleet/consensus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json/node_of.h"
#include "server/core/log.h"
#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/fleet/consensus_alert.h"
#include "server/fleet/suspects_int.h"
#include "server/rules/cons_evidence.h"
#include "server/store/db.h"
#include "server/store/sql.h"

#define CONS_MAX_ODD 64      /* odd ranks read of one row (more are one of "several" anyway) */
#define CONS_NAME_WAIT_S 30  /* the alert waits this long for the record's name (records come on demand) */
#define CONS_PER_PASS "1000" /* rows one pass evaluates; the rest on the next */

/* The rows whose evaluation is missing or out of date: never evaluated, marked stale (''), or changed since (the
 * signature) among those of the last day (a row's record name, a manifest or an attestation arrives within moments
 * of it; older rows are not looked at again every pass). An alert still waiting for the record's name keeps its row
 * listed ("wait:" before the signature). */
#define Q_CHANGED                                                                                                      \
    "SELECT d.run_key::text FROM consensus_divergences d LEFT JOIN consensus_evidence e USING (run_key) "              \
    "WHERE e.run_key IS NULL OR e.signature = '' OR e.signature LIKE 'wait:%' OR (d.detected_at > now() - interval "   \
    "'1 day' AND e.signature IS "                                                                                      \
    "DISTINCT FROM lockstep_consensus_signature(d.run_key)) ORDER BY d.run_key LIMIT " CONS_PER_PASS

/* The runs whose hardware is still to count as exposures: checked windows, ended (what a run still running checks
 * is not in yet), not exposed yet; whether each disagreed. Each is listed until exposed, once. */
#define Q_UNEXPOSED                                                                                                    \
    "SELECT c.run_key::text, r.nodes, EXISTS (SELECT 1 FROM consensus_divergences d WHERE d.run_key = c.run_key) "     \
    "FROM consensus_runs c JOIN runs r USING (run_key) WHERE c.exposed_at IS NULL AND c.checked > 0 AND r.status <> "  \
    "'running' ORDER BY c.run_key LIMIT " CONS_PER_PASS

/* One hardware row of the run: a rank's node and GPU, and its weight. */
typedef struct cexpo {
    const char *node, *gpu, *gpu_name;
    int rank;
    double weight;
} cexpo;

/* One evaluation of a run's row: what it read in the transaction's snapshot (owned) and what it concluded. */
typedef struct cons_eval {
    const char *run_key;
    PGresult *row, *att, *man;
    json_t **docs;                           /* the manifests parsed, one per row of man, which the places borrow */
    int nranks;                              /* ranks placed */
    node_place *place;                       /* [nranks] */
    int odd[CONS_MAX_ODD], n_odd;            /* the odd ranks read */
    char odd_nodes[1024], gpus[1024];        /* their attested nodes and GPUs, ','-separated */
    const char *name, *program, *sig, *prev; /* borrowed from row */
    cons_ev_facts f;
    cons_ev_verdict v;
} cons_eval;

/* add_unique - append `v` to the ','-separated list `out` unless empty or there already; 1 when added. */
static int add_unique(char *out, size_t cap, const char *v)
{
    if (!v || !*v)
        return 0;
    size_t l = strlen(v);
    for (const char *p = out; *p;) {
        const char *e = strchr(p, ',');
        size_t pl = e ? (size_t)(e - p) : strlen(p);
        if (pl == l && !strncmp(p, v, l))
            return 0;
        p += pl + (e ? 1 : 0);
    }
    size_t n = strlen(out);
    if (n + l + 2 >= cap)
        return 0;
    snprintf(out + n, cap - n, "%s%s", n ? "," : "", v);
    return 1;
}

/* place_ranks - the hardware of each rank of the run (common/json/node_of.h): slurmstepd's attested node, the
 * manifest's GPU with it; a rank no one attested counts for nothing (but with trust_reported_hosts, then the run's
 * `reported` nodes). */
static void place_ranks(cons_eval *ev, const char *reported)
{
    PGresult *att = ev->att, *man = ev->man;
    for (int i = 0; i < PQntuples(man); i++) {
        int rk = atoi(PQgetvalue(man, i, 0));
        if (rk >= 0 && rk < GROUP_MAX_RANKS && rk + 1 > ev->nranks)
            ev->nranks = rk + 1;
    }
    int64_t ranks[ATTEST_MAX_RANKS];
    for (int i = 0; i < PQntuples(att); i++) {
        int n = db_int_array_parse(PQgetvalue(att, i, 1), ranks, ATTEST_MAX_RANKS);
        for (int k = 0; k < n; k++)
            if (ranks[k] >= 0 && ranks[k] < GROUP_MAX_RANKS && ranks[k] + 1 > ev->nranks)
                ev->nranks = (int)ranks[k] + 1;
    }
    for (int o = 0; o < ev->n_odd; o++)
        if (ev->odd[o] + 1 > ev->nranks)
            ev->nranks = ev->odd[o] + 1;
    const char **attested = xcalloc((size_t)ev->nranks + 1, sizeof(char *));
    json_t **of = xcalloc((size_t)ev->nranks + 1, sizeof(json_t *));
    for (int i = 0; i < PQntuples(att); i++) {
        int n = db_int_array_parse(PQgetvalue(att, i, 1), ranks, ATTEST_MAX_RANKS);
        for (int k = 0; k < n; k++)
            if (ranks[k] >= 0 && ranks[k] < ev->nranks)
                attested[ranks[k]] = PQgetvalue(att, i, 0);
    }
    ev->docs = xcalloc((size_t)PQntuples(man) + 1, sizeof(json_t *));
    for (int i = 0; i < PQntuples(man); i++) {
        int rk = atoi(PQgetvalue(man, i, 0));
        ev->docs[i] = PQgetisnull(man, i, 1) ? NULL : json_loads(PQgetvalue(man, i, 1), 0, NULL);
        if (rk >= 0 && rk < ev->nranks)
            of[rk] = ev->docs[i];
    }
    ev->place = xcalloc((size_t)ev->nranks + 1, sizeof(node_place));
    for (int k = 0; k < ev->nranks; k++) {
        node_facts f = {attested[k], g_srv.cfg.trust_reported_hosts, reported};
        node_of_rank(of[k], &f, &ev->place[k]);
    }
    free(attested);
    free(of);
}

/* repeats - the same record's disagreements in the program's other runs within the software window that named odd
 * ranks on attested hardware (the rule's repeat facts; one without a majority names no node): how many, and their
 * odd nodes added to `nodes` (this run's). 0, or -1 with `err`. */
static int repeats(cons_eval *ev, char *nodes, size_t ncap, char *err, size_t cap)
{
    if (!*ev->name)
        return 0; /* the record is awaited: compared once it is known */
    char win[32];
    snprintf(win, sizeof(win), "%d days", g_srv.cfg.software_window_days);
    const char *p[] = {ev->name, ev->program, ev->run_key, win};
    PGresult *r = db_exec_once("cons_repeats", 4, p, err, cap);
    if (!r)
        return -1;
    ev->f.repeat_runs = PQntuples(r);
    for (int i = 0; i < PQntuples(r); i++) {
        char list[1024];
        snprintf(list, sizeof(list), "%s", PQgetvalue(r, i, 0));
        for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
            ev->f.repeat_nodes += add_unique(nodes, ncap, t);
    }
    PQclear(r);
    const char *pp[] = {ev->program, win};
    r = db_exec_once("cons_program_runs", 2, pp, err, cap);
    if (!r)
        return -1;
    ev->f.program_runs = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

/* judge - the facts of the row and of its odd ranks' hardware, judged (ev->v). 0, or -1 with `err`. */
static int judge(cons_eval *ev, char *err, size_t cap)
{
    cons_ev_facts *f = &ev->f;
    f->clear = PQgetvalue(ev->row, 0, 11)[0] == 't';
    f->comm_size = atoi(PQgetvalue(ev->row, 0, 9));
    f->n_odd = ev->n_odd;
    f->odd_rank = ev->n_odd ? ev->odd[0] : -1;
    f->spread = g_srv.cfg.software_spread;
    f->program_runs = 1;
    for (int o = 0; o < ev->n_odd; o++) {
        const node_place *p = &ev->place[ev->odd[o]];
        if (!p->node) {
            f->unattested++;
            continue;
        }
        f->odd_nodes += add_unique(ev->odd_nodes, sizeof(ev->odd_nodes), p->node);
        add_unique(ev->gpus, sizeof(ev->gpus), p->gpu);
    }
    f->node = f->odd_nodes == 1 ? ev->odd_nodes : NULL;
    f->gpu = ev->n_odd == 1 && !f->unattested ? ev->place[ev->odd[0]].gpu : NULL;
    char nodes[1024];
    snprintf(nodes, sizeof(nodes), "%s", ev->odd_nodes);
    f->repeat_nodes = f->odd_nodes;
    if (repeats(ev, nodes, sizeof(nodes), err, cap) < 0)
        return -1;
    cons_ev_judge(f, &ev->v);
    return 0;
}

/* add_row - the row of (node, gpu) in x[0..n) raised to `w` at `rank`, or a new one; returns the new count. */
static int add_row(cexpo *x, int n, const char *node, const char *gpu, const char *gpu_name, int rank, double w)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(x[i].node, node) && !strcmp(x[i].gpu, gpu)) {
            if (w > x[i].weight) {
                x[i].weight = w;
                x[i].rank = rank;
            }
            return n;
        }
    x[n] = (cexpo){node, gpu, gpu_name, rank, w};
    return n + 1;
}

/* exposure_rows - the run's hardware rows: every placed rank exposed, the odd ranks' with the verdict's weight
 * (strong against one node over several odd ranks: on the node alone, not on their GPUs). x has room for
 * 2 * nranks + 1 rows; returns how many. */
static int exposure_rows(const cons_eval *ev, cexpo *x)
{
    int n = 0;
    for (int k = 0; k < ev->nranks; k++) {
        const node_place *p = &ev->place[k];
        if (!p->node)
            continue;
        int odd = 0;
        for (int o = 0; o < ev->n_odd; o++)
            odd |= ev->odd[o] == k;
        double w = !odd                             ? 0.0
                   : ev->v.weight == CONS_EV_WEAK   ? g_srv.cfg.weak_weight
                   : ev->v.weight == CONS_EV_STRONG ? 1.0
                                                    : 0.0;
        if (w > 0 && !strcmp(ev->v.code, "odd_node")) {
            n = add_row(x, n, p->node, p->gpu, p->gpu_name, k, 0.0);
            n = add_row(x, n, p->node, "", "", k, w);
        } else
            n = add_row(x, n, p->node, p->gpu, p->gpu_name, k, w);
    }
    return n;
}

/* expose_row - hardware row `x` of run `run_key` stored: its node and GPU seen (a GPU stays on the node it was first
 * seen on, as for twin groups: else the row is the node's alone), the row added or raised to its weight. 0, or -1
 * with `err`. */
static int expose_row(const char *run_key, cexpo *x, char *err, size_t cap)
{
    char w[32], rank[16];
    snprintf(w, sizeof(w), "%g", x->weight);
    snprintf(rank, sizeof(rank), "%d", x->rank);
    const char *pn[] = {x->node};
    if (db_do("cons_node_seen", 1, pn, err, cap) < 0)
        return -1;
    if (*x->gpu) {
        const char *pg[] = {x->gpu, x->node, x->gpu_name ? x->gpu_name : ""};
        PGresult *gr = db_exec_once("cons_gpu_seen", 3, pg, err, cap);
        if (!gr)
            return -1;
        if (PQntuples(gr) == 0)
            x->gpu = "";
        PQclear(gr);
    }
    const char *pe[] = {run_key, x->node, x->gpu, rank, w};
    return db_do("cons_exposure_add", 5, pe, err, cap);
}

/* write_exposures - replace the run's exposures; history for each involvement that appeared, changed or went away.
 * 0, or -1 with `err`. */
static int write_exposures(cons_eval *ev, char *err, size_t cap)
{
    const char *p1[] = {ev->run_key};
    PGresult *old = db_exec_once("cons_exposures", 1, p1, err, cap);
    if (!old)
        return -1;
    int rc = -1;
    cexpo *x = xcalloc(2 * (size_t)ev->nranks + 1, sizeof(cexpo));
    int n = exposure_rows(ev, x);
    char detail[1200];
    if (db_do("cons_exposures_clear", 1, p1, err, cap) < 0)
        goto out_free;
    for (int i = 0; i < n; i++) {
        char w[32], rank[16];
        snprintf(w, sizeof(w), "%g", x[i].weight);
        snprintf(rank, sizeof(rank), "%d", x[i].rank);
        if (expose_row(ev->run_key, &x[i], err, cap) < 0)
            goto out_free;
        double before = 0;
        for (int j = 0; j < PQntuples(old); j++)
            if (!strcmp(PQgetvalue(old, j, 0), x[i].node) && !strcmp(PQgetvalue(old, j, 1), x[i].gpu))
                before = atof(PQgetvalue(old, j, 2));
        if (x[i].weight > 0 && x[i].weight != before) {
            snprintf(detail, sizeof(detail), "consensus: %.1100s", ev->v.reason);
            const char *ph[] = {
                x[i].node, *x[i].gpu ? x[i].gpu : NULL, "involvement", ev->run_key, PQgetvalue(ev->row, 0, 5), rank, w,
                detail};
            if (db_do("cons_history", 8, ph, err, cap) < 0)
                goto out_free;
        }
    }
    for (int j = 0; j < PQntuples(old); j++) { /* involvements that went away */
        if (atof(PQgetvalue(old, j, 2)) <= 0)
            continue;
        int still = 0;
        for (int i = 0; i < n && !still; i++)
            still = x[i].weight > 0 && !strcmp(PQgetvalue(old, j, 0), x[i].node) &&
                    !strcmp(PQgetvalue(old, j, 1), x[i].gpu);
        if (still)
            continue;
        snprintf(detail, sizeof(detail), "consensus re-evaluated as %s: %.1000s", ev->v.cls, ev->v.reason);
        const char *gpu = *PQgetvalue(old, j, 1) ? PQgetvalue(old, j, 1) : NULL;
        const char *ph[] = {PQgetvalue(old, j, 0), gpu, "withdrawn", ev->run_key, PQgetvalue(ev->row, 0, 5),
                            PQgetvalue(old, j, 3), "0", detail};
        if (db_do("cons_history", 8, ph, err, cap) < 0)
            goto out_free;
    }
    rc = 0;
out_free:
    free(x);
    PQclear(old);
    return rc;
}

/* evaluation_read - the row, the run's attestations and manifests, and the odd ranks. 1, 0 when nothing is to do
 * (the row went, or only its alert waits and the wait is not over), or -1 with `err`. */
static int evaluation_read(cons_eval *ev, char *err, size_t cap)
{
    const char *p[] = {ev->run_key};
    ev->row = db_exec_once("cons_row", 1, p, err, cap);
    if (!ev->row)
        return -1;
    if (PQntuples(ev->row) != 1 || PQgetisnull(ev->row, 0, 15))
        return 0;
    ev->name = PQgetvalue(ev->row, 0, 6);
    ev->program = PQgetvalue(ev->row, 0, 3);
    ev->sig = PQgetvalue(ev->row, 0, 15);
    ev->prev = PQgetvalue(ev->row, 0, 18);
    /* Evaluated at this state already; only the alert waits for the record's name. */
    if (!strncmp(ev->prev, "wait:", 5) && !strcmp(ev->prev + 5, ev->sig) &&
        atof(PQgetvalue(ev->row, 0, 16)) < CONS_NAME_WAIT_S)
        return 0;
    ev->att = db_exec_once("cons_attested", 1, p, err, cap);
    ev->man = ev->att ? db_exec_once("cons_manifests", 1, p, err, cap) : NULL;
    if (!ev->man)
        return -1;
    int64_t odd[CONS_MAX_ODD];
    int n = db_int_array_parse(PQgetvalue(ev->row, 0, 10), odd, CONS_MAX_ODD);
    for (int i = 0; i < n; i++)
        if (odd[i] >= 0 && odd[i] < GROUP_MAX_RANKS)
            ev->odd[ev->n_odd++] = (int)odd[i];
    return 1;
}

/* evaluation_write - the evidence row, the exposures and the alert (once the record's name is known, or after
 * CONS_NAME_WAIT_S without it). 0, or -1 with `err`. */
static int evaluation_write(cons_eval *ev, char *err, size_t cap)
{
    if (write_exposures(ev, err, cap) < 0)
        return -1;
    int alert_now = *ev->name || atof(PQgetvalue(ev->row, 0, 16)) >= CONS_NAME_WAIT_S;
    char sig[300];
    snprintf(sig, sizeof(sig), "%s%s", alert_now ? "" : "wait:", ev->sig);
    const char *pe[] = {ev->run_key, ev->v.cls, ev->v.code, ev->v.reason, ev->name, ev->program, ev->odd_nodes, sig};
    if (db_do("cons_evidence_write", 8, pe, err, cap) < 0)
        return -1;
    if (!strcmp(ev->v.code, "repeats")) {
        /* the program's earlier runs of this record: evaluated again with this one in view */
        char win[32];
        snprintf(win, sizeof(win), "%d days", g_srv.cfg.software_window_days);
        const char *ps[] = {ev->name, ev->program, ev->run_key, win};
        if (db_do("cons_repeats_stale", 4, ps, err, cap) < 0)
            return -1;
    }
    if (!alert_now)
        return 0;
    PGresult *row = ev->row;
    cons_report r = {.run_key = ev->run_key,
                     .run_id = PQgetvalue(row, 0, 0),
                     .job = PQgetvalue(row, 0, 1),
                     .step = strtoll(PQgetvalue(row, 0, 5), NULL, 10),
                     .name = ev->name,
                     .occ = atoi(PQgetvalue(row, 0, 7)),
                     .comm_ranks = PQgetvalue(row, 0, 8),
                     .comm_size = atoi(PQgetvalue(row, 0, 9)),
                     .odd_ranks = PQgetvalue(row, 0, 10),
                     .clear = PQgetvalue(row, 0, 11)[0] == 't',
                     .site = PQgetisnull(row, 0, 12) ? NULL : PQgetvalue(row, 0, 12),
                     .nodes = ev->odd_nodes,
                     .gpus = ev->gpus,
                     .cls = ev->v.cls,
                     .code = ev->v.code,
                     .reason = ev->v.reason,
                     .evidence = ev->v.weight != CONS_EV_NONE};
    return consensus_alert_enqueue(&r, err, cap);
}

static void evaluation_free(cons_eval *ev)
{
    for (int i = 0; ev->docs && i < PQntuples(ev->man); i++)
        json_decref(ev->docs[i]);
    free(ev->docs);
    free(ev->place);
    PQclear(ev->row);
    PQclear(ev->att);
    PQclear(ev->man);
}

/* evaluate - evaluate run `run_key`'s row in one transaction. 1 when it wrote, 0 when nothing was to do, -1 on a
 * database error (rolled back, logged). */
static int evaluate(const char *run_key)
{
    char err[512];
    if (sql_begin(err, sizeof(err)) < 0)
        goto out_log;
    cons_eval ev = {.run_key = run_key};
    int rc = evaluation_read(&ev, err, sizeof(err));
    if (rc < 1)
        goto out_rollback;
    rc = -1;
    place_ranks(&ev, PQgetvalue(ev.row, 0, 4));
    if (judge(&ev, err, sizeof(err)) < 0 || evaluation_write(&ev, err, sizeof(err)) < 0)
        goto out_rollback;
    if (sql_commit(err, sizeof(err)) < 0)
        goto out_free;
    log_info("suspects: consensus disagreement of run %s evaluated: %s (%s)", PQgetvalue(ev.row, 0, 0), ev.v.cls,
             ev.v.reason);
    rc = 1;
    goto out_free;
out_rollback:
    sql_rollback();
out_free:
    evaluation_free(&ev);
    if (rc >= 0)
        return rc;
out_log:
    log_warn("suspects: cannot evaluate the consensus disagreement of run %s: %s (hint: retried on the next pass)",
             run_key, err);
    return -1;
}

/* expose_checked - run `run_key`, consensus-checked and ended, exposed once in one transaction: every attested rank's
 * node and GPU as an exposure (weight 0: it took part and agreed), unless the run disagreed (`diverged`: its
 * evaluation writes them); then marked exposed. 1 when it wrote, -1 on a database error (rolled back, logged). */
static int expose_checked(const char *run_key, const char *reported, int diverged)
{
    char err[512];
    if (sql_begin(err, sizeof(err)) < 0)
        goto out_log;
    cons_eval ev = {.run_key = run_key};
    cexpo *x = NULL;
    const char *p[] = {run_key};
    int rc = -1;
    if (!diverged) {
        ev.att = db_exec_once("cons_attested", 1, p, err, sizeof(err));
        ev.man = ev.att ? db_exec_once("cons_manifests", 1, p, err, sizeof(err)) : NULL;
        if (!ev.man)
            goto out_rollback;
        place_ranks(&ev, reported);
        x = xcalloc(2 * (size_t)ev.nranks + 1, sizeof(cexpo));
        int n = exposure_rows(&ev, x); /* no odd rank: weight 0 on all */
        for (int i = 0; i < n; i++)
            if (expose_row(run_key, &x[i], err, sizeof(err)) < 0)
                goto out_rollback;
    }
    if (db_do("cons_run_exposed", 1, p, err, sizeof(err)) < 0)
        goto out_rollback;
    if (sql_commit(err, sizeof(err)) < 0)
        goto out_free;
    rc = 1;
    goto out_free;
out_rollback:
    sql_rollback();
out_free:
    free(x);
    evaluation_free(&ev);
    if (rc >= 0)
        return rc;
out_log:
    log_warn("suspects: cannot count consensus-checked run %s as an exposure: %s (hint: retried on the next pass)",
             run_key, err);
    return -1;
}

/* expose_pass - the ended runs with checked windows not yet exposed (CONS_PER_PASS of them), each exposed once.
 * How many were, or -1 when one failed (listed again on the next pass). */
static int expose_pass(void)
{
    char err[512];
    PGresult *r = db_exec_once("cons_unexposed", 0, NULL, err, sizeof(err));
    if (!r) {
        log_warn("suspects: cannot list consensus-checked runs: %s (hint: retried on the next pass)", err);
        return -1;
    }
    int n = 0, failed = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int e = expose_checked(PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2)[0] == 't');
        failed |= e < 0;
        n += e == 1;
    }
    PQclear(r);
    return failed ? -1 : n;
}

int consensus_pass(void)
{
    char err[512];
    PGresult *r = db_exec_once("cons_changed", 0, NULL, err, sizeof(err));
    if (!r) {
        log_warn("suspects: cannot list consensus disagreements: %s (hint: retried on the next pass)", err);
        return -1;
    }
    int changed = 0, failed = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int e = evaluate(PQgetvalue(r, i, 0));
        failed |= e < 0;
        changed += e == 1;
    }
    PQclear(r);
    int exposed = expose_pass();
    return failed || exposed < 0 ? -1 : changed + exposed;
}

void consensus_register(void)
{
    db_register("cons_changed", Q_CHANGED);
    db_register("cons_unexposed", Q_UNEXPOSED);
    db_register("cons_run_exposed", "UPDATE consensus_runs SET exposed_at = now() WHERE run_key = $1::bigint");
    db_register("cons_row",
                "SELECT r.run_id::text, r.job_id, r.user_name, r.command, r.nodes, d.step, d.name, d.occ, "
                "d.comm_ranks::text, d.comm_size, d.odd_ranks::text, d.clear, d.site::text, d.node, d.gpu, "
                "lockstep_consensus_signature(d.run_key), extract(epoch FROM now() - d.detected_at), d.win, "
                "coalesce((SELECT e.signature FROM consensus_evidence e WHERE e.run_key = d.run_key), '') "
                "FROM consensus_divergences d JOIN runs r USING (run_key) WHERE d.run_key = $1::bigint");
    db_register("cons_attested", "SELECT a.node, a.ranks::text FROM runs r JOIN attestations a ON a.job_id = "
                                 "r.job_id AND a.step_id = r.step_id WHERE r.run_key = $1::bigint ORDER BY a.node");
    db_register(
        "cons_manifests",
        "SELECT m.rank, CASE WHEN jsonb_typeof(m.manifest) = 'object' THEN (SELECT jsonb_object_agg(e.k, "
        "e.v) FROM jsonb_each(m.manifest) AS e(k, v) WHERE e.k = ANY('" NODE_OF_KEYS_SQL
        "'::text[]))::text END FROM manifests m WHERE m.run_key = $1::bigint AND m.rank < " GROUP_MAX_RANKS_TEXT);
    db_register("cons_repeats", "SELECT array_to_string(odd_nodes, ',') FROM consensus_evidence WHERE name = $1 AND "
                                "program = $2 AND run_key <> $3::bigint AND evaluated_at > now() - $4::interval AND "
                                "reason_code IN ('odd_rank', 'odd_node', 'pair', 'repeats') LIMIT 10000");
    db_register("cons_program_runs",
                "SELECT count(*) FROM runs WHERE command = $1 AND created_at > now() - $2::interval");
    db_register("cons_repeats_stale",
                "UPDATE consensus_evidence SET signature = '' WHERE name = $1 AND program = $2 AND run_key <> "
                "$3::bigint AND evaluated_at > now() - $4::interval AND reason_code <> 'repeats'");
    db_register("cons_exposures", "SELECT node, gpu, weight, rank::text FROM consensus_exposures WHERE run_key = "
                                  "$1::bigint");
    db_register("cons_exposures_clear", "DELETE FROM consensus_exposures WHERE run_key = $1::bigint");
    db_register("cons_node_seen",
                "INSERT INTO hw_nodes (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET last_seen = now()");
    db_register("cons_gpu_seen", "INSERT INTO hw_gpus (uuid, node, name) VALUES ($1, $2, $3) ON CONFLICT (uuid) DO "
                                 "UPDATE SET name = excluded.name, last_seen = now() WHERE hw_gpus.node = "
                                 "excluded.node RETURNING 1");
    db_register("cons_exposure_add",
                "INSERT INTO consensus_exposures (run_key, node, gpu, rank, weight) VALUES ($1::bigint, $2, $3, "
                "$4::int, $5::float8) ON CONFLICT (run_key, node, gpu) DO UPDATE SET weight = "
                "greatest(consensus_exposures.weight, excluded.weight)");
    db_register("cons_history", "INSERT INTO hw_history (node, gpu, kind, run_key, step, rank, weight, detail) "
                                "VALUES ($1, $2, $3, $4::bigint, $5::bigint, $6::int, $7::float8, $8)");
    db_register("cons_evidence_write",
                "INSERT INTO consensus_evidence (run_key, class, reason_code, reason, name, program, odd_nodes, "
                "signature) VALUES ($1::bigint, $2, $3, $4, $5, $6, coalesce(string_to_array(nullif($7, ''), ','), "
                "'{}'), $8) ON CONFLICT (run_key) DO "
                "UPDATE SET class = excluded.class, reason_code = excluded.reason_code, reason = excluded.reason, "
                "name = excluded.name, program = excluded.program, odd_nodes = excluded.odd_nodes, signature = "
                "excluded.signature, evaluated_at = now()");
}
