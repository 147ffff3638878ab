/* replay_plan.c - the designed experiment of a replay (server/rules/replay_plan.h). */
#include "server/rules/replay_plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/xalloc.h"

typedef char name_t[HOSTLIST_NAME_MAX];

int rp_node_usable(const char *state)
{
    static const char *const ok[] = {"idle", "mix", "mixed", "alloc", "allocated", "comp", "completing", NULL};
    if (!state || !*state)
        return 0;
    size_t len = strcspn(state, "*~#!%$@^-+");
    if (state[len] == '*' || state[len] == '~' || state[len] == '$' || state[len] == '@')
        return 0; /* not responding, powered off, reserved for maintenance, reboot pending */
    for (const char *const *s = ok; *s; s++)
        if (strlen(*s) == len && !strncmp(state, *s, len))
            return 1;
    return 0;
}

typedef struct cluster {
    const rp_node *nodes;
    int n;
} cluster;

static const char *state_of(const cluster *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->nodes[i].name, name))
            return c->nodes[i].state;
    return NULL;
}

/* unusable - the first node of `list` that cannot take a replay, described into `why`; NULL when all can. */
static const char *unusable(const cluster *c, name_t *list, int n, char *why, size_t cap)
{
    for (int i = 0; i < n; i++) {
        const char *st = state_of(c, list[i]);
        if (!st) {
            snprintf(why, cap, "%s is not in the cluster's node list (sinfo)", list[i]);
            return list[i];
        }
        if (!rp_node_usable(st)) {
            snprintf(why, cap, "%s is %s in Slurm and takes no job", list[i], st);
            return list[i];
        }
    }
    return NULL;
}

static void note(rp_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(rp_plan *p, const char *fmt, ...)
{
    if (p->nnotes >= RP_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->notes[p->nnotes++], sizeof(p->notes[0]), fmt, ap);
    va_end(ap);
}

static int place(rp_plan *p, int max, const char *role, int source, const char *nodes, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int place(rp_plan *p, int max, const char *role, int source, const char *nodes, const char *fmt, ...)
{
    if (p->n >= max)
        return -1;
    rp_place *x = &p->p[p->n++];
    x->role = role;
    x->source = source;
    snprintf(x->nodes, sizeof(x->nodes), "%s", nodes);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->why, sizeof(x->why), fmt, ap);
    va_end(ap);
    return 0;
}

/* in_group - 1 when `name` is one of the group's nodes. */
static int in_list(name_t *list, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i], name))
            return 1;
    return 0;
}

/* free_sets - up to `want` sets of `k` usable nodes outside `used` (idle ones first), as node lists in `out`.
 * Returns how many sets. */
static int free_sets(const cluster *c, name_t *used, int nused, int k, int want, char (*out)[RP_LIST_CAP], rp_plan *p)
{
    name_t *pick = xcalloc(RP_MAX_NODES, sizeof(name_t));
    int np = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < c->n && np < RP_MAX_NODES; i++) {
            const char *st = c->nodes[i].state;
            int idle = !strncmp(st, "idle", 4);
            if ((pass == 0) != idle || !rp_node_usable(st) || in_list(used, nused, c->nodes[i].name) ||
                in_list(pick, np, c->nodes[i].name))
                continue;
            if (c->nodes[i].suspect) {
                note(p, "%s is not a control: lockstepd already holds it a hardware suspect", c->nodes[i].name);
                continue;
            }
            snprintf(pick[np++], HOSTLIST_NAME_MAX, "%s", c->nodes[i].name);
        }
    int sets = 0;
    for (int s = 0; s < want && (s + 1) * k <= np; s++)
        if (hostlist_join(pick + s * k, k, out[sets], RP_LIST_CAP) == 0)
            sets++;
    free(pick);
    return sets;
}

/* Scratch space of one design (too large for some threads' stacks): the group's nodes, per run and in all. */
typedef struct plan_scratch {
    name_t used[RP_MAX_NODES];
    name_t mine[RP_MAX_RUNS][RP_MAX_PROBE * 4];
    char sets[RP_MAX_PLACEMENTS][RP_LIST_CAP];
    int nmine[RP_MAX_RUNS]; /* per run, its nodes (0: unknown) */
    int nused;              /* the group's nodes, every run's together */
} plan_scratch;

static int plan(const rp_group *g, const cluster *cl, int max, rp_plan *out, plan_scratch *w);

int rp_plan_make(const rp_group *g, const rp_node *nodes, int nnodes, int max, rp_plan *out)
{
    cluster c = {nodes, nnodes};
    plan_scratch *w = xcalloc(1, sizeof(*w));
    int rc = plan(g, &c, max, out, w);
    free(w);
    return rc;
}

/* group_nodes - each run's nodes (w->mine, w->nmine; none for a run whose step no slurmstepd attested, noted)
 * and the group's (w->used). 0, or -1 with a note when a run's node list cannot be read. */
static int group_nodes(const rp_group *g, rp_plan *out, plan_scratch *w)
{
    w->nused = 0;
    for (int r = 0; r < g->nruns; r++) {
        if (!g->runs[r].nodes || !*g->runs[r].nodes) { /* no replay goes where a job only said it ran */
            w->nmine[r] = 0;
            note(out,
                 "run %s: slurmstepd attested no node list for its step, so its nodes are unknown: no replay "
                 "is placed on them",
                 g->runs[r].id);
            continue;
        }
        w->nmine[r] = hostlist_expand(g->runs[r].nodes, w->mine[r], RP_MAX_PROBE * 4);
        if (w->nmine[r] <= 0) {
            note(out, "run %s has no node list Lockstep can read ('%s')", g->runs[r].id, g->runs[r].nodes);
            return -1;
        }
        for (int i = 0; i < w->nmine[r] && w->nused < RP_MAX_NODES; i++)
            if (!in_list(w->used, w->nused, w->mine[r][i]))
                snprintf(w->used[w->nused++], HOSTLIST_NAME_MAX, "%s", w->mine[r][i]);
    }
    return 0;
}

/* plan_in_place - a cause that is software by nature: each run again where it ran. */
static void plan_in_place(const rp_group *g, const cluster *c, int max, rp_plan *out, plan_scratch *w)
{
    char why[320];
    for (int r = 0; r < g->nruns; r++) {
        if (!w->nmine[r])
            continue; /* noted above */
        if (unusable(c, w->mine[r], w->nmine[r], why, sizeof(why)))
            note(out, "run %s cannot run again on its nodes: %s", g->runs[r].id, why);
        else
            place(out, max, "run-again", r, g->runs[r].nodes,
                  "the run again where it ran: the finer trace names the record (the cause decides)");
    }
}

/* plan_three_run - a majority names the odd run: it again on its nodes, a majority run's job there, the odd
 * run's job on the majority's nodes, and controls outside the group. */
static void plan_three_run(const rp_group *g, const cluster *c, int max, rp_plan *out, plan_scratch *w)
{
    name_t(*mine)[RP_MAX_PROBE * 4] = w->mine;
    const int *nmine = w->nmine;
    char why[320];
    int o = g->odd, m = -1;
    if (!nmine[o]) {
        note(out, "the odd run's nodes are unknown: its job can neither run again where it ran nor be sized for "
                  "other nodes");
        return;
    }
    /* A majority run on usable nodes of the odd run's size, preferably. */
    for (int pass = 0; pass < 2 && m < 0; pass++)
        for (int r = 0; r < g->nruns && m < 0; r++)
            if (r != o && g->runs[r].content != g->runs[o].content && nmine[r] == nmine[o] &&
                (pass == 1 || !unusable(c, mine[r], nmine[r], why, sizeof(why))))
                m = r;
    const char *bad_o = unusable(c, mine[o], nmine[o], why, sizeof(why));
    if (bad_o) {
        note(out, "the odd run's nodes take no replay: %s; the divergence cannot be re-run where it happened", why);
    } else {
        place(out, max, "odd-again", o, g->runs[o].nodes,
              "the odd run's job on its own nodes again: does the divergence come back where it happened?");
        if (m >= 0)
            place(out, max, "majority-on-odd-nodes", m, g->runs[o].nodes,
                  "a majority run's job on the odd run's nodes: does the divergence follow the nodes?");
    }
    if (m < 0)
        note(out, "no majority run has the odd run's node count: the jobs cannot be swapped");
    else if (unusable(c, mine[m], nmine[m], why, sizeof(why)))
        note(out, "the majority runs' nodes take no replay (%s): the odd run's job cannot run there", why);
    else
        place(out, max, "odd-on-majority-nodes", o, g->runs[m].nodes,
              "the odd run's job on a majority run's nodes: is its job sound elsewhere?");
    int ns = free_sets(c, w->used, w->nused, nmine[o], max - out->n, w->sets, out);
    for (int s = 0; s < ns; s++)
        place(out, max, "odd-on-other-nodes", o, w->sets[s],
              "the odd run's job on nodes outside the group: a control at replay time");
    if (!ns)
        note(out, "no %d usable node%s outside the group for a control", nmine[o], nmine[o] == 1 ? "" : "s");
}

/* plan_two_run - two runs, or no majority: the first run and the first whose content differs from it, each
 * again, swapped, and on nodes outside the group (the third opinion). */
static void plan_two_run(const rp_group *g, const cluster *c, int max, rp_plan *out, plan_scratch *w)
{
    name_t(*mine)[RP_MAX_PROBE * 4] = w->mine;
    const int *nmine = w->nmine;
    char why[320];
    int a = 0, b = -1;
    for (int r = 1; r < g->nruns && b < 0; r++)
        if (g->runs[r].content != g->runs[a].content || g->runs[a].content < 0)
            b = r;
    if (b < 0)
        b = 1;
    const int ab[2] = {a, b};
    int ok[2];
    for (int i = 0; i < 2; i++) {
        int r = ab[i];
        ok[i] = nmine[r] && !unusable(c, mine[r], nmine[r], why, sizeof(why));
        if (!nmine[r])
            continue; /* noted above */
        if (!ok[i])
            note(out, "run %s cannot run again on its nodes: %s", g->runs[r].id, why);
        else
            place(out, max, "run-again", r, g->runs[r].nodes,
                  "the run's job on its own nodes again: does it repeat itself?");
    }
    for (int i = 0; i < 2; i++) {
        int r = ab[i], other = ab[1 - i];
        if (!nmine[r] || !nmine[other])
            continue; /* noted above */
        if (nmine[r] != nmine[other])
            note(out, "the runs have different node counts: their jobs cannot be swapped");
        else if (ok[1 - i])
            place(out, max, "swapped", r, g->runs[other].nodes,
                  "the run's job on the other run's nodes: does the result follow the nodes or the job?");
    }
    int src = nmine[a] ? a : b; /* a control runs a job whose node count is known */
    if (!nmine[src]) {
        note(out, "neither run's nodes are known: no control can be sized");
        return;
    }
    int ns = free_sets(c, w->used, w->nused, nmine[src], max - out->n, w->sets, out);
    for (int s = 0; s < ns; s++)
        place(out, max, "other-nodes", src, w->sets[s],
              "on nodes outside the group: the third opinion that says which of the two results is right");
    if (!ns)
        note(out,
             "no %d usable node%s outside the group: without a third opinion two results cannot be told apart "
             "if each follows its nodes",
             nmine[src], nmine[src] == 1 ? "" : "s");
}

static int plan(const rp_group *g, const cluster *cl, int max, rp_plan *out, plan_scratch *w)
{
    memset(out, 0, sizeof(*out));
    if (max < 1 || max > RP_MAX_PLACEMENTS)
        max = RP_MAX_PLACEMENTS;
    out->kind = g->software ? "in-place" : g->odd >= 0 ? "three-run" : "two-run";
    if (g->nruns < 2 || g->nruns > RP_MAX_RUNS) {
        note(out, "a replay needs a group of 2 to %d runs; this one has %d", RP_MAX_RUNS, g->nruns);
        return -1;
    }
    if (group_nodes(g, out, w) < 0)
        return -1;
    if (g->software)
        plan_in_place(g, cl, max, out, w);
    else if (g->odd >= 0)
        plan_three_run(g, cl, max, out, w);
    else
        plan_two_run(g, cl, max, out, w);
    return 0;
}
