/* replay.c - the verdict of a replay experiment from its executions' results (server/rules/replay.h). */
#include "server/rules/replay.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    case RP_RAN: return "ran";
    case RP_FAILED: return "failed before the window was recorded";
    case RP_NOT_RUN: return "was never started";
    case RP_TIMED_OUT: return "had not recorded the window at the deadline";
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

/* judge_start - reset `v` to no verdict (no healthy content, no execution judged) and note how many of the
 * replays recorded the window. Returns that number. */
static int judge_start(const rp_facts *f, int n, rp_verdict *v)
{
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
    return ran;
}

/* judge_cause - step 1: a cause that is software by nature decides "software" whatever the replays say (the
 * executions are still marked against the original majority, when there is one). */
static void judge_cause(const rp_facts *f, int n, rp_verdict *v)
{
    if (f->majority >= 0) {
        v->healthy = f->majority;
        for (int i = 0; i < n; i++)
            v->diverged[i] = f->e[i].outcome == RP_RAN ? f->e[i].content != f->majority : -1;
    }
    step(v, "the cause is %s, which is software by nature", f->cause);
    decide(v, "software", "the cause is %s: %s; that does not depend on the hardware it ran on", f->cause,
           f->cause_why && *f->cause_why ? f->cause_why : "(no detail)");
}

/* judge_none_ran - step 2: no replay recorded the window; "inconclusive", saying what became of each replay
 * and the design's notes. */
static void judge_none_ran(const rp_facts *f, int n, rp_verdict *v)
{
    char a[600], b[600];
    size_t l = 0;
    a[0] = 0;
    for (int i = 0; i < n && l < sizeof(a); i++)
        if (!f->e[i].original)
            l += (size_t)snprintf(a + l, sizeof(a) - l, "%s%s %s", l ? "; " : "", f->e[i].label,
                                  outcome_text(f->e[i].outcome));
    notes_text(f, b, sizeof(b));
    decide(v, "inconclusive", "no replay recorded the window%s%s%s%s", a[0] ? ": " : "", a, b[0] ? "; " : "", b);
}

/* judge_same_nodes - step 3: replays on the same nodes that disagree, one of them with a result no other
 * execution produced (a program that does not repeat itself makes a new result each time; a fault that comes
 * and goes on a node gives back the results seen before, and is judged later). Decides "software" and returns
 * 1 when there is such a pair, else 0 with `v` untouched. */
static int judge_same_nodes(const rp_facts *f, int n, rp_verdict *v)
{
    char c[300];
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const rp_exec *x = &f->e[i], *y = &f->e[j];
            if (x->original || y->original || x->outcome != RP_RAN || y->outcome != RP_RAN ||
                x->content == y->content || !same_probe(x, y) ||
                (seen(f, n, x->content) > 1 && seen(f, n, y->content) > 1))
                continue;
            nset s;
            nset_of(x, &s);
            nset_text(&s, c, sizeof(c));
            step(v, "%s and %s ran on the same nodes (%s) and differ", x->label, y->label, c);
            decide(v, "software",
                   "the program does not repeat itself on the same hardware: %s and %s both ran on %s and produced "
                   "different results (nondeterministic software)",
                   x->label, y->label, c);
            return 1;
        }
    return 0;
}

/* judge_healthy - step 4: the healthy content, the original majority's, or without one the content seen on
 * the most nodes. Returns it, or -1 after deciding "inconclusive" when no content is seen on more nodes than
 * every other. */
static int judge_healthy(const rp_facts *f, int n, rp_verdict *v)
{
    char a[600], b[600], c[300];
    if (f->majority >= 0) {
        step(v, "the healthy result is the original majority's");
        return f->majority;
    }
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
        return -1;
    }
    step(v, "without a majority of runs, the healthy result is the one seen on the most nodes (%s)", a);
    return best;
}

/* judge_none_diverged - step 5: no replay diverged. "transient-hardware" on the nodes where the original
 * divergence happened (`odd`, named `oddtxt`) when clean replays ran there, else "inconclusive". */
static void judge_none_diverged(const rp_facts *f, int n, rp_verdict *v, const nset *odd, const char *oddtxt,
                                int nrep_clean)
{
    char a[600], b[600], c[300];
    int which[RP_MAX_EXEC];
    int on_odd = 0;
    for (int i = 0; i < n; i++) {
        which[i] = 0;
        if (f->e[i].original || v->diverged[i] != 0)
            continue;
        for (int p = 0; p < f->e[i].nprobe; p++)
            if (nset_has(odd, f->e[i].probe[p]))
                which[i] = 1;
        on_odd += which[i];
    }
    step(v, "no replay diverged (%d clean)", nrep_clean);
    if (on_odd && odd->len) {
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
}

/* diverged_nodes - the nodes every diverging execution ran on (`common`) and the nodes any clean execution
 * ran on (`exon`). */
static void diverged_nodes(const rp_facts *f, int n, const rp_verdict *v, nset *common, nset *exon)
{
    int first = 1;
    common->len = 0;
    exon->len = 0;
    for (int i = 0; i < n; i++) {
        if (v->diverged[i] != 1)
            continue;
        nset s;
        nset_of(&f->e[i], &s);
        if (first) {
            *common = s;
            first = 0;
            continue;
        }
        nset keep = {.len = 0};
        for (int k = 0; k < common->len; k++)
            if (nset_has(&s, common->n[k]))
                nset_add(&keep, common->n[k]);
        *common = keep;
    }
    for (int i = 0; i < n; i++)
        if (v->diverged[i] == 0)
            for (int p = 0; p < f->e[i].nprobe; p++)
                nset_add(exon, f->e[i].probe[p]);
}

/* suspect_gpu - the GPU on node `x` that every diverging execution names, or NULL when they do not all name
 * the same one. */
static const char *suspect_gpu(const rp_facts *f, int n, const rp_verdict *v, const char *x)
{
    const char *gpu = NULL;
    for (int i = 0; i < n; i++) {
        if (v->diverged[i] != 1)
            continue;
        const char *g = NULL;
        for (int p = 0; p < f->e[i].nprobe; p++)
            if (!strcmp(f->e[i].probe[p], x))
                g = f->e[i].gpu[p];
        if (!g || !*g || (gpu && strcmp(gpu, g)))
            return NULL;
        gpu = g;
    }
    return gpu;
}

/* judge_one_suspect - the end of step 6: the diverging executions share node `x` alone. "persistent-hardware"
 * on it (and its GPU when they agree on one) when clean replays ran away from it, else "inconclusive". */
static void judge_one_suspect(const rp_facts *f, int n, rp_verdict *v, const char *x)
{
    char b[600];
    int which[RP_MAX_EXEC];
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
    const char *gpu = suspect_gpu(f, n, v, x);
    if (gpu)
        snprintf(v->gpu, sizeof(v->gpu), "%s", gpu);
    step(v, "%d replay%s ran clean away from %s: %s", control, control == 1 ? "" : "s", x, b);
    decide(v, "persistent-hardware",
           "the divergence follows %s%s%s: it came back in all %d replay%s that ran there and in none of the %d that "
           "ran elsewhere (%s)",
           x, v->gpu[0] ? " GPU " : "", v->gpu, here, here == 1 ? "" : "s", control, b);
}

/* judge_diverged - step 6: replays diverged (`nrep_div` of them); which node do the diverging executions
 * share? None: "software"; one that no clean execution ran on: judged by judge_one_suspect; otherwise
 * "inconclusive". */
static void judge_diverged(const rp_facts *f, int n, rp_verdict *v, int nrep_div)
{
    char a[600], b[600], c[300];
    int which[RP_MAX_EXEC];
    nset common, exon;
    diverged_nodes(f, n, v, &common, &exon);
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
    judge_one_suspect(f, n, v, sus.n[0]);
}

void rp_judge(const rp_facts *f, rp_verdict *v)
{
    int n = f->n < RP_MAX_EXEC ? f->n : RP_MAX_EXEC;
    int ran = judge_start(f, n, v);
    if (f->cause_software) {
        judge_cause(f, n, v);
        return;
    }
    if (!ran) {
        judge_none_ran(f, n, v);
        return;
    }
    if (judge_same_nodes(f, n, v))
        return;
    int healthy = judge_healthy(f, n, v);
    if (healthy < 0)
        return;
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
    if (!nrep_div)
        judge_none_diverged(f, n, v, &odd, oddtxt, nrep_clean);
    else
        judge_diverged(f, n, v, nrep_div);
}
