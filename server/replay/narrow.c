/* narrow.c - replay experiments: designed and stored (narrow_create), their jobs recorded (server/replay/narrow.h);
 * narrow_read.c shows them, narrow_eval.c judges them. */
#include "server/replay/narrow.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"
#include "common/json/node_of.h"
#include "common/record.h"
#include "server/rules/replay.h"
#include "server/twins/findings.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/replay/narrow_int.h"
#include "server/store/db.h"
#include "server/store/sql.h"

static int fail(int *status, int code, srv_error *e, const char *fact, const char *detail, const char *hint)
{
    *status = code;
    return srv_error_set(e, fact, detail, hint);
}

static const char *str_of(json_t *o, const char *key, const char *dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* int_of - member `key` of `o` in lo..hi (dflt when absent); -1 with `bad` set when not an integer in range. */
static long long int_of(json_t *o, const char *key, long long lo, long long hi, long long dflt, int *bad)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return dflt;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        *bad = 1;
        return dflt;
    }
    return json_integer_value(v);
}

int narrow_probe(const char *run_key, const int *origin, int norigin, const char *nodes, char *probe, size_t pcap,
                 char *gpus, size_t gcap, char *err, size_t ecap)
{
    char ranks[400];
    db_int_array_text(origin, norigin, ranks, sizeof(ranks));
    const char *p[] = {run_key, ranks};
    /* Which node ran which rank is slurmstepd's word (attestations), never the job's: a manifest only names the
     * GPU of a rank the node's attestation lists, and only when it does not name another host
     * (common/json/node_of.h; the manifest cut to the keys that rule reads). Nodes in the order of their first
     * origin rank. */
    PGresult *r = db_exec_once("narrow_probe_nodes", 2, p, err, ecap);
    if (!r)
        return -1;
    size_t pl = 0, gl = 0;
    probe[0] = gpus[0] = 0;
    for (int i = 0; i < PQntuples(r); i++) { /* one entry per node (attestations are per node) */
        json_t *doc = PQgetisnull(r, i, 1) ? NULL : json_loads(PQgetvalue(r, i, 1), 0, NULL);
        node_facts f = {PQgetvalue(r, i, 0), 0, NULL};
        node_place at;
        node_of_rank(doc, &f, &at);
        if (pl < pcap)
            pl += (size_t)snprintf(probe + pl, pcap - pl, "%s%s", i ? "," : "", PQgetvalue(r, i, 0));
        if (gl < gcap)
            gl += (size_t)snprintf(gpus + gl, gcap - gl, "%s%s", i ? "," : "", at.gpu);
        json_decref(doc);
    }
    PQclear(r);
    if (!probe[0]) {
        /* Nothing attested: a replay placed on one node (Slurm's --nodelist) ran its origin ranks there. */
        char names[2][HOSTLIST_NAME_MAX];
        if (nodes && hostlist_expand(nodes, names, 2) == 1) {
            snprintf(probe, pcap, "%s", names[0]);
            snprintf(gpus, gcap, "%s", "");
        }
    }
    return 0;
}

/* node_array - the request's nodes as rp_node rows (strings borrowed from `arr`). Returns how many, -1 when
 * malformed. */
static int node_array(json_t *arr, rp_node *out, int max)
{
    size_t i;
    json_t *o;
    int n = 0;
    if (!json_is_array(arr) || !json_array_size(arr) || json_array_size(arr) > (size_t)max)
        return -1;
    json_array_foreach(arr, i, o)
    {
        const char *name = str_of(o, "name", NULL), *state = str_of(o, "state", NULL);
        if (!name || !state || !*name || strlen(name) >= HOSTLIST_NAME_MAX ||
            strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "abcdefghijklmnopqrstuvwxyz"
                         "0123456789._-") != strlen(name))
            return -1;
        out[n++] = (rp_node){name, state, 0};
    }
    return n;
}

/* The group's runs as the design needs them. */
typedef struct nrun {
    const char *key, *id, *job, *command, *mode, *resume;
    const char *nodes;    /* the node list slurmstepd attested for its step; "" when none was (nodes unknown) */
    const char *reported; /* the node list the job reported (shown, never placed on) */
    const char *argv;     /* its registered argv as a JSON array; "" when none */
    const char *run_as;   /* its attested user; NULL when none was attested (its job is not replayed) */
    int ranks;
    long long start;
    char probe[512], gpus[512];
} nrun;

/* store_placement - placement `k` of narrow `ids`: run `src`'s job on pl->nodes, as words (narrow_cmd_make) and as
 * src's attested user, with the settings it records by (narrow_settings_make: its rules, its trace with the
 * narrow's `trace` window, its environment and directory). A run whose user was never attested, or that gave nothing to
 * run, is decided not-run now, with the reason. Inside the caller's transaction. Returns 0, or -1 with the database's
 * message. */
static int store_placement(const char *ids, int k, const rp_place *pl, const nrun *src, long long from, long long to,
                           const char *trace, char *err, size_t cap)
{
    narrow_cmd cmd;
    if (narrow_cmd_make(src->key, src->argv, src->command, src->resume, from, to, &cmd, err, cap) < 0)
        return -1;
    json_t *settings = narrow_settings_make(src->key, trace, err, cap); /* it records as its run did */
    if (!settings) {
        json_decref(cmd.argv);
        return -1;
    }
    char *settings_txt = json_dumps(settings, JSON_COMPACT);
    json_decref(settings);
    char idx[16], why[900], not_run[600] = "";
    snprintf(idx, sizeof(idx), "%d", k);
    snprintf(why, sizeof(why), "%s%s", pl->why, cmd.how);
    if (!src->run_as)
        snprintf(not_run, sizeof(not_run),
                 "not replayed: slurmstepd never attested the user of run %s (job %s), and lockstep replays a job "
                 "only as its owner",
                 src->id, src->job);
    else if (!json_array_size(cmd.argv))
        snprintf(not_run, sizeof(not_run), "not replayed: run %s (job %s) registered no command to run", src->id,
                 src->job);
    char *argv = json_dumps(cmd.argv, JSON_COMPACT);
    json_decref(cmd.argv);
    const char *pp[] = {ids,
                        idx,
                        pl->role,
                        src->key,
                        pl->nodes,
                        why,
                        cmd.command,
                        cmd.resume_step[0] ? cmd.resume_step : NULL,
                        argv,
                        src->run_as,
                        not_run[0] ? not_run : NULL,
                        settings_txt};
    int rc = db_do("narrow_placement_add", 12, pp, err, cap);
    free(argv);
    free(settings_txt);
    return rc;
}

/* mark_suspects - mark the nodes lockstepd already suspects (or drained): they are never controls
 * (server/rules/replay.h). 0, or -1 with the database's message. */
static int mark_suspects(rp_node *nodes, int nnodes, char *err, size_t cap)
{
    PGresult *sus = db_exec_once("narrow_suspect_nodes", 0, NULL, err, cap);
    if (!sus)
        return -1;
    for (int i = 0; i < nnodes; i++)
        for (int k = 0; k < PQntuples(sus); k++)
            if (!strcmp(nodes[i].name, PQgetvalue(sus, k, 0)))
                nodes[i].suspect = 1;
    PQclear(sus);
    return 0;
}

/* The group's runs as the design reads them: their rows, content classes at the first divergence (the
 * majority's is 0, "A") and which one is odd. `res` and `rs` are owned (nruns_release). */
typedef struct nruns {
    PGresult *res;
    nrun *rs;
    int nr;
    rp_run rr[RP_MAX_RUNS];
    char keys[RP_MAX_RUNS][160]; /* per content class, what the runs hold at the first divergence */
    int nkeys, majority, odd;
} nruns;

/* nruns_release - free what `R` holds (not `R`). */
static void nruns_release(nruns *R)
{
    free(R->rs);
    PQclear(R->res);
}

/* read_runs - the runs of `group` (the first RP_MAX_RUNS) into `R`, with their content classes at the first
 * divergence of `vd` and the nodes that ran its origin ranks. 0, or -1 with the database's message (what was read
 * stays in `R` for nruns_release). */
static int read_runs(const char *group, const grp_findings *vd, nruns *R, char *err, size_t cap)
{
    const char *p1[] = {group};
    /* A run's nodes for the design are those slurmstepd attested for its step (the step's node list, or the nodes
     * that attested), never the list the job reported. */
    PGresult *runs = R->res = db_exec_once("narrow_runs", 1, p1, err, cap);
    if (!runs)
        return -1;
    int nr = R->nr = PQntuples(runs) < RP_MAX_RUNS ? PQntuples(runs) : RP_MAX_RUNS;
    R->rs = xcalloc((size_t)nr + 1, sizeof(*R->rs));
    const divergence *first = vd->first_div;
    R->nkeys = 0;
    R->majority = -1;
    R->odd = -1;
    const char *odd_id = first->odd_run_id;
    for (int i = 0; i < nr; i++) {
        nrun *x = &R->rs[i];
        x->key = PQgetvalue(runs, i, 0);
        x->id = PQgetvalue(runs, i, 1);
        x->job = PQgetvalue(runs, i, 2);
        x->nodes = PQgetvalue(runs, i, 3);
        x->command = PQgetvalue(runs, i, 4);
        x->mode = PQgetvalue(runs, i, 5);
        x->ranks = atoi(PQgetvalue(runs, i, 6));
        x->start = strtoll(PQgetvalue(runs, i, 7), NULL, 10);
        x->resume = PQgetvalue(runs, i, 8);
        x->argv = PQgetvalue(runs, i, 9);
        x->run_as = PQgetisnull(runs, i, 10) ? NULL : PQgetvalue(runs, i, 10);
        x->reported = PQgetvalue(runs, i, 11);
        const div_entry *en = div_entry_of(first->entries, first->nentries, x->id);
        char k[160];
        div_content_key(en, k, sizeof(k));
        int c;
        for (c = 0; c < R->nkeys && strcmp(R->keys[c], k); c++)
            ;
        if (c == R->nkeys)
            snprintf(R->keys[R->nkeys++], sizeof(R->keys[0]), "%s", k);
        R->rr[i] = (rp_run){x->id, x->nodes, c};
        if (en && en->majority == DIV_MAJORITY_IN)
            R->majority = c;
        if (odd_id && !strcmp(odd_id, x->id))
            R->odd = i;
        if (narrow_probe(x->key, vd->origin, vd->norigin, x->nodes, x->probe, sizeof(x->probe), x->gpus,
                         sizeof(x->gpus), err, cap) < 0)
            return -1;
    }
    if (R->majority < 0)
        R->odd = -1;
    /* The majority's result is A, whatever the order the runs registered in. */
    if (R->majority > 0) {
        char tmp[sizeof(R->keys[0])];
        memcpy(tmp, R->keys[0], sizeof(tmp));
        memcpy(R->keys[0], R->keys[R->majority], sizeof(tmp));
        memcpy(R->keys[R->majority], tmp, sizeof(tmp));
        for (int i = 0; i < nr; i++)
            R->rr[i].content = R->rr[i].content == R->majority ? 0
                               : R->rr[i].content == 0         ? R->majority
                                                               : R->rr[i].content;
        R->majority = 0;
    }
    return 0;
}

/* The replay window around the first divergence's step, and the finer trace the replays record inside it. */
typedef struct nwindow {
    int64_t S;
    long long from, to;
    const char *level;
    char trace[600];
} nwindow;

/* window_of - `window` steps either side of the first divergence of `vd`, traced at `level` on its origin ranks. */
static void window_of(const grp_findings *vd, const char *level, long long window, nwindow *w)
{
    int64_t S = w->S = vd->first_div->step;
    long long from = w->from = S - window < 0 ? 0 : S - window, to = w->to = S + window;
    char ranks_txt[300] = "";
    size_t rl = 0;
    w->level = level;
    for (int k = 0; k < vd->norigin && rl < sizeof(ranks_txt) - 12; k++)
        rl += (size_t)snprintf(ranks_txt + rl, sizeof(ranks_txt) - rl, "%s%d", k ? "," : "", vd->origin[k]);
    snprintf(w->trace, sizeof(w->trace), "collectives;%s:steps=%lld-%lld%s%s", level, from, to, rl ? ":ranks=" : "",
             ranks_txt);
}

/* design_text - the design document of the experiment (docs/server.md, Narrows) as compact JSON text; the
 * caller frees it. */
static char *design_text(const grp_findings *vd, const nruns *R, const rp_node *nodes, int nnodes, const rp_plan *plan,
                         long long maxp, int64_t S)
{
    const divergence *first = vd->first_div;
    const nrun *rs = R->rs;
    const rp_run *rr = R->rr;
    int nr = R->nr, majority = R->majority, odd = R->odd;
    json_t *design = json_object(), *jruns = json_array(), *jnodes = json_array(), *jnotes = json_array(),
           *origin = json_array(), *contents = json_array();
    for (int k = 0; k < vd->norigin; k++)
        json_array_append_new(origin, json_integer(vd->origin[k]));
    for (int c = 0; c < R->nkeys; c++) {
        json_t *ids = json_array();
        for (int i = 0; i < nr; i++)
            if (rr[i].content == c)
                json_array_append_new(ids, json_string(rs[i].id));
        char label[8];
        snprintf(label, sizeof(label), "%c", 'A' + c % 26);
        json_array_append_new(contents, json_pack("{s:i, s:s, s:o, s:b, s:s}", "content", c, "label", label, "runs",
                                                  ids, "majority", c == majority, "at_first_divergence", R->keys[c]));
    }
    for (int i = 0; i < nr; i++)
        json_array_append_new(jruns, json_pack("{s:s, s:s, s:s, s:s, s:s?, s:i, s:b, s:b, s:s, s:s, s:n}", "run_id",
                                               rs[i].id, "job_id", rs[i].job, "nodes", rs[i].nodes, "reported_nodes",
                                               rs[i].reported, "user", rs[i].run_as, "content", rr[i].content,
                                               "majority", rr[i].content == majority, "odd", i == odd, "probe_nodes",
                                               rs[i].probe, "gpus", rs[i].gpus, "diverged"));
    for (int i = 0; i < nnodes; i++)
        json_array_append_new(jnodes, json_pack("{s:s, s:s, s:b, s:b}", "name", nodes[i].name, "state", nodes[i].state,
                                                "usable", rp_node_usable(nodes[i].state), "suspect", nodes[i].suspect));
    for (int i = 0; i < plan->nnotes; i++)
        json_array_append_new(jnotes, json_string(plan->notes[i]));
    json_object_set_new(design, "kind", json_string(plan->kind));
    json_object_set_new(design, "cause", json_string(cause_name(vd->cause)));
    json_object_set_new(design, "cause_detail", json_string(vd->cause_why));
    json_object_set_new(design, "origin_ranks", origin);
    json_object_set_new(design, "first_divergence",
                        json_pack("{s:I, s:i, s:s, s:I, s:s?}", "step", (json_int_t)S, "rank", first->rank, "name",
                                  first->name, "occurrence", (json_int_t)first->occurrence, "odd_run_id",
                                  first->odd_run_id));
    json_object_set_new(design, "majority_content", majority >= 0 ? json_integer(majority) : json_null());
    json_object_set_new(design, "contents", contents);
    json_object_set_new(design, "runs", jruns);
    json_object_set_new(design, "nodes", jnodes);
    json_object_set_new(design, "notes", jnotes);
    json_object_set_new(design, "max_placements", json_integer(maxp));
    char *design_txt = json_dumps(design, JSON_COMPACT);
    json_decref(design);
    return design_txt;
}

/* store_narrow - in one transaction, the narrow of `group` (its window `w`, design, actor and `timeout` in
 * seconds) and the placements of `plan` (runs `rs`). Returns the new narrow's id, or -1 with the database's
 * message (nothing stored). */
static long long store_narrow(const char *group, const nwindow *w, const char *design_txt, const char *actor,
                              long long timeout, const rp_plan *plan, const nrun *rs, char *err, size_t cap)
{
    if (sql_begin(err, cap) < 0)
        return -1;
    PGresult *seq = db_exec_once("narrow_next_id", 0, NULL, err, cap);
    if (!seq)
        goto out_rollback;
    long long id = strtoll(PQgetvalue(seq, 0, 0), NULL, 10);
    PQclear(seq);
    char ids[32], ngroup[300], st[32], fs[32], ts[32], tmo[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    snprintf(ngroup, sizeof(ngroup), "%.200s.narrow-%lld", group, id);
    snprintf(st, sizeof(st), "%" PRId64, w->S);
    snprintf(fs, sizeof(fs), "%lld", w->from);
    snprintf(ts, sizeof(ts), "%lld", w->to);
    snprintf(tmo, sizeof(tmo), "%lld seconds", timeout);
    const char *pn[] = {ids, group, ngroup, st, fs, ts, w->level, w->trace, design_txt, actor, tmo};
    if (db_do("narrow_add", 11, pn, err, cap) < 0)
        goto out_rollback;
    for (int k = 0; k < plan->n; k++)
        if (store_placement(ids, k, &plan->p[k], &rs[plan->p[k].source], w->from, w->to, w->trace, err, cap) < 0)
            goto out_rollback;
    if (sql_commit(err, cap) < 0)
        return -1;
    log_info("narrow %lld of group %s: %s design, %d placements, window %lld-%lld, replay group %s", id, group,
             plan->kind, plan->n, w->from, w->to, ngroup);
    return id;
out_rollback:
    sql_rollback();
    return -1;
}

long long narrow_create(const char *group, json_t *req, int *status, srv_error *e)
{
    char err[512], detail[1200];
    int bad = 0;
    const char *level = str_of(req, "level", "modules");
    long long window = int_of(req, "window", 0, 1000, 1, &bad);
    long long maxp = int_of(req, "placements", 1, RP_MAX_PLACEMENTS, 6, &bad);
    long long timeout = int_of(req, "timeout_s", 5, 86400, 900, &bad);
    const char *actor = str_of(req, "actor", "");
    if (bad)
        return fail(status, 400, e, "bad narrow request",
                    "window must be 0..1000 steps, placements 1..16, timeout_s 5..86400",
                    "see docs/server.md, Narrows");
    if (strcmp(level, "modules") && strcmp(level, "ops"))
        return fail(status, 400, e, "bad narrow request", "level must be modules or ops",
                    "see docs/server.md, Narrows");
    rp_node nodes[RP_MAX_NODES];
    int nnodes = node_array(json_object_get(req, "nodes"), nodes, RP_MAX_NODES);
    if (nnodes < 0)
        return fail(
            status, 400, e, "bad narrow request",
            "\"nodes\" must list the cluster's nodes as [{\"name\": \"n1\", \"state\": \"idle\"}, ...] (1 to 256; "
            "names of letters, digits, '.', '_' and '-')",
            "the lockstep command sends sinfo's node states; see docs/server.md, Narrows");
    if (mark_suspects(nodes, nnodes, err, sizeof(err)) < 0)
        return fail(status, 503, e, "database unavailable", err, "retry shortly");
    grp_findings vd;
    int got = findings_load(group, &vd, err, sizeof(err));
    if (got < 0)
        return fail(status, 503, e, "database unavailable", err, "retry shortly");
    if (got == 0) {
        snprintf(detail, sizeof(detail), "no run belongs to twin group \"%.255s\"", group);
        return fail(status, 404, e, "unknown twin group", detail, "list runs with GET /api/v1/runs?group=NAME");
    }
    long long id = -1;
    nruns *R = xcalloc(1, sizeof(*R));
    if (strcmp(vd.status, "diverged") || !vd.first_div) {
        snprintf(detail, sizeof(detail), "group %.255s is %s (%s): nothing to narrow", group, vd.status, vd.status_why);
        fail(status, 409, e, "narrow works on a diverged group", detail, "see lockstep twins GROUP");
        goto out_release;
    }
    if (read_runs(group, &vd, R, err, sizeof(err)) < 0) {
        fail(status, 503, e, "database unavailable", err, "retry shortly");
        goto out_release;
    }
    int software = vd.cause == CAUSE_CONFIGURATION || vd.cause == CAUSE_EVERY_RANK || vd.cause == CAUSE_OPERATION;
    rp_group g = {R->rr, R->nr, R->odd, software};
    rp_plan plan;
    if (rp_plan_make(&g, nodes, nnodes, (int)maxp, &plan) < 0) {
        fail(status, 409, e, "cannot design a replay of this group", plan.notes[0], "see docs/cli.md, narrow");
        goto out_release;
    }
    if (PQntuples(R->res) > RP_MAX_RUNS && plan.nnotes < RP_MAX_NOTES)
        snprintf(plan.notes[plan.nnotes++], sizeof(plan.notes[0]),
                 "only the first %d of the group's %d runs are considered", RP_MAX_RUNS, PQntuples(R->res));
    nwindow w;
    window_of(&vd, level, window, &w);
    char *design_txt = design_text(&vd, R, nodes, nnodes, &plan, maxp, w.S);
    id = store_narrow(group, &w, design_txt, actor, timeout, &plan, R->rs, err, sizeof(err));
    free(design_txt);
    if (id < 0)
        fail(status, 503, e, "database unavailable", err, "retry shortly");
out_release:
    nruns_release(R);
    free(R);
    findings_release(&vd);
    return id;
}

int narrow_set_jobs(long long id, json_t *req, int *status, srv_error *e)
{
    char err[512], ids[32];
    snprintf(ids, sizeof(ids), "%lld", id);
    json_t *pl = json_object_get(req, "placements");
    if (!json_is_array(pl) || !json_array_size(pl))
        return fail(status, 400, e, "bad request",
                    "\"placements\" must be a list of {\"index\": I, \"job_id\": \"J\"} or {\"index\": I, \"error\": "
                    "\"why\"}",
                    "see docs/server.md, Narrows");
    const char *p1[] = {ids};
    PGresult *r = db_exec_once("narrow_state", 1, p1, err, sizeof(err));
    if (!r)
        return fail(status, 503, e, "database unavailable", err, "retry shortly");
    if (!PQntuples(r)) {
        PQclear(r);
        return fail(status, 404, e, "unknown narrow", "no narrow has this id",
                    "list a group's with GET /api/v1/twins/G/narrows");
    }
    int running = !strcmp(PQgetvalue(r, 0, 0), "running");
    PQclear(r);
    if (!running)
        return fail(status, 409, e, "the narrow is finished", "its verdict is given; jobs can no longer be added",
                    "start another with lockstep narrow GROUP");
    size_t i;
    json_t *o;
    json_array_foreach(pl, i, o)
    {
        json_t *idx = json_object_get(o, "index");
        const char *job = str_of(o, "job_id", NULL), *why = str_of(o, "error", NULL);
        if (!json_is_integer(idx) || (!job == !why) || (job && (!*job || strlen(job) > 64)))
            return fail(status, 400, e, "bad request",
                        "each placement needs an integer index and either a job_id (1-64 bytes) or an error",
                        "see docs/server.md, Narrows");
        char ix[32];
        snprintf(ix, sizeof(ix), "%" JSON_INTEGER_FORMAT, json_integer_value(idx));
        const char *pj[] = {ids, ix, job};
        const char *pw[] = {ids, ix, why};
        PGresult *u = job ? db_exec_once("narrow_placement_job", 3, pj, err, sizeof(err))
                          : db_exec_once("narrow_placement_not_run", 3, pw, err, sizeof(err));
        if (!u)
            return fail(status, 503, e, "database unavailable", err, "retry shortly");
        int n = PQntuples(u);
        PQclear(u);
        if (!n) {
            char d[200];
            snprintf(d, sizeof(d), "narrow %lld has no undecided placement %s", id, ix);
            return fail(status, 400, e, "no such placement", d, "read the narrow with GET /api/v1/narrows/ID");
        }
    }
    return 0;
}

void narrow_register(void)
{
    narrow_cmd_register();
    narrow_settings_register();
    db_register(
        "narrow_probe_nodes",
        "SELECT a.node, (SELECT CASE WHEN jsonb_typeof(m.manifest) = 'object' THEN (SELECT jsonb_object_agg(e.k, "
        "e.v) FROM jsonb_each(m.manifest) AS e(k, v) WHERE e.k = ANY('" NODE_OF_KEYS_SQL "'::text[]))::text END "
        "FROM manifests m WHERE m.run_key = r.run_key AND m.rank = ANY(a.ranks) AND ($2::int[] = '{}' OR m.rank = "
        "ANY($2::int[])) ORDER BY m.rank LIMIT 1) FROM runs r JOIN attestations a ON a.job_id = r.job_id AND "
        "a.step_id = r.step_id WHERE r.run_key = $1::bigint AND ($2::int[] = '{}' OR a.ranks && $2::int[]) "
        "ORDER BY (SELECT min(x) FROM unnest(a.ranks) x WHERE $2::int[] = '{}' OR x = ANY($2::int[])), a.node");
    db_register("narrow_placement_add",
                "INSERT INTO narrow_placements (narrow_id, idx, role, source_run_key, nodes, why, command, "
                "resume_step, argv, run_as, outcome, detail, decided_at, settings) VALUES ($1, $2, $3, $4, $5, $6, "
                "$7, $8, ARRAY(SELECT w FROM jsonb_array_elements_text($9::jsonb) WITH ORDINALITY AS a(w, i) ORDER "
                "BY i), $10, CASE WHEN $11::text IS NOT NULL THEN 'not-run' END, coalesce($11, ''), "
                "CASE WHEN $11::text IS NOT NULL THEN now() END, $12::jsonb)");
    db_register("narrow_suspect_nodes", "SELECT name FROM hw_nodes WHERE state IN ('suspect', 'drained')");
    db_register("narrow_runs",
                "SELECT r.run_key::text, r.run_id::text, r.job_id, coalesce(a.nodes, ''), r.command, r.mode, "
                "r.ranks, r.start_step, r.resume_template, coalesce(array_to_json(r.argv)::text, ''), "
                "r.attested_user, r.nodes FROM runs r LEFT JOIN LATERAL (SELECT coalesce(max(nullif(nodes, '')), "
                "string_agg(node, ',' ORDER BY node_index NULLS LAST, node)) AS nodes FROM attestations "
                "WHERE job_id = r.job_id AND step_id = r.step_id) a ON true WHERE r.twin_group = $1 "
                "ORDER BY r.run_key");
    db_register("narrow_next_id", "SELECT nextval('narrows_id_seq')");
    db_register("narrow_add",
                "INSERT INTO narrows (id, twin_group, narrow_group, step, from_step, to_step, level, trace, design, "
                "actor, deadline_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, now() + $11::interval)");
    db_register("narrow_state", "SELECT state FROM narrows WHERE id = $1::bigint");
    db_register("narrow_placement_job",
                "UPDATE narrow_placements SET job_id = $3 WHERE narrow_id = $1::bigint AND idx = "
                "$2::int AND outcome IS NULL RETURNING 1");
    db_register("narrow_placement_not_run",
                "UPDATE narrow_placements SET outcome = 'not-run', detail = $3, decided_at = now() "
                "WHERE narrow_id = $1::bigint AND idx = $2::int AND outcome IS NULL RETURNING 1");
}
