/* cause.c - the cause and origin ranks of a first divergence (common/cause.h): pure, tested from a table of cases. */
#include "common/cause.h"

#include <stdio.h>
#include <string.h>

const char *cause_name(cause_kind k)
{
    switch (k) {
    case CAUSE_ORIGIN: return "origin";
    case CAUSE_EVERY_RANK: return "every-rank";
    case CAUSE_OPERATION: return "operation";
    case CAUSE_CONFIGURATION: return "configuration";
    case CAUSE_MISSING: return "missing";
    case CAUSE_CONTENT: return "content";
    case CAUSE_RESTORE: return "restore";
    case CAUSE_LAYOUT: return "layout";
    case CAUSE_NONE: break;
    }
    return "none";
}

cause_inputs cause_inputs_of(const uint64_t *const *lists, const int *counts, int n)
{
    if (n <= 0)
        return CAUSE_IN_UNKNOWN;
    for (int i = 0; i < n; i++)
        if (counts[i] <= 0 || !lists[i])
            return CAUSE_IN_UNKNOWN;
    for (int i = 1; i < n; i++)
        if (counts[i] != counts[0] || memcmp(lists[i], lists[0], (size_t)counts[0] * sizeof(uint64_t)) != 0)
            return CAUSE_IN_DIFF;
    return CAUSE_IN_SAME;
}

static int same_key(const cause_rank *a, const cause_rank *b)
{
    return a->occurrence == b->occurrence && a->name_len == b->name_len &&
           (a->name_len == 0 || memcmp(a->name, b->name, a->name_len) == 0);
}

/* add_origin - append `rank` to the result's origin ranks, kept ascending. */
static void add_origin(cause_result *v, int rank)
{
    if (v->norigin == CAUSE_MAX_ORIGIN)
        return;
    int i = v->norigin++;
    while (i > 0 && v->origin[i - 1] > rank) {
        v->origin[i] = v->origin[i - 1];
        i--;
    }
    v->origin[i] = rank;
}

/* rank_list - "3", "1 and 3", "0, 1 and 3" (at most a dozen named). */
static void rank_list(const int *r, int n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < n && len < cap; i++) {
        if (i == 12) {
            snprintf(out + len, cap - len, " and %d more", n - 12);
            return;
        }
        const char *sep = i == 0 ? "" : i == n - 1 ? " and " : ", ";
        len += (size_t)snprintf(out + len, cap - len, "%s%d", sep, r[i]);
    }
}

int cause_comm_size(const char *name, size_t name_len, int ndim, const int64_t *shape)
{
    int mpi = name_len > 4 && memcmp(name, "mpi.", 4) == 0, nccl = name_len > 5 && memcmp(name, "nccl.", 5) == 0;
    if ((!mpi && !nccl) || ndim != 2 || shape[0] <= 0 || shape[0] > INT32_MAX)
        return 0;
    return (int)shape[0];
}

/* name_is - 1 when the record's name is one of `names` (a NULL-terminated list). */
static int name_is(const cause_rank *c, const char *const *names)
{
    for (; *names; names++)
        if (strlen(*names) == c->name_len && memcmp(c->name, *names, c->name_len) == 0)
            return 1;
    return 0;
}

static const char *const BCAST[] = {"mpi.bcast", "nccl.broadcast", "nccl.bcast", NULL};
static const char *const REDUCE[] = {"mpi.reduce", "nccl.reduce", NULL};

/* in_list - 1 when `x` is among r[0..n). */
static int in_list(const int *r, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (r[i] == x)
            return 1;
    return 0;
}

/* receivers - who received the change through collective `c` (the origin's record): its communicator's other
 * members by world rank when it lists them, else how many, else "the other ranks". */
static void receivers(const cause_rank *c, const cause_result *v, char *out, size_t cap)
{
    if (c->comm_size > 1 && c->comm_ranks && c->comm_nlisted == c->comm_size) {
        int others[CAUSE_MAX_ORIGIN], n = 0, more = 0;
        for (int i = 0; i < c->comm_nlisted; i++) {
            int w = (int)c->comm_ranks[i];
            if (in_list(v->origin, v->norigin, w))
                continue;
            if (n < CAUSE_MAX_ORIGIN)
                others[n++] = w;
            else
                more++;
        }
        char list[200];
        rank_list(others, n, list, sizeof(list));
        snprintf(out, cap, "rank%s %s%s, the other member%s of its communicator of %d processes,",
                 n + more > 1 ? "s" : "", list, more ? " and more" : "", n + more > 1 ? "s" : "", c->comm_size);
    } else if (c->comm_size > 1) {
        snprintf(out, cap, "the other ranks of its communicator of %d processes", c->comm_size);
    } else {
        snprintf(out, cap, "the other ranks");
    }
}

/* every_member - 1 when the collective's communicator lists its members and each of them is among the `n` early
 * ranks whose inputs differed. */
static int every_member(const cause_rank *c, const cause_rank *const *early, int n)
{
    if (!c->comm_ranks || c->comm_size < 2 || c->comm_nlisted != c->comm_size)
        return 0;
    for (int i = 0; i < c->comm_nlisted; i++) {
        int hit = 0;
        for (int k = 0; k < n && !hit; k++)
            hit = early[k]->rank == (int)c->comm_ranks[i] && early[k]->inputs == CAUSE_IN_DIFF;
        if (!hit)
            return 0;
    }
    return 1;
}

/* judge_origin - the origin ranks are set (the ranks whose inputs differed at `e0`'s collective): say what the
 * collective did with the change, true to its communicator. */
static void judge_origin(const cause_rank *const *early, int ne, int n_unknown, int all, const char *rec,
                         cause_result *v)
{
    const cause_rank *o = early[0];
    for (int i = 0; i < ne; i++)
        if (early[i]->rank == v->origin[0])
            o = early[i];
    char who[160], recv[300];
    rank_list(v->origin, v->norigin, who, sizeof(who));
    const char *s = v->norigin > 1 ? "s" : "";
    v->kind = CAUSE_ORIGIN;
    v->comm_size = o->comm_size;
    if (o->comm_size == 1) {
        v->local = 1;
        snprintf(v->why, sizeof(v->why),
                 "rank%s %s called %s on a communicator of one process: nothing was sent or received, so the "
                 "difference (a buffer that process alone holds, often a word the program never uses) stayed in "
                 "that process",
                 s, who, rec);
        return;
    }
    receivers(o, v, recv, sizeof(recv));
    if (name_is(o, BCAST) && v->norigin == 1) {
        v->root_input = 1;
        snprintf(
            v->why, sizeof(v->why),
            "rank %.12s, the root of %.200s, already held another value before broadcasting it, and nothing diverged "
            "earlier: the value entered at the root from outside the recorded computation (a file it read, "
            "the clock, its environment, or bytes of the buffer it never set); %.240s received it through the "
            "broadcast",
            who, rec, recv);
        return;
    }
    if (name_is(o, REDUCE) && v->norigin == 1 && ne == 1) {
        v->local = 1;
        snprintf(v->why, sizeof(v->why),
                 "the inputs of %s differed on rank %.12s only, and no other rank diverged there: a reduce delivers "
                 "its result to its root alone, so the difference stayed in rank %.12s's own buffer",
                 rec, who, who);
        return;
    }
    size_t n = (size_t)snprintf(v->why, sizeof(v->why),
                                "the inputs of %s differed on rank%s %s only; %.240s received the change through the "
                                "collective",
                                rec, s, who, recv);
    if (all == 1 && n < sizeof(v->why)) {
        v->thin = 1;
        snprintf(v->why + n, sizeof(v->why) - n, " (a single rank: a run-specific value and a local fault look alike)");
    } else if (n_unknown && n < sizeof(v->why)) {
        snprintf(v->why + n, sizeof(v->why) - n, " (%d rank%s recorded no input fingerprints there)", n_unknown,
                 n_unknown > 1 ? "s" : "");
    }
}

const char *cause_ignore_why(const cause_result *v)
{
    if (v->local)
        return "Nothing left the process: if the program never uses this buffer, leave the call out";
    return "If these are run-specific values (timings, process ids), leave them out";
}

/* state_of - what a state entry's name says it holds, by the names the Python binding and lockstep-train give
 * them ("optim.group0.lr", "adam.m", "rng.torch", "param.0.weight", "data_pos"); NULL when it says nothing. */
static const char *state_of(const char *name, size_t len)
{
    static const struct {
        const char *prefix, *what;
    } kinds[] = {{"optim", "the optimizer state"},
                 {"adam", "the optimizer state"},
                 {"rng", "the random number generator state"},
                 {"param", "the model parameters"},
                 {"model", "the model parameters"},
                 {"data", "the data position"},
                 {"sched", "the learning-rate schedule"},
                 {"lr_sched", "the learning-rate schedule"}};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t p = strlen(kinds[i].prefix);
        if (len >= p && !strncmp(name, kinds[i].prefix, p))
            return kinds[i].what;
    }
    return NULL;
}

/* restore_why - a restore difference at the checkpoint of `step` on ranks `who` (`n` of them) for people: how many
 * entries were saved and not restored (or restored and never saved) and the first of them, or the entry that holds
 * other state; what kind of state that is when its name says so; and where the fault lies. */
static void restore_why(const cause_rank *e, long long step, const char *who, int n, char *out, size_t cap)
{
    int nl = (int)(e->name_len > 200 ? 200 : e->name_len);
    const char *nm = e->name ? e->name : "", *kind = state_of(nm, e->name_len);
    const char *st = e->restore_status ? e->restore_status : "", *s = n > 1 ? "s" : "";
    size_t l;
    if (!strcmp(st, "not-restored")) {
        long k = e->not_restored > 0 ? e->not_restored : 1;
        l = (size_t)snprintf(out, cap,
                             "%ld saved entr%s %s not restored (first: %.*s)%s%s%s, at the checkpoint of step "
                             "%lld on rank%s %s",
                             k, k == 1 ? "y" : "ies", k == 1 ? "was" : "were", nl, nm, kind ? ": " : "",
                             kind ? kind : "", kind ? " was not restored" : "", step, s, who);
    } else if (!strcmp(st, "not-saved")) {
        long k = e->not_saved > 0 ? e->not_saved : 1;
        l = (size_t)snprintf(out, cap,
                             "%ld restored entr%s %s never saved (first: %.*s), at the checkpoint of step %lld "
                             "on rank%s %s",
                             k, k == 1 ? "y" : "ies", k == 1 ? "was" : "were", nl, nm, step, s, who);
    } else {
        l = (size_t)snprintf(out, cap,
                             "a resumed run restored the checkpoint of step %lld on rank%s %s with state entry %.*s "
                             "(occurrence %u)%s%s%s different from what its twin saved",
                             step, s, who, nl, nm, e->occurrence, kind ? ", " : "", kind ? kind : "", kind ? "," : "");
    }
    if (e->not_restored > 0 && strcmp(st, "not-restored") && l < cap)
        l += (size_t)snprintf(out + l, cap - l, "; %ld saved entr%s not restored", e->not_restored,
                              e->not_restored == 1 ? "y was" : "ies were");
    if (e->not_saved > 0 && strcmp(st, "not-saved") && l < cap)
        l += (size_t)snprintf(out + l, cap - l, "; %ld restored entr%s never saved", e->not_saved,
                              e->not_saved == 1 ? "y was" : "ies were");
    if (l < cap)
        snprintf(out + l, cap - l,
                 ": the program's checkpoint loading (or saving) is at fault, and every later step is suspect");
}

void cause_judge(const cause_facts *f, cause_result *v)
{
    memset(v, 0, sizeof(*v));
    if (!f->n)
        return;

    /* The first diverging step, and the earliest divergence in it (smallest seq, then lowest rank). */
    const cause_rank *e0 = NULL;
    for (size_t i = 0; i < f->n; i++) {
        const cause_rank *c = &f->ranks[i];
        if (!e0 || c->step < e0->step ||
            (c->step == e0->step && (c->seq < e0->seq || (c->seq == e0->seq && c->rank < e0->rank))))
            e0 = c;
    }
    v->step = e0->step;

    /* The earliest point: ranks at that step with that seq or that record (and of its kind: a restore
     * difference, a logical tensor or a step record). */
    const cause_rank *early[CAUSE_MAX_ORIGIN * 4];
    int ne = 0, n_diff = 0, n_unknown = 0, n_missing = 0;
    for (size_t i = 0; i < f->n; i++) {
        const cause_rank *c = &f->ranks[i];
        if (c->step != v->step || !c->restore != !e0->restore || !c->logical != !e0->logical)
            continue;
        if (c->seq != e0->seq && !same_key(c, e0) && !e0->restore) /* a rank's own block differs on its own */
            continue;
        if (ne < (int)(sizeof(early) / sizeof(early[0])))
            early[ne++] = c;
        if (c->missing)
            n_missing++;
        else if (c->inputs == CAUSE_IN_DIFF)
            n_diff++;
        else if (c->inputs == CAUSE_IN_UNKNOWN)
            n_unknown++;
    }
    int all = f->nranks > 0 ? f->nranks : (int)f->n;
    char who[160], rec[300];
    snprintf(rec, sizeof(rec), "%.*s (occurrence %u) at step %lld", (int)(e0->name_len > 200 ? 200 : e0->name_len),
             e0->name ? e0->name : "", e0->occurrence, (long long)v->step);

    if (e0->restore) {
        v->kind = CAUSE_RESTORE;
        v->first = e0;
        for (int i = 0; i < ne; i++)
            add_origin(v, early[i]->rank);
        rank_list(v->origin, v->norigin, who, sizeof(who));
        restore_why(e0, (long long)v->step, who, v->norigin, v->why, sizeof(v->why));
        return;
    }
    if (e0->logical) {
        v->kind = CAUSE_LAYOUT;
        v->first = e0;
        snprintf(v->why, sizeof(v->why),
                 "the runs, compared on their logical tensors (shards combined across ranks, whatever the layout), "
                 "part at logical tensor %s: a reduction over another layout rounds differently, or one rank's "
                 "fault; ranks do not line up across layouts, so no rank's hardware is named",
                 rec);
        return;
    }
    if (f->configuration) {
        v->kind = CAUSE_CONFIGURATION;
        v->first = e0;
        snprintf(v->why, sizeof(v->why),
                 "the runs' configuration differs where it can change results (see the manifest diff); that "
                 "explains the divergence at %s",
                 rec);
        return;
    }
    if (n_missing) {
        v->kind = CAUSE_MISSING;
        for (int i = 0; i < ne; i++)
            if (early[i]->missing)
                add_origin(v, early[i]->rank);
        rank_list(v->origin, v->norigin, who, sizeof(who));
        snprintf(v->why, sizeof(v->why),
                 "a run lacks record %s on rank%s %s that its twins hold: the runs did different work (an early "
                 "exit, a different code path or a crash)",
                 rec, v->norigin > 1 ? "s" : "", who);
    } else if (n_diff) {
        for (int i = 0; i < ne; i++)
            if (early[i]->inputs == CAUSE_IN_DIFF)
                add_origin(v, early[i]->rank);
        rank_list(v->origin, v->norigin, who, sizeof(who));
        if ((n_diff >= all && all >= 2) || every_member(e0, early, ne)) {
            v->kind = CAUSE_EVERY_RANK;
            snprintf(v->why, sizeof(v->why),
                     "the inputs of %s differed on every rank%s at once, with nothing diverging before: "
                     "run-specific values (timings, process ids, host names) or nondeterministic computation on "
                     "every rank, not one faulty node",
                     rec, n_diff >= all ? "" : " of its communicator");
            v->norigin = 0;
        } else {
            judge_origin(early, ne, n_unknown, all, rec, v);
        }
    } else if (!n_unknown) {
        v->kind = CAUSE_OPERATION;
        snprintf(v->why, sizeof(v->why),
                 "the inputs of %s matched in every run and its output differs: the operation itself is not "
                 "deterministic (e.g. a reduction in arrival order)",
                 rec);
    } else if (ne < all) {
        v->kind = CAUSE_ORIGIN;
        for (int i = 0; i < ne; i++)
            if (early[i]->inputs == CAUSE_IN_UNKNOWN)
                add_origin(v, early[i]->rank);
        rank_list(v->origin, v->norigin, who, sizeof(who));
        int later = (int)f->n - ne;
        snprintf(v->why, sizeof(v->why),
                 "rank%s %s diverged first, at %s; %s (the record carries no input fingerprints: the order of "
                 "records is the evidence)",
                 v->norigin > 1 ? "s" : "", who, rec,
                 later > 0 ? "the other ranks diverged after it" : "no other rank diverged");
    } else {
        v->kind = CAUSE_CONTENT;
        v->thin = 1;
        for (int i = 0; i < ne; i++)
            add_origin(v, early[i]->rank);
        snprintf(v->why, sizeof(v->why),
                 "every rank diverged at %s and its records carry no input fingerprints: the records cannot tell "
                 "where the change began (record the inputs, e.g. ls_record_fp with input fingerprints, to tell)",
                 rec);
    }

    /* The divergence that stands for the group: the lowest origin rank's, else the earliest. */
    v->first = e0;
    for (int i = 0; v->norigin && i < ne; i++)
        if (early[i]->rank == v->origin[0])
            v->first = early[i];
}
