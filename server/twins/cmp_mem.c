/* cmp_mem.c - the comparison's memory (cmp_mem.h): per twin group, rank and run, the step digests of the last
 * MEM_STEPS steps as the group's batches commit (this lockstepd's, and those other instances forward to the holder
 * of the group's lease: forward.h); a flush compares the steps every run completed and marks those found equal in
 * one statement a group (lockstep_cmp_marks, sql/functions/compare.sql). The database stays the authority: a mark is
 * written only where it holds what memory counted, so a batch whose forward was lost, a run that joined, a late
 * batch or a restart sends the rank to the look (lockstep_cmp_ranks) instead. A run that streams alone on a rank is
 * compared with the twins that ended there, their steps read from the database as it goes (load_twins). */
#include "server/twins/cmp_mem.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/db_lit.h"
#include "server/store/write.h"

#define MEM_STEPS 32            /* steps a run's rank keeps: twins further apart are compared by the look */
#define MEM_RUNS 4              /* runs of a rank compared here; a rank with more goes to the look */
#define MEM_MAX_CELLS 262144    /* run-ranks (1 KiB each: 256 MiB) and ranks held at most; past it, the look */
#define MEM_MAX_GROUPS 4096     /* groups held at most (a batch finds its group by name among them) */
#define MEM_MAX_SLOTS (1 << 22) /* places in the groups' rank tables (8 bytes each: 32 MiB) */
#define MEM_KEEP_S 1800.0       /* a group no batch came for since this long is forgotten, ends awaited or not */
#define MEM_CHUNK 4000          /* ranks one marks statement takes */
#define MEM_RETRIES 4           /* flushes in a row a rank's mark may wait for a busy lock or a count to settle */
#define MEM_TWIN_WAIT_S 30.0    /* a run alone on a rank waits this long for a twin that streams to other ranks */

/* One run on one rank. */
typedef struct mrun {
    int64_t key;
    int64_t counted;   /* records its batches added to the rank's progress here (rank_progress.n_records) */
    int64_t first;     /* the first step memory saw: steps before it are not known here */
    int64_t max_step;  /* its newest step here */
    store_step *slots; /* what its batches added to each of its last MEM_STEPS steps, by step modulo MEM_STEPS
                          (step INT64_MIN: empty) */
    int loaded;        /* a twin that ended on the rank: its count and its steps first..upto were read from
                          PostgreSQL by a flush (load_twins), not added by batches; it holds nothing more */
    int64_t upto;      /* loaded: the last step read (the running run's newest complete one then) */
    int ended;         /* its end on the rank came (cmp_mem_end_seen) */
} mrun;

typedef struct mrank {
    mrun runs[MEM_RUNS];
    int nruns;
    int look_only;  /* state blocks, or more runs than MEM_RUNS, or memory full: the look compares it */
    int dirty;      /* a batch came since the last flush */
    int64_t marked; /* the last step memory marked (INT64_MIN: none); a late batch moves it back */
    unsigned tried; /* the flush that last looked for its ended twins (load_twins) */
    int retries;    /* flushes in a row whose mark the database put off (lockstep_cmp_marks' r_state 1 or 2) */
} mrank;

/* A run that streams to the group: its last batch here. */
typedef struct mlive {
    int64_t key;
    double at; /* monotonic seconds */
} mlive;

typedef struct mgroup {
    char name[256];
    mrank **ranks; /* by rank, NULL where none came */
    size_t n_ranks;
    double touched; /* monotonic seconds of its last batch */
    size_t unended; /* runs on ranks, batches' not loaded ones, whose end there has not come: while any, it is kept */
    int dirty;
    mlive live[MEM_RUNS]; /* the runs whose batches came last (a run alone on a rank waits for a twin among them) */
} mgroup;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mgroup **groups;
static size_t n_groups, cells, n_mranks, slots; /* slots: places in the groups' rank tables */
static unsigned flushes;                        /* flushes begun (load_twins) */
/* a group no batch came for since idle_s is forgotten once every run memory holds ended on its ranks, or once memory
 * was short of room (a batch found it full since the last flush): cmp_mem_configure */
static double idle_s = 120.0;
static int short_of_room;

void cmp_mem_configure(double idle)
{
    pthread_mutex_lock(&lock);
    idle_s = idle;
    pthread_mutex_unlock(&lock);
}

void cmp_mem_register(void)
{
    /* marks of ranks found equal in memory (lockstep_cmp_marks); like the look's, its commit does not wait for the
     * disk: a mark lost in a crash is compared again after the restart */
    db_register("cmp_marks", "SELECT r_rank, r_state FROM set_config('synchronous_commit', 'off', true), "
                             "lockstep_cmp_marks($1, $2::int[], $3::bigint[], $4::bigint[], $5::int[], $6::bigint[], "
                             "$7::bigint[])");
    /* the twins of ranks one run streams to: per rank (its live run, the steps lo..hi memory will compare), every
     * other run of the group that ended there (a rank end, or the run is over), with its count and those steps;
     * in one snapshot, so that a count and the steps agree (load_twins) */
    db_register("cmp_load",
                "SELECT q.rk, u.run_key, p.n_records, s.step, s.n, s.digest, s.inputs "
                "FROM unnest($2::int[], $3::bigint[], $4::bigint[], $5::bigint[]) AS q(rk, live, lo, hi) "
                "JOIN runs u ON u.twin_group = $1 AND u.run_key <> q.live "
                "JOIN rank_progress p ON p.run_key = u.run_key AND p.rank = q.rk "
                "LEFT JOIN LATERAL (SELECT d.step, d.n, d.digest, d.inputs FROM step_digests d "
                "WHERE d.run_key = u.run_key AND d.rank = q.rk AND d.blk BETWEEN "
                "lockstep_step_block(q.lo) AND lockstep_step_block(q.hi) AND d.step BETWEEN q.lo AND q.hi OFFSET 0) s "
                "ON true "
                "WHERE u.status <> 'running' OR EXISTS (SELECT 1 FROM rank_ends e "
                "WHERE e.run_key = u.run_key AND e.rank = q.rk) "
                "ORDER BY 1, 2, 4");
}

/* group_find_locked - the group's memory; NULL when none is held. */
static mgroup *group_find_locked(const char *name)
{
    for (size_t i = 0; i < n_groups; i++)
        if (!strcmp(groups[i]->name, name))
            return groups[i];
    return NULL;
}

/* group_get_locked - the group's memory, made when new; NULL when MEM_MAX_GROUPS are held. */
static mgroup *group_get_locked(const char *name)
{
    mgroup *found = group_find_locked(name);
    if (found)
        return found;
    if (n_groups == MEM_MAX_GROUPS) {
        short_of_room = 1;
        return NULL;
    }
    mgroup *g = xcalloc(1, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "%s", name);
    groups = xrealloc(groups, (n_groups + 1) * sizeof(*groups));
    groups[n_groups++] = g;
    return g;
}

/* rank_get_locked - the rank's memory in group g, made when new; NULL when memory is full (MEM_MAX_SLOTS places,
 * MEM_MAX_CELLS ranks). */
static mrank *rank_get_locked(mgroup *g, uint32_t rank)
{
    if (rank >= g->n_ranks) {
        size_t n = g->n_ranks ? g->n_ranks : 64;
        while (n <= rank)
            n *= 2;
        if (slots + n - g->n_ranks > MEM_MAX_SLOTS) {
            short_of_room = 1;
            return NULL;
        }
        g->ranks = xrealloc(g->ranks, n * sizeof(*g->ranks));
        memset(g->ranks + g->n_ranks, 0, (n - g->n_ranks) * sizeof(*g->ranks));
        slots += n - g->n_ranks;
        g->n_ranks = n;
    }
    if (!g->ranks[rank]) {
        if (n_mranks == MEM_MAX_CELLS) {
            short_of_room = 1;
            return NULL;
        }
        g->ranks[rank] = xcalloc(1, sizeof(mrank));
        g->ranks[rank]->marked = INT64_MIN;
        n_mranks++;
    }
    return g->ranks[rank];
}

/* run_get_locked - the run's cell on the rank, made when new; NULL when the rank holds MEM_RUNS runs or memory is
 * full. */
static mrun *run_get_locked(mrank *r, int64_t key)
{
    for (int i = 0; i < r->nruns; i++)
        if (r->runs[i].key == key)
            return &r->runs[i];
    if (r->nruns == MEM_RUNS)
        return NULL;
    if (cells >= MEM_MAX_CELLS) {
        short_of_room = 1;
        return NULL;
    }
    mrun *u = &r->runs[r->nruns++];
    *u = (mrun){.key = key, .first = INT64_MAX, .max_step = INT64_MIN};
    u->slots = xmalloc(MEM_STEPS * sizeof(store_step));
    for (int i = 0; i < MEM_STEPS; i++)
        u->slots[i].step = INT64_MIN;
    cells++;
    return u;
}

static store_step *slot_of(const mrun *u, int64_t step)
{
    int64_t k = step % MEM_STEPS;
    return &u->slots[k < 0 ? k + MEM_STEPS : k];
}

/* add_step - what a batch adds to one step of the run, as step_digests merges it. A step too old for the run's
 * window is not kept (the flush cannot vouch for it: the database's mark moves back, and the look compares it). */
static void add_step(mrank *r, mrun *u, const store_step *s)
{
    if (s->step <= r->marked)
        r->marked = s->step - 1; /* late data: compared again (the database's mark moved back too) */
    if (u->max_step != INT64_MIN && s->step <= u->max_step - MEM_STEPS)
        return;
    if (s->step < u->first)
        u->first = s->step;
    if (s->step > u->max_step)
        u->max_step = s->step;
    store_step *sl = slot_of(u, s->step);
    if (sl->step != s->step) {
        if (sl->step > s->step)
            return;
        *sl = (store_step){.step = s->step};
    }
    sl->n += s->n;
    sl->digest ^= s->digest;
    sl->inputs ^= s->inputs;
    sl->inputs_unknown |= s->inputs_unknown;
}

static int verdict(const mgroup *g, const mrank *r, int64_t *from, int64_t *hi, int *why, int *more);

/* live_note_locked - run `key` streams to group g now (the oldest of the runs noted makes room). */
static void live_note_locked(mgroup *g, int64_t key, double now)
{
    int k = 0;
    for (int i = 0; i < MEM_RUNS; i++) {
        if (g->live[i].key == key) {
            k = i;
            break;
        }
        if (g->live[i].at < g->live[k].at)
            k = i;
    }
    g->live[k] = (mlive){.key = key, .at = now};
}

/* twin_streams - whether a run of group g other than `key` streamed to it within MEM_TWIN_WAIT_S: a run alone on a
 * rank then waits for that twin's batch there instead of going to the look (which could only mark it waiting, and
 * look again once the twin comes); the rank's end, or the twin's, still sends it to the look. */
static int twin_streams(const mgroup *g, int64_t key)
{
    double now = clock_mono_s();
    for (int i = 0; i < MEM_RUNS; i++)
        if (g->live[i].at > 0 && g->live[i].key != key && now - g->live[i].at < MEM_TWIN_WAIT_S)
            return 1;
    return 0;
}

int cmp_mem_absorb(const char *group, int64_t run_key, int rank, const store_step *st, size_t n, int64_t counted)
{
    if (!group || !*group || rank < 0)
        return 0;
    int64_t in_steps = 0;
    for (size_t i = 0; i < n; i++)
        in_steps += st[i].n;
    int state = counted > in_steps; /* what counts outside the steps' sums: entries of state blocks */
    pthread_mutex_lock(&lock);
    mgroup *g = group_get_locked(group);
    mrank *r = g ? rank_get_locked(g, (uint32_t)rank) : NULL;
    if (!r) { /* memory is full: the look compares it */
        pthread_mutex_unlock(&lock);
        return 1;
    }
    int had = r->nruns;
    mrun *u = r->look_only ? NULL : run_get_locked(r, run_key);
    if (u && r->nruns > had)
        g->unended++; /* its end on the rank is awaited */
    if (!u || state)  /* state blocks: restore checks run with the look */
        r->look_only = 1;
    if (u && u->loaded) { /* a run memory reads from the database: the next flush reads this batch there */
        for (size_t i = 0; i < n; i++)
            if (st[i].step <= r->marked)
                r->marked = st[i].step - 1;
    } else if (u) {
        u->counted += counted;
        for (size_t i = 0; i < n; i++)
            add_step(r, u, &st[i]);
    }
    r->dirty = g->dirty = 1;
    g->touched = clock_mono_s();
    live_note_locked(g, run_key, g->touched);
    /* one run: the flush reads its ended twins (load_twins), or hands it to the look. A step that differs goes to
     * the look now, not at the flush: an agent streaming digests is asked for its records while it still runs */
    int look = r->look_only;
    if (!look && r->nruns >= 2) {
        int64_t from = 0, hi = 0;
        int why = 0, more = 0;
        look = verdict(g, r, &from, &hi, &why, &more) < 0 && why == MHAND_DIFFER;
    }
    pthread_mutex_unlock(&lock);
    return look;
}

/* steps_equal - 1 when every run holds step `s` with the same count and digest (and the same inputs digest where
 * all are known), or none holds it; 0 when they differ (*why MHAND_DIFFER), or a run may hold it and memory does not
 * know (MHAND_UNEVEN). */
static int steps_equal(const mrank *r, int64_t s, int *why)
{
    const store_step *first = NULL;
    int held = 0;
    for (int i = 0; i < r->nruns; i++) {
        const store_step *sl = slot_of(&r->runs[i], s);
        if (sl->step != s)
            continue;
        held++;
        if (!first)
            first = sl;
        else if (sl->n != first->n || sl->digest != first->digest ||
                 (!sl->inputs_unknown && !first->inputs_unknown && sl->inputs != first->inputs)) {
            *why = MHAND_DIFFER;
            return 0; /* an absorbed difference (inputs) is the look's to note */
        }
    }
    if (held == 0 || held == r->nruns)
        return 1;
    *why = MHAND_UNEVEN;
    return 0;
}

/* verdict - what the flush does with a rank of group g: 1 mark steps *from..*hi (every run completed them and they
 * are equal here; *more when steps after them are complete too, but not read from the database yet), 0 nothing new,
 * -1 the look compares it (*why: enum metric_handed). */
static int verdict(const mgroup *g, const mrank *r, int64_t *from, int64_t *hi, int *why, int *more)
{
    if (!r->look_only && r->nruns < 2 && r->tried != flushes)
        return 0; /* its first batch came after this flush looked for ended twins: the next one does */
    if (!r->look_only && r->nruns == 1 && twin_streams(g, r->runs[0].key))
        return 0; /* no ended twin here, one streams elsewhere in the group: its batch here comes soon */
    if (r->look_only || r->nruns < 2) {
        *why = r->look_only ? MHAND_LOOK_ONLY : MHAND_ONE_RUN;
        return -1;
    }
    int64_t h = INT64_MAX, lo = INT64_MIN, read = INT64_MAX;
    int cut = 0; /* a run's window starts after the first step memory saw of it */
    for (int i = 0; i < r->nruns; i++) {
        const mrun *u = &r->runs[i];
        if (u->loaded) { /* it ended: it holds what it holds from first on, and nothing more will come */
            lo = u->first > lo ? u->first : lo;
            read = u->upto < read ? u->upto : read;
            continue;
        }
        if (u->max_step == INT64_MIN) {
            *why = MHAND_NO_STEP;
            return -1;
        }
        int64_t known = u->first > u->max_step - MEM_STEPS + 1 ? u->first : u->max_step - MEM_STEPS + 1;
        cut |= known > u->first;
        h = u->max_step - 1 < h ? u->max_step - 1 : h;
        lo = known > lo ? known : lo;
    }
    if (h == INT64_MAX) { /* no run streams here (cannot be: loaded twins come with one that does) */
        *why = MHAND_ONE_RUN;
        return -1;
    }
    *more = h > read; /* batches came since the read: their steps wait for the next one */
    h = h < read ? h : read;
    if (h <= r->marked)
        return 0;
    int64_t f = r->marked == INT64_MIN || r->marked + 1 < lo ? lo : r->marked + 1;
    if (f > h) {
        if (r->marked == INT64_MIN && h == f - 1 && !cut)
            return 0; /* every run began here and none completed a step yet: the next batch brings one */
        *why = MHAND_APART;
        return -1; /* no step every run completed is in memory: they are further apart than its window */
    }
    for (int64_t s = f; s <= h; s++)
        if (!steps_equal(r, s, why))
            return -1;
    *from = f;
    *hi = h;
    return 1;
}

/* lits_free - a statement's `n` array literals. */
static void lits_free(db_lit *a, int n)
{
    for (int k = 0; k < n; k++)
        free(a[k].p);
}

/* A group's ranks whose ended twins the flush reads (load_twins): the statement's arrays as text literals. */
typedef struct loads {
    mgroup *g;   /* freed only by the flush's thread */
    db_lit a[4]; /* ranks, their live run, lo, hi */
    int *ranks;
    int64_t *lo, *hi;
    size_t n;
} loads;

/* wants_load - whether the flush reads rank r's ended twins: exactly one run's batches come here (a rerun whose
 * reference ended before it, or a twin that ended while it runs), and it changed; *lo..*hi the steps memory will
 * compare (*lo > *hi: none yet, only whether twins exist and their counts). */
static int wants_load(const mrank *r, int64_t *lo, int64_t *hi)
{
    if (r->look_only || !r->dirty)
        return 0;
    const mrun *live = NULL;
    int twins = 0;
    for (int i = 0; i < r->nruns; i++) {
        if (r->runs[i].loaded)
            twins++;
        else if (live)
            return 0;
        else
            live = &r->runs[i];
    }
    if (!live || live->max_step == INT64_MIN)
        return 0;
    int64_t known = live->first > live->max_step - MEM_STEPS + 1 ? live->first : live->max_step - MEM_STEPS + 1;
    *hi = live->max_step - 1;
    *lo = r->marked != INT64_MIN && r->marked + 1 > known ? r->marked + 1 : known;
    return !twins || *lo <= *hi; /* twins read before with nothing new to compare: keep them */
}

/* collect_loads_locked - the ranks of group g whose twins the flush reads into `l`. */
static void collect_loads_locked(mgroup *g, loads *l)
{
    l->g = g;
    for (size_t k = 0; k < g->n_ranks; k++) {
        mrank *r = g->ranks[k];
        int64_t lo = 0, hi = 0;
        if (!r || !r->dirty)
            continue;
        r->tried = flushes;
        if (!wants_load(r, &lo, &hi))
            continue;
        int64_t live = 0;
        for (int i = 0; i < r->nruns; i++)
            if (!r->runs[i].loaded)
                live = r->runs[i].key;
        l->ranks = xrealloc(l->ranks, (l->n + 1) * sizeof(int));
        l->lo = xrealloc(l->lo, (l->n + 1) * sizeof(int64_t));
        l->hi = xrealloc(l->hi, (l->n + 1) * sizeof(int64_t));
        l->ranks[l->n] = (int)k;
        l->lo[l->n] = lo;
        l->hi[l->n++] = hi;
        db_lit_add(&l->a[0], (int64_t)k);
        db_lit_add(&l->a[1], live);
        db_lit_add(&l->a[2], lo);
        db_lit_add(&l->a[3], hi);
    }
}

/* drop_loaded_locked - forget the twins rank r read from the database. */
static void drop_loaded_locked(mrank *r)
{
    int kept = 0;
    for (int i = 0; i < r->nruns; i++) {
        if (r->runs[i].loaded) {
            free(r->runs[i].slots);
            cells--;
        } else
            r->runs[kept++] = r->runs[i];
    }
    r->nruns = kept;
}

/* load_group - read the ended twins of l's ranks (cmp_load) and hold them as loaded runs: their counts, and the
 * steps lo..hi they hold (an empty slot is a step the twin does not have). Returns the steps read. On an error the
 * ranks keep none: the flush hands them to the look. */
static unsigned long load_group(loads *l)
{
    mgroup *g = l->g;
    const char *p[5] = {g->name};
    for (int k = 0; k < 4; k++)
        p[k + 1] = db_lit_end(&l->a[k]);
    char err[512];
    PGresult *res = db_exec("cmp_load", 5, p, err, sizeof(err));
    if (!res)
        log_warn("reading group %s's ended twins for the comparison's memory: %s (the look compares them)", g->name,
                 err);
    unsigned long n_read = 0;
    int rows = res ? PQntuples(res) : 0, row = 0;
    pthread_mutex_lock(&lock);
    for (size_t j = 0; j < l->n; j++) {
        int k = l->ranks[j];
        mrank *r = g->ranks[k];
        drop_loaded_locked(r);
        while (row < rows && atoi(PQgetvalue(res, row, 0)) < k)
            row++;
        for (; row < rows && atoi(PQgetvalue(res, row, 0)) == k; row++) {
            int64_t key = strtoll(PQgetvalue(res, row, 1), NULL, 10);
            mrun *u = NULL;
            for (int i = 0; i < r->nruns && !u; i++)
                if (r->runs[i].key == key)
                    u = &r->runs[i];
            if (!u) {
                u = r->look_only ? NULL : run_get_locked(r, key);
                if (!u) { /* more runs than memory compares, or memory full */
                    r->look_only = 1;
                    continue;
                }
                u->loaded = 1;
                u->first = l->lo[j];
                u->upto = l->hi[j];
                u->counted = strtoll(PQgetvalue(res, row, 2), NULL, 10);
            }
            if (PQgetisnull(res, row, 3))
                continue; /* no step in lo..hi */
            int64_t step = strtoll(PQgetvalue(res, row, 3), NULL, 10);
            store_step *sl = slot_of(u, step);
            *sl = (store_step){.step = step,
                               .n = strtoll(PQgetvalue(res, row, 4), NULL, 10),
                               .digest = (uint64_t)strtoll(PQgetvalue(res, row, 5), NULL, 10),
                               .inputs_unknown = PQgetisnull(res, row, 6)};
            sl->inputs = sl->inputs_unknown ? 0 : (uint64_t)strtoll(PQgetvalue(res, row, 6), NULL, 10);
            n_read++;
        }
    }
    pthread_mutex_unlock(&lock);
    if (res)
        PQclear(res);
    return n_read;
}

/* load_twins - read the ended twins of every rank that needs them (wants_load), one statement a group. */
static unsigned long load_twins(void)
{
    loads *all = NULL;
    size_t n = 0;
    pthread_mutex_lock(&lock);
    flushes++;
    for (size_t i = 0; i < n_groups; i++) {
        if (!groups[i]->dirty)
            continue;
        all = xrealloc(all, (n + 1) * sizeof(*all));
        memset(&all[n], 0, sizeof(all[n]));
        collect_loads_locked(groups[i], &all[n]);
        n += all[n].n > 0;
    }
    pthread_mutex_unlock(&lock);
    unsigned long n_read = 0;
    for (size_t i = 0; i < n; i++) {
        n_read += load_group(&all[i]);
        lits_free(all[i].a, 4);
        free(all[i].ranks);
        free(all[i].lo);
        free(all[i].hi);
    }
    free(all);
    return n_read;
}

/* A group's ranks to mark: the statement's arrays as text literals. */
typedef struct marks {
    mgroup *g;   /* freed only by this thread (take_locked) or once it stopped (cmp_mem_clear) */
    db_lit a[6]; /* ranks, from, upto, then per (rank, run): rank, key, counted */
    size_t n;    /* ranks */
    int *ranks;  /* to mark, then told to the look when not marked */
    int64_t *hi; /* per rank to mark */
    int *look;   /* ranks memory hands to the look */
    size_t n_look;
    unsigned long why[MHAND_COUNT]; /* the look's ranks by why (enum metric_handed) */
    unsigned long took;             /* ranks the database marked (mark_group) */
    unsigned long put_off[2];       /* ranks it put off to the next flush: a busy lock, a count not settled */
} marks;

/* collect_locked - the verdicts of group g's dirty ranks into `m`. */
static void collect_locked(mgroup *g, marks *m)
{
    m->g = g;
    int left = 0; /* ranks left dirty for the next flush */
    for (size_t k = 0; k < g->n_ranks; k++) {
        mrank *r = g->ranks[k];
        if (!r || !r->dirty)
            continue;
        int64_t from = 0, hi = 0;
        int why = 0, more = 0, v = verdict(g, r, &from, &hi, &why, &more);
        if (v == 0 || (v == 1 && m->n == MEM_CHUNK)) {
            left = 1; /* nothing new, or the next flush */
            continue;
        }
        r->dirty = v == 1 && more; /* compared up to what was read: the rest at the next flush */
        left |= r->dirty;
        if (v < 0) {
            m->look = xrealloc(m->look, (m->n_look + 1) * sizeof(int));
            m->look[m->n_look++] = (int)k;
            m->why[why]++;
            continue;
        }
        m->ranks = xrealloc(m->ranks, (m->n + 1) * sizeof(int));
        m->hi = xrealloc(m->hi, (m->n + 1) * sizeof(int64_t));
        m->ranks[m->n] = (int)k;
        m->hi[m->n++] = hi;
        db_lit_add(&m->a[0], (int64_t)k);
        db_lit_add(&m->a[1], from);
        db_lit_add(&m->a[2], hi);
        for (int i = 0; i < r->nruns; i++) {
            db_lit_add(&m->a[3], (int64_t)k);
            db_lit_add(&m->a[4], r->runs[i].key);
            db_lit_add(&m->a[5], r->runs[i].counted);
        }
    }
    g->dirty = left;
}

static void group_free(mgroup *g)
{
    for (size_t k = 0; k < g->n_ranks; k++) {
        mrank *r = g->ranks[k];
        if (!r)
            continue;
        for (int i = 0; i < r->nruns; i++)
            free(r->runs[i].slots);
        cells -= (size_t)r->nruns;
        n_mranks--;
        free(r);
    }
    slots -= g->n_ranks;
    free(g->ranks);
    free(g);
}

/* take_locked - the marks of every group with dirty ranks (*n of them); forgets the groups idle for idle_s whose
 * runs all ended on their ranks (or all groups idle for idle_s when a batch found memory short of room since the last
 * flush), and those idle for MEM_KEEP_S. */
static marks *take_locked(size_t *n)
{
    marks *all = NULL;
    size_t k = 0, kept = 0;
    double now = clock_mono_s(), keep = idle_s > MEM_KEEP_S ? idle_s : MEM_KEEP_S;
    int short_now = short_of_room;
    short_of_room = 0;
    for (size_t i = 0; i < n_groups; i++) {
        mgroup *g = groups[i];
        double idle = now - g->touched;
        /* what is still dirty has nothing new to mark (verdict 0) */
        if (idle > keep || (idle > idle_s && (short_now || !g->unended))) {
            group_free(g);
            continue;
        }
        groups[kept++] = g;
        if (!g->dirty)
            continue;
        all = xrealloc(all, (k + 1) * sizeof(*all));
        memset(&all[k], 0, sizeof(all[k]));
        collect_locked(g, &all[k++]);
    }
    n_groups = kept;
    *n = k;
    return all;
}

/* What the marks statement said of a rank (lockstep_cmp_marks' r_state, or not named: the look). */
enum { MARK_LOOK, MARK_TOOK, MARK_BUSY, MARK_COUNT };

/* mark_group - the statement for one group's ranks; sets `marked` in memory for those the database took (m->took),
 * leaves dirty for the next flush those it put off (m->put_off; MEM_RETRIES flushes in a row at most), hands the rest
 * to the look. */
static void mark_group(marks *m, cmp_mem_look_fn look)
{
    mgroup *g = m->g;
    const char *p[7] = {g->name};
    for (int k = 0; k < 6; k++)
        p[k + 1] = db_lit_end(&m->a[k]);
    char err[512];
    PGresult *r = db_exec("cmp_marks", 7, p, err, sizeof(err));
    int top = 0;
    for (size_t j = 0; j < m->n; j++)
        top = m->ranks[j] > top ? m->ranks[j] : top;
    unsigned char *state = xcalloc((size_t)top + 1, 1); /* by rank: MARK_* */
    if (!r)
        log_warn("marking group %s's ranks compared in memory: %s (the look compares them)", g->name, err);
    for (int i = 0; r && i < PQntuples(r); i++) {
        int rank = atoi(PQgetvalue(r, i, 0)), st = atoi(PQgetvalue(r, i, 1));
        if (rank >= 0 && rank <= top)
            state[rank] = st == 0 ? MARK_TOOK : st == 1 ? MARK_BUSY : MARK_COUNT;
    }
    if (r)
        PQclear(r);
    pthread_mutex_lock(&lock);
    for (size_t j = 0; j < m->n; j++) {
        mrank *k = g->ranks[m->ranks[j]];
        unsigned char *st = &state[m->ranks[j]];
        if (*st == MARK_TOOK) {
            k->marked = m->hi[j];
            k->retries = 0;
            m->took++;
        } else if (*st != MARK_LOOK && k->retries < MEM_RETRIES) {
            k->retries++;
            k->dirty = g->dirty = 1; /* the next flush tries again, with what came since */
            m->put_off[*st == MARK_BUSY ? 0 : 1]++;
            *st = MARK_TOOK; /* not for the look */
        } else {
            k->retries = 0;
            *st = MARK_LOOK;
        }
    }
    pthread_mutex_unlock(&lock);
    for (size_t j = 0; j < m->n; j++)
        if (state[m->ranks[j]] == MARK_LOOK)
            look(g->name, m->ranks[j]);
    free(state);
}

void cmp_mem_flush(cmp_mem_look_fn look)
{
    size_t n = 0, held;
    unsigned long marked = 0, handed[MHAND_COUNT] = {0}, put_off[2] = {0}, read = load_twins();
    pthread_mutex_lock(&lock);
    marks *all = take_locked(&n);
    held = cells;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n; i++) {
        marks *m = &all[i];
        if (m->n)
            mark_group(m, look);
        marked += m->took;
        handed[MHAND_REFUSED] += m->n - m->took - m->put_off[0] - m->put_off[1];
        put_off[0] += m->put_off[0];
        put_off[1] += m->put_off[1];
        for (int k = 0; k < MHAND_COUNT; k++)
            handed[k] += m->why[k];
        for (size_t j = 0; j < m->n_look; j++)
            look(m->g->name, m->look[j]);
        lits_free(m->a, 6);
        free(m->ranks);
        free(m->hi);
        free(m->look);
    }
    free(all);
    metrics_compare_memory(held, marked, handed, put_off, read);
}

/* rank_locked - rank `rank` of group `group` in memory; NULL when none is held. */
static const mrank *rank_locked(const char *group, int rank)
{
    const mgroup *g = group_find_locked(group);
    return g && (size_t)rank < g->n_ranks ? g->ranks[rank] : NULL;
}

/* counted_locked - 1 when memory compares rank r itself and counted there exactly the runs `keys` (n of them) with
 * `counts` records each; at[k] (when given) is then run k's place in r->runs. */
static int counted_locked(const mrank *r, const int64_t *keys, const int64_t *counts, size_t n, int *at)
{
    if (!r || r->look_only || (size_t)r->nruns != n)
        return 0;
    for (size_t k = 0; k < n; k++) {
        int i = 0;
        while (i < r->nruns && !(r->runs[i].key == keys[k] && r->runs[i].counted == counts[k]))
            i++;
        if (i == r->nruns)
            return 0;
        if (at)
            at[k] = i;
    }
    return 1;
}

int cmp_mem_counted(const char *group, int rank, const int64_t *keys, const int64_t *counts, size_t n)
{
    if (!group || rank < 0 || n == 0)
        return 0;
    pthread_mutex_lock(&lock);
    int all = counted_locked(rank_locked(group, rank), keys, counts, n, NULL);
    pthread_mutex_unlock(&lock);
    return all;
}

/* held_alike - 1 when run y holds step t as run x does, or has not reached it yet and has not ended (`y_ended`);
 * 0 when they differ, or memory cannot see y's step t (before what it saw of y, or past its window). */
static int held_alike(const mrun *x, const mrun *y, int y_ended, int64_t t)
{
    const store_step *xs = slot_of(x, t), *ys = slot_of(y, t);
    int xh = xs->step == t, yh = ys->step == t;
    if (xh && yh)
        return xs->n == ys->n && xs->digest == ys->digest &&
               (xs->inputs_unknown || ys->inputs_unknown || xs->inputs == ys->inputs);
    if (y->max_step < t) /* y is behind: its step t comes in a batch, its end's look compares it; or y ended short */
        return !y_ended || !xh;
    if (t < y->first || t <= y->max_step - MEM_STEPS)
        return 0;      /* y's step t is not in memory */
    return !xh && !yh; /* both passed t: alike when neither has records there */
}

int cmp_mem_end_quiet(const char *group, int rank, int64_t run_key, const int64_t *keys, const int64_t *counts,
                      const int *ended, size_t n)
{
    if (!group || rank < 0 || n < 2)
        return 0;
    int quiet = 0, at[MEM_RUNS];
    pthread_mutex_lock(&lock);
    const mrank *r = rank_locked(group, rank);
    if (!counted_locked(r, keys, counts, n, at) || r->marked == INT64_MIN)
        goto out;
    const mrun *x = NULL;
    int done[MEM_RUNS] = {0}; /* by place in r->runs: the run ended on the rank */
    for (size_t k = 0; k < n; k++) {
        const mrun *u = &r->runs[at[k]];
        if (u->loaded || u->max_step == INT64_MIN)
            goto out;
        done[at[k]] = ended[k];
        if (u->key == run_key)
            x = u;
    }
    /* steps after memory's mark, within x's window: before it, memory has not seen them */
    if (!x || r->marked + 1 < x->first || r->marked < x->max_step - MEM_STEPS)
        goto out;
    for (int64_t t = r->marked + 1; t <= x->max_step; t++)
        for (int i = 0; i < r->nruns; i++)
            if (&r->runs[i] != x && !held_alike(x, &r->runs[i], done[i], t))
                goto out;
    quiet = 1;
out:
    pthread_mutex_unlock(&lock);
    return quiet;
}

void cmp_mem_end_seen(const char *group, int rank, int64_t run_key)
{
    if (!group || rank < 0)
        return;
    pthread_mutex_lock(&lock);
    mgroup *g = group_find_locked(group);
    mrank *r = g && (size_t)rank < g->n_ranks ? g->ranks[rank] : NULL;
    for (int i = 0; r && i < r->nruns; i++) {
        mrun *u = &r->runs[i];
        if (u->key == run_key && !u->loaded && !u->ended) {
            u->ended = 1;
            g->unended--;
        }
    }
    pthread_mutex_unlock(&lock);
}

void cmp_mem_clear(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_groups; i++)
        group_free(groups[i]);
    free(groups);
    groups = NULL;
    n_groups = cells = n_mranks = slots = 0;
    pthread_mutex_unlock(&lock);
}
