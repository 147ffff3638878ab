/* replay.c - the designed experiment of a replay and its verdict (server/compare/replay.h). */
#include "server/compare/replay.h"

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

/* ---- the design ---- */

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
static int free_sets(const cluster *c, name_t *used, int nused, int k, int want, char (*out)[RP_LIST_CAP],
                     rp_plan *p)
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

/* Scratch space of one design (too large for some threads' stacks). */
typedef struct plan_scratch {
    name_t used[RP_MAX_NODES];
    name_t mine[RP_MAX_RUNS][RP_MAX_PROBE * 4];
    char sets[RP_MAX_PLACEMENTS][RP_LIST_CAP];
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

static int plan(const rp_group *g, const cluster *cl, int max, rp_plan *out, plan_scratch *w)
{
    name_t *used = w->used;
    name_t(*mine)[RP_MAX_PROBE * 4] = w->mine;
    char(*sets)[RP_LIST_CAP] = w->sets;
    const cluster c = *cl;
    int nmine[RP_MAX_RUNS], nused = 0;
    char why[320];
    memset(out, 0, sizeof(*out));
    if (max < 1 || max > RP_MAX_PLACEMENTS)
        max = RP_MAX_PLACEMENTS;
    out->kind = g->software ? "in-place" : g->odd >= 0 ? "three-run" : "two-run";
    if (g->nruns < 2 || g->nruns > RP_MAX_RUNS) {
        note(out, "a replay needs a group of 2 to %d runs; this one has %d", RP_MAX_RUNS, g->nruns);
        return -1;
    }
    for (int r = 0; r < g->nruns; r++) {
        nmine[r] = hostlist_expand(g->runs[r].nodes, mine[r], RP_MAX_PROBE * 4);
        if (nmine[r] <= 0) {
            note(out, "run %s has no node list Lockstep can read ('%s')", g->runs[r].id, g->runs[r].nodes);
            return -1;
        }
        for (int i = 0; i < nmine[r] && nused < RP_MAX_NODES; i++)
            if (!in_list(used, nused, mine[r][i]))
                snprintf(used[nused++], HOSTLIST_NAME_MAX, "%s", mine[r][i]);
    }
    if (g->software) {
        for (int r = 0; r < g->nruns; r++) {
            if (unusable(&c, mine[r], nmine[r], why, sizeof(why)))
                note(out, "run %s cannot run again on its nodes: %s", g->runs[r].id, why);
            else
                place(out, max, "run-again", r, g->runs[r].nodes,
                      "the run again where it ran: the finer trace names the record (the cause decides)");
        }
        return 0;
    }

    if (g->odd >= 0) {
        int o = g->odd, m = -1;
        /* A majority run on usable nodes of the odd run's size, preferably. */
        for (int pass = 0; pass < 2 && m < 0; pass++)
            for (int r = 0; r < g->nruns && m < 0; r++)
                if (r != o && g->runs[r].content != g->runs[o].content && nmine[r] == nmine[o] &&
                    (pass == 1 || !unusable(&c, mine[r], nmine[r], why, sizeof(why))))
                    m = r;
        const char *bad_o = unusable(&c, mine[o], nmine[o], why, sizeof(why));
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
        else if (unusable(&c, mine[m], nmine[m], why, sizeof(why)))
            note(out, "the majority runs' nodes take no replay (%s): the odd run's job cannot run there", why);
        else
            place(out, max, "odd-on-majority-nodes", o, g->runs[m].nodes,
                  "the odd run's job on a majority run's nodes: is its job sound elsewhere?");
        int ns = free_sets(&c, used, nused, nmine[o], max - out->n, sets, out);
        for (int s = 0; s < ns; s++)
            place(out, max, "odd-on-other-nodes", o, sets[s],
                  "the odd run's job on nodes outside the group: a control at replay time");
        if (!ns)
            note(out, "no %d usable node%s outside the group for a control", nmine[o], nmine[o] == 1 ? "" : "s");
        return 0;
    }

    /* Two runs, or no majority: the first run and the first whose content differs from it. */
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
        ok[i] = !unusable(&c, mine[r], nmine[r], why, sizeof(why));
        if (!ok[i])
            note(out, "run %s cannot run again on its nodes: %s", g->runs[r].id, why);
        else
            place(out, max, "run-again", r, g->runs[r].nodes, "the run's job on its own nodes again: does it repeat itself?");
    }
    for (int i = 0; i < 2; i++) {
        int r = ab[i], other = ab[1 - i];
        if (nmine[r] != nmine[other])
            note(out, "the runs have different node counts: their jobs cannot be swapped");
        else if (ok[1 - i])
            place(out, max, "swapped", r, g->runs[other].nodes,
                  "the run's job on the other run's nodes: does the result follow the nodes or the job?");
    }
    int ns = free_sets(&c, used, nused, nmine[a], max - out->n, sets, out);
    for (int s = 0; s < ns; s++)
        place(out, max, "other-nodes", a, sets[s],
              "on nodes outside the group: the third opinion that says which of the two results is right");
    if (!ns)
        note(out, "no %d usable node%s outside the group: without a third opinion two results cannot be told apart "
                  "if each follows its nodes", nmine[a], nmine[a] == 1 ? "" : "s");
    return 0;
}

/* ---- the verdict ---- */

static void step(rp_verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void step(rp_verdict *v, const char *fmt, ...)
{
    if (v->nsteps >= RP_MAX_STEPS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->steps[v->nsteps++], sizeof(v->steps[0]), fmt, ap);
    va_end(ap);
}

static void decide(rp_verdict *v, const char *verdict, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void decide(rp_verdict *v, const char *verdict, const char *fmt, ...)
{
    v->verdict = verdict;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->reason, sizeof(v->reason), fmt, ap);
    va_end(ap);
}

/* A small set of node names (borrowed pointers). */
typedef struct nset {
    const char *n[RP_MAX_EXEC * RP_MAX_PROBE];
    int len;
} nset;

static int nset_has(const nset *s, const char *x)
{
    for (int i = 0; i < s->len; i++)
        if (!strcmp(s->n[i], x))
            return 1;
    return 0;
}

static void nset_add(nset *s, const char *x)
{
    if (x && *x && !nset_has(s, x) && s->len < (int)(sizeof(s->n) / sizeof(s->n[0])))
        s->n[s->len++] = x;
}

static void nset_of(const rp_exec *e, nset *s)
{
    s->len = 0;
    for (int i = 0; i < e->nprobe; i++)
        nset_add(s, e->probe[i]);
}

static void nset_text(const nset *s, char *out, size_t cap)
{
    size_t l = 0;
    out[0] = 0;
    for (int i = 0; i < s->len && l < cap; i++)
        l += (size_t)snprintf(out + l, cap - l, "%s%s", i ? ", " : "", s->n[i]);
    if (!s->len)
        snprintf(out, cap, "(no node known)");
}

static int same_probe(const rp_exec *a, const rp_exec *b)
{
    nset x, y;
    nset_of(a, &x);
    nset_of(b, &y);
    if (x.len != y.len || !x.len)
        return 0;
    for (int i = 0; i < x.len; i++)
        if (!nset_has(&y, x.n[i]))
            return 0;
    return 1;
}

/* labels - the labels of executions `which` (1 per execution to list), joined. */
static void labels(const rp_facts *f, const int *which, char *out, size_t cap)
{
    size_t l = 0;
    out[0] = 0;
    for (int i = 0; i < f->n && l < cap; i++)
        if (which[i])
            l += (size_t)snprintf(out + l, cap - l, "%s%s", l ? "; " : "", f->e[i].label);
}

static const char *outcome_text(rp_outcome o)
{
    switch (o) {
    case RP_RAN:
        return "ran";
    case RP_FAILED:
        return "failed before the window was recorded";
    case RP_NOT_RUN:
        return "was never started";
    case RP_TIMED_OUT:
        return "had not recorded the window at the deadline";
    }
    return "?";
}

static void notes_text(const rp_facts *f, char *out, size_t cap)
{
    size_t l = 0;
    out[0] = 0;
    for (int i = 0; i < f->nnotes && l < cap; i++)
        l += (size_t)snprintf(out + l, cap - l, "%s%s", l ? "; " : "", f->notes[i]);
}

/* seen - how many executions produced content `k`. */
static int seen(const rp_facts *f, int n, int k)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += f->e[i].outcome == RP_RAN && f->e[i].content == k;
    return c;
}

void rp_judge(const rp_facts *f, rp_verdict *v)
{
    char a[600], b[600], c[300];
    int which[RP_MAX_EXEC];
    int n = f->n < RP_MAX_EXEC ? f->n : RP_MAX_EXEC;
    memset(v, 0, sizeof(*v));
    v->healthy = -1;
    for (int i = 0; i < RP_MAX_EXEC; i++)
        v->diverged[i] = -1;
    int replays = 0, ran = 0;
    for (int i = 0; i < n; i++)
        if (!f->e[i].original) {
            replays++;
            ran += f->e[i].outcome == RP_RAN;
        }
    step(v, "%d of %d replays recorded the window", ran, replays);

    /* 1. The cause. */
    if (f->cause_software) {
        if (f->majority >= 0) {
            v->healthy = f->majority;
            for (int i = 0; i < n; i++)
                v->diverged[i] = f->e[i].outcome == RP_RAN ? f->e[i].content != f->majority : -1;
        }
        step(v, "the cause is %s, which is software by nature", f->cause);
        decide(v, "software", "the cause is %s: %s; that does not depend on the hardware it ran on", f->cause,
               f->cause_why && *f->cause_why ? f->cause_why : "(no detail)");
        return;
    }

    /* 2. Nothing ran. */
    if (!ran) {
        size_t l = 0;
        a[0] = 0;
        for (int i = 0; i < n && l < sizeof(a); i++)
            if (!f->e[i].original)
                l += (size_t)snprintf(a + l, sizeof(a) - l, "%s%s %s", l ? "; " : "", f->e[i].label,
                                      outcome_text(f->e[i].outcome));
        notes_text(f, b, sizeof(b));
        decide(v, "inconclusive", "no replay recorded the window%s%s%s%s", a[0] ? ": " : "", a, b[0] ? "; " : "", b);
        return;
    }

    /* 3. Replays on the same nodes that disagree, one of them with a result no other execution produced (a
     * program that does not repeat itself makes a new result each time; a fault that comes and goes on a
     * node gives back the results seen before, and is judged below). */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const rp_exec *x = &f->e[i], *y = &f->e[j];
            if (x->original || y->original || x->outcome != RP_RAN || y->outcome != RP_RAN || x->content == y->content ||
                !same_probe(x, y) || (seen(f, n, x->content) > 1 && seen(f, n, y->content) > 1))
                continue;
            nset s;
            nset_of(x, &s);
            nset_text(&s, c, sizeof(c));
            step(v, "%s and %s ran on the same nodes (%s) and differ", x->label, y->label, c);
            decide(v, "software",
                   "the program does not repeat itself on the same hardware: %s and %s both ran on %s and produced "
                   "different results (nondeterministic software)",
                   x->label, y->label, c);
            return;
        }

    /* 4. The healthy content. */
    int healthy = f->majority;
    if (healthy >= 0) {
        step(v, "the healthy result is the original majority's");
    } else {
        int best = -1, best_n = 0, tie = 0, maxc = -1;
        for (int i = 0; i < n; i++)
            if (f->e[i].outcome == RP_RAN && f->e[i].content > maxc)
                maxc = f->e[i].content;
        size_t l = 0;
        a[0] = 0;
        for (int k = 0; k <= maxc; k++) {
            nset s = {.len = 0};
            for (int i = 0; i < n; i++)
                if (f->e[i].outcome == RP_RAN && f->e[i].content == k)
                    for (int p = 0; p < f->e[i].nprobe; p++)
                        nset_add(&s, f->e[i].probe[p]);
            if (!s.len)
                continue;
            nset_text(&s, c, sizeof(c));
            if (l < sizeof(a))
                l += (size_t)snprintf(a + l, sizeof(a) - l, "%sresult %c on %s", l ? ", " : "", 'A' + k % 26, c);
            if (s.len > best_n) {
                best = k;
                best_n = s.len;
                tie = 0;
            } else if (s.len == best_n) {
                tie = 1;
            }
        }
        if (best < 0 || tie) {
            notes_text(f, b, sizeof(b));
            step(v, "no majority: %s", a);
            decide(v, "inconclusive",
                   "no majority says which result is wrong: %s; each is seen on as many nodes as the other%s%s", a,
                   b[0] ? "; " : "", b);
            return;
        }
        healthy = best;
        step(v, "without a majority of runs, the healthy result is the one seen on the most nodes (%s)", a);
    }
    v->healthy = healthy;
    for (int i = 0; i < n; i++)
        v->diverged[i] = f->e[i].outcome == RP_RAN ? f->e[i].content != healthy : -1;

    /* Where the divergence happened first: the original runs that diverged. */
    nset odd = {.len = 0};
    for (int i = 0; i < n; i++)
        if (f->e[i].original && v->diverged[i] == 1)
            for (int p = 0; p < f->e[i].nprobe; p++)
                nset_add(&odd, f->e[i].probe[p]);
    char oddtxt[300];
    nset_text(&odd, oddtxt, sizeof(oddtxt));
    int nrep_div = 0, nrep_clean = 0;
    for (int i = 0; i < n; i++)
        if (!f->e[i].original && v->diverged[i] >= 0)
            v->diverged[i] ? nrep_div++ : nrep_clean++;

    /* 5. No replay diverged. */
    if (!nrep_div) {
        int on_odd = 0;
        for (int i = 0; i < n; i++) {
            which[i] = 0;
            if (f->e[i].original || v->diverged[i] != 0)
                continue;
            for (int p = 0; p < f->e[i].nprobe; p++)
                if (nset_has(&odd, f->e[i].probe[p]))
                    which[i] = 1;
            on_odd += which[i];
        }
        step(v, "no replay diverged (%d clean)", nrep_clean);
        if (on_odd && odd.len) {
            labels(f, which, a, sizeof(a));
            snprintf(v->node, sizeof(v->node), "%s", oddtxt);
            for (int i = 0; i < n; i++)
                if (f->e[i].original && v->diverged[i] == 1 && f->e[i].nprobe == 1 && f->e[i].gpu[0] && *f->e[i].gpu[0])
                    snprintf(v->gpu, sizeof(v->gpu), "%s", f->e[i].gpu[0]);
            decide(v, "transient-hardware",
                   "the divergence on %s reproduced in none of %d replays, %d of them on %s itself (%s): a one-off "
                   "fault there (a bit flip), not a persistent one",
                   oddtxt, nrep_clean, on_odd, oddtxt, a);
            return;
        }
        notes_text(f, b, sizeof(b));
        if (b[0])
            snprintf(c, sizeof(c), " (%.290s)", b);
        else
            c[0] = 0;
        decide(v, "inconclusive",
               "the divergence reproduced in none of %d replays, but none ran on %s, where it happened%s: a one-off "
               "fault there and a persistent one look the same from elsewhere",
               nrep_clean, oddtxt, c);
        return;
    }

    /* 6. Replays diverged: which node do the diverging executions share? */
    nset common = {.len = 0}, exon = {.len = 0};
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (v->diverged[i] != 1)
            continue;
        nset s;
        nset_of(&f->e[i], &s);
        if (first) {
            common = s;
            first = 0;
            continue;
        }
        nset keep = {.len = 0};
        for (int k = 0; k < common.len; k++)
            if (nset_has(&s, common.n[k]))
                nset_add(&keep, common.n[k]);
        common = keep;
    }
    for (int i = 0; i < n; i++)
        if (v->diverged[i] == 0)
            for (int p = 0; p < f->e[i].nprobe; p++)
                nset_add(&exon, f->e[i].probe[p]);
    for (int i = 0; i < n; i++)
        which[i] = v->diverged[i] == 1;
    labels(f, which, a, sizeof(a));
    step(v, "%d replay%s diverged; every execution that diverged: %s", nrep_div, nrep_div == 1 ? "" : "s", a);
    if (!common.len) {
        decide(v, "software", "it differs wherever it runs: the executions that diverged (%s) share no node", a);
        return;
    }
    nset sus = {.len = 0};
    for (int k = 0; k < common.len; k++)
        if (!nset_has(&exon, common.n[k]))
            nset_add(&sus, common.n[k]);
    nset_text(&common, c, sizeof(c));
    step(v, "they share %s", c);
    if (!sus.len) {
        for (int i = 0; i < n; i++) {
            which[i] = 0;
            for (int p = 0; v->diverged[i] == 0 && p < f->e[i].nprobe; p++)
                which[i] |= nset_has(&common, f->e[i].probe[p]);
        }
        labels(f, which, b, sizeof(b));
        decide(v, "inconclusive",
               "the divergence does not always come back on %s: it diverged there (%s) but also ran clean there (%s): "
               "an intermittent fault, or software that does not always repeat itself; narrow again for more "
               "placements",
               c, a, b);
        return;
    }
    char sustxt[300];
    nset_text(&sus, sustxt, sizeof(sustxt));
    if (sus.len > 1) {
        decide(v, "inconclusive",
               "the divergence follows %s together: every execution that diverged ran on all of them and no clean one "
               "on any; place them apart (other node sets) to tell which",
               sustxt);
        return;
    }
    const char *x = sus.n[0];
    int control = 0, here = 0;
    for (int i = 0; i < n; i++) {
        which[i] = 0;
        if (f->e[i].original || v->diverged[i] != 0)
            continue;
        int on_x = 0;
        for (int p = 0; p < f->e[i].nprobe; p++)
            on_x |= !strcmp(f->e[i].probe[p], x);
        which[i] = !on_x;
        control += !on_x;
    }
    for (int i = 0; i < n; i++)
        here += !f->e[i].original && v->diverged[i] == 1;
    if (!control) {
        notes_text(f, b, sizeof(b));
        decide(v, "inconclusive",
               "the divergence came back on %s, but no replay ran clean elsewhere at the same time to show the program "
               "sound off %s%s%s",
               x, x, b[0] ? ": " : "", b);
        return;
    }
    labels(f, which, b, sizeof(b));
    snprintf(v->node, sizeof(v->node), "%s", x);
    /* The GPU: when every diverging execution names the same one on x. */
    const char *gpu = NULL;
    int gpu_ok = 1;
    for (int i = 0; i < n && gpu_ok; i++) {
        if (v->diverged[i] != 1)
            continue;
        const char *g = NULL;
        for (int p = 0; p < f->e[i].nprobe; p++)
            if (!strcmp(f->e[i].probe[p], x))
                g = f->e[i].gpu[p];
        if (!g || !*g || (gpu && strcmp(gpu, g)))
            gpu_ok = 0;
        else
            gpu = g;
    }
    if (gpu_ok && gpu)
        snprintf(v->gpu, sizeof(v->gpu), "%s", gpu);
    step(v, "%d replay%s ran clean away from %s: %s", control, control == 1 ? "" : "s", x, b);
    decide(v, "persistent-hardware",
           "the divergence follows %s%s%s: it came back in all %d replay%s that ran there and in none of the %d that "
           "ran elsewhere (%s)",
           x, v->gpu[0] ? " GPU " : "", v->gpu, here, here == 1 ? "" : "s", control, b);
}
