/* compare.c - twin comparison as records arrive: the queue of groups and ranks batches touched, the threads that look
 * at them (per-step digests first, in one round trip a group, under each rank's lock) and hand differing ranks to
 * step.c. */
#include "server/twins/compare.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dtype.h"
#include "server/peers/forward.h"
#include "server/twins/cmp_int.h"
#include "server/twins/cmp_mem.h"
#include "server/peers/lease.h"
#include "server/core/clock.h"
#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

/* The sweep (cmp_active) reads every rank with progress in its window: ~6 µs of PostgreSQL a rank, 0.6 s at 100,000
 * ranks posting every 10 s (docs/scale.md). It runs every SWEEP_S seconds, or SWEEP_SHARE times as long as the last
 * one took (SWEEP_MAX_S at most), so that it takes at most a twentieth of a thread and of a PostgreSQL core; it looks
 * back over its period and SWEEP_MARGIN_S more. */
#define SWEEP_S 5
#define SWEEP_SHARE 20
#define SWEEP_MAX_S 60
#define SWEEP_MARGIN_S 10
/* comparing is mostly waiting for PostgreSQL: eight at once (one look a group at a time; the differing ranks a look
 * finds are shared out) */
#define CMP_THREADS 8
#define CMP_CHUNK 2000 /* ranks one first look takes */
#define CMP_GAP_S 0.02 /* a group is looked at again at most this often: under load a look takes many ranks */
/* the same when only step digests came for it: their differing steps wait a step for their records, and a look costs
 * PostgreSQL ~1 ms however few ranks it takes (at a batch a step, looks of one or two ranks were half of its time;
 * docs/scale.md) */
#define CMP_GAP_DIGESTS_S 0.1
/* the same after a rank's end memory vouched for: no reply waits for that look, and a fleet's ends come a few at a
 * time over a minute or two, so it takes half a second's ends of a group at once (at 20 ms, ~7 ranks a look) */
#define CMP_GAP_END_S 0.5
#define CMP_IDLE_S 1.0 /* a group nothing came for since this long is forgotten */
/* how often the comparison's memory marks the steps it found equal (cmp_mem.c): a rank's mark trails its data by
 * this much, and a differing step goes to the look at most this late */
#define CMP_MEM_FLUSH_S 0.25

/* A group with ranks to compare: the ranks batches touched since its last look, each once. */
typedef struct pgroup {
    char name[256];
    double commit_s; /* the earliest commit among them (a fallback: the latency is read from the database) */
    int *ranks;
    size_t n, cap;
    unsigned char *bits; /* which ranks are in `ranks` */
    size_t bits_cap;
    int active;  /* threads comparing some of its ranks now */
    double last; /* when its last look started (monotonic seconds) */
    double gap;  /* how long after `last` the next look may start: the smallest its notices since asked for */
} pgroup;

static void cmp_loop(worker *w);
static worker thread = WORKER_INIT("comparison", cmp_loop);
static void mem_loop(worker *w);
static worker mem_thread = WORKER_INIT("comparison memory", mem_loop);
static pgroup **groups; /* under thread.lock: groups with ranks to compare or being compared, oldest first */
static size_t n_groups, cap_groups;

static found_item *found_head, *found_tail; /* under thread.lock */
static void forwarded_sums(const char *group, int64_t run_key, int rank, const store_step *st, size_t n,
                           int64_t counted, int flags);
static void forwarded_look(const char *group, int rank);
void cmp_on_divergence(cmp_divergence_fn fn)
{
    cmp_step_on_divergence(fn);
}

void cmp_register(void)
{
    cmp_step_register();
    cmp_mem_register();
    fwd_on_groups(forwarded_sums, forwarded_look);
    /* The first look (lockstep_cmp_ranks, sql/functions/compare.sql): ranks without a differing step are marked (or
     * their step divergence dropped) in the statement's own transaction, under their locks; the others come back.
     * Its commit does not wait for the disk, as the comparison's own do not (step.c): a mark lost in a crash is
     * compared again at the next start (cmp_backlog). */
#define CMP_RANKS_FROM                                                                                                 \
    "SELECT r_rank, keys, ids, hi, upto, newest, step, from_step, waiting "                                            \
    "FROM set_config('synchronous_commit', 'off', true), "
    db_register("cmp_ranks", CMP_RANKS_FROM "lockstep_cmp_ranks($1, $2::int[], $3)");
    /* The same for one rank a reply waits for (cmp_check), its lock waited for rather than skipped when busy */
    db_register("cmp_rank_wait", CMP_RANKS_FROM "lockstep_cmp_rank_wait($1, $2::int, $3)");
#undef CMP_RANKS_FROM
    /* Before a look (one round trip): whether the group's runs have different rank counts (compared on logical
     * tensors instead), and which of the ranks looked at hold restored state blocks (record_frames kind 4, under
     * the partial index record_frames_state: checked against the twins before their steps). */
    db_register("cmp_prelook",
                "SELECT (SELECT count(DISTINCT ranks) > 1 FROM runs WHERE twin_group = $1), "
                "(SELECT coalesce(array_agg(DISTINCT f.rank), '{}') FROM runs r JOIN record_frames f "
                "ON f.run_key = r.run_key AND f.rank = ANY($2::int[]) AND f.kind = 4 WHERE r.twin_group = $1)");
    /* the group on one rank, for a restore check (server/twins/restore.c) and a rank's end (end_quiet): every run
     * (first GROUP_MAX_RUNS by key), its start, its progress there, whether it ended there, its rank count and its
     * records there (-1: none) */
    db_register("cmp_runs", "SELECT r.run_key, r.run_id, r.start_step, p.max_step, "
                            "(e.run_key IS NOT NULL OR r.status <> 'running') AS ended, r.ranks, "
                            "coalesce(p.n_records, -1) "
                            "FROM runs r LEFT JOIN rank_progress p ON p.run_key = r.run_key AND p.rank = $2 "
                            "LEFT JOIN rank_ends e ON e.run_key = r.run_key AND e.rank = $2 "
                            "WHERE r.twin_group = $1 ORDER BY r.run_key LIMIT " GROUP_MAX_RUNS_TEXT);
    /* At start: every group and rank whose comparison is older than its data (work a killed lockstepd left). */
    db_register("cmp_backlog",
                "SELECT x.twin_group, x.rank FROM (SELECT r.twin_group, p.rank, max(p.updated_at) AS t "
                "FROM rank_progress p JOIN runs r USING (run_key) WHERE r.twin_group IS NOT NULL GROUP BY 1, 2) x "
                "LEFT JOIN group_checks g USING (twin_group, rank) WHERE g.rank IS NULL OR g.checked_at < x.t "
                "OR g.checked_upto IS DISTINCT FROM g.target AND g.target IS NOT NULL "
                "UNION SELECT r.twin_group, e.rank FROM rank_ends e JOIN runs r USING (run_key) "
                "LEFT JOIN group_checks g ON g.twin_group = r.twin_group AND g.rank = e.rank "
                "WHERE r.twin_group IS NOT NULL AND (g.rank IS NULL OR "
                "lockstep_checked_before_end(g.checked_at, e.ended_at, r.ended_at))");
    /* Every few seconds: ranks with recent records or ends that no comparison has seen yet (written by
     * another lockstepd on the same database, or a notice that got lost). Records of the last second are on their
     * way (their notice, or the comparison's memory, which marks them within CMP_MEM_FLUSH_S): looking at them too
     * took a tenth of the ranks of a fleet posting every step into a look every sweep. With each rank with records,
     * its runs' record counts there: a rank whose every record the comparison's memory counted is memory's to mark
     * or hand over (cmp_mem_counted); under a backlog, looking at those too sent a third of the ranks batches came
     * for into looks that found nothing new (twins a little apart). A rank on which a run of the group ended (its
     * rank's end, or the run is over) comes without counts, so the look compares it: memory takes a running run's
     * newest step as incomplete, an ended run's is complete. A rank whose check was made before the end of a run of
     * its group (lockstep_checked_before_end, sql/functions/compare.sql: the twin status counts it unchecked) comes
     * the same way: the run's end asked for every rank, but a look that found a rank's lock taken leaves it to the
     * holder, and memory's flush may hold it and write nothing (a rank it finds marked as far already:
     * lockstep_cmp_marks). The ends in the window are found by time (rank_ends_at, runs_ended_at: migration 033),
     * not by reading every end ever stored. */
    db_register("cmp_active",
                "WITH due AS (SELECT DISTINCT r.twin_group, p.rank FROM rank_progress p "
                "JOIN runs r USING (run_key) "
                "LEFT JOIN group_checks g ON g.twin_group = r.twin_group AND g.rank = p.rank "
                "WHERE r.twin_group IS NOT NULL AND p.updated_at > now() - $1::interval "
                "AND p.updated_at < now() - interval '1 second' "
                "AND (g.rank IS NULL OR g.checked_at < p.updated_at)) "
                "SELECT d.twin_group, d.rank, array_agg(q.run_key ORDER BY q.run_key) FILTER (WHERE "
                "q.rank IS NOT NULL), array_agg(q.n_records ORDER BY q.run_key) FILTER (WHERE q.rank "
                "IS NOT NULL), bool_or(u.status <> 'running' OR EXISTS "
                "(SELECT 1 FROM rank_ends e WHERE e.run_key = u.run_key AND e.rank = d.rank)) "
                "FROM due d JOIN runs u ON u.twin_group = d.twin_group "
                "LEFT JOIN rank_progress q ON q.run_key = u.run_key AND q.rank = d.rank GROUP BY 1, 2 "
                "UNION ALL SELECT DISTINCT r.twin_group, e.rank, NULL::bigint[], NULL::bigint[], true "
                "FROM (SELECT run_key, rank, ended_at FROM rank_ends WHERE ended_at > now() - $1::interval "
                "UNION SELECT e.run_key, e.rank, e.ended_at FROM runs x JOIN rank_ends e USING (run_key) "
                "WHERE x.ended_at > now() - $1::interval) e JOIN runs r USING (run_key) "
                "LEFT JOIN group_checks g ON g.twin_group = r.twin_group AND g.rank = e.rank "
                "WHERE r.twin_group IS NOT NULL "
                "AND (g.rank IS NULL OR lockstep_checked_before_end(g.checked_at, e.ended_at, "
                "r.ended_at))");
    cmp_register_restores();
    cmp_register_resumes();
    cmp_register_logical();
}

static void notify(const char *group, int rank, double commit_s, double gap)
{
    if (!group || !*group || rank < 0)
        return;
    worker_lock(&thread);
    pgroup *g = NULL;
    for (size_t i = 0; i < n_groups && !g; i++)
        if (!strcmp(groups[i]->name, group))
            g = groups[i];
    if (!g) {
        if (n_groups == cap_groups) {
            cap_groups = cap_groups ? 2 * cap_groups : 16;
            groups = xrealloc(groups, cap_groups * sizeof(*groups));
        }
        g = xcalloc(1, sizeof(*g));
        snprintf(g->name, sizeof(g->name), "%s", group);
        groups[n_groups++] = g;
    }
    if (commit_s > 0 && (g->commit_s == 0 || commit_s < g->commit_s))
        g->commit_s = commit_s;
    if (g->n == 0 || gap < g->gap)
        g->gap = gap;
    size_t byte = (size_t)rank / 8;
    if (byte >= g->bits_cap) {
        size_t cap = g->bits_cap ? g->bits_cap : 64;
        while (cap <= byte)
            cap *= 2;
        g->bits = xrealloc(g->bits, cap);
        memset(g->bits + g->bits_cap, 0, cap - g->bits_cap);
        g->bits_cap = cap;
    }
    if (!(g->bits[byte] & (1u << (rank % 8)))) {
        g->bits[byte] |= (unsigned char)(1u << (rank % 8));
        if (g->n == g->cap) {
            g->cap = g->cap ? 2 * g->cap : 16;
            g->ranks = xrealloc(g->ranks, g->cap * sizeof(int));
        }
        g->ranks[g->n++] = rank;
    }
    worker_kick_locked(&thread);
    worker_unlock(&thread);
}

/* cmp_notify queues the rank here when this instance holds the group's lease (lease.h), else forwards it to the
 * instance that does. */
void cmp_notify(const char *group, int rank, double commit_s)
{
    if (!group || !*group || rank < 0)
        return;
    if (lease_mine(group))
        notify(group, rank, commit_s, CMP_GAP_S);
    else
        fwd_look(group, rank);
}

void cmp_stored(const char *group, int64_t run_key, const srv_batch *b, const store_result *res)
{
    double commit_s = res->commit_s;
    if (!group || !*group)
        return; /* in no twin group: nothing compares it */
    int mine = lease_mine(group);
    if (b->held) { /* records asked for: the look compares their step */
        if (mine)
            notify(group, (int)b->rank, commit_s, CMP_GAP_S);
        else
            fwd_look(group, (int)b->rank);
        return;
    }
    /* the holder's memory gets the sums; here, memory compares them (its next flush marks the rank or hands it to
     * the look) unless it cannot, and then the look comes at once: at most every 100 ms a group streaming digests (a
     * differing step waits for its records anyway) */
    if (!mine)
        fwd_sums(group, run_key, (int)b->rank, res->steps, res->n_steps, res->counted, b->n_digests ? FWD_DIGESTS : 0);
    else if (cmp_mem_absorb(group, run_key, (int)b->rank, res->steps, res->n_steps, res->counted))
        notify(group, (int)b->rank, commit_s, b->n_digests ? CMP_GAP_DIGESTS_S : CMP_GAP_S);
}

/* forwarded_sums, forwarded_look - what another instance forwarded (forward.h), for the groups this one compares. */
static void forwarded_sums(const char *group, int64_t run_key, int rank, const store_step *st, size_t n,
                           int64_t counted, int flags)
{
    if (lease_mine(group) && cmp_mem_absorb(group, run_key, rank, st, n, counted))
        notify(group, rank, 0, flags & FWD_DIGESTS ? CMP_GAP_DIGESTS_S : CMP_GAP_S);
}

static void forwarded_look(const char *group, int rank)
{
    if (lease_mine(group))
        notify(group, rank, 0, CMP_GAP_S);
}

/* mem_look - a rank the comparison's memory hands to the look. */
static void mem_look(const char *group, int rank)
{
    notify(group, rank, 0, CMP_GAP_S);
}

static void mem_loop(worker *w)
{
    while (!worker_stopping(w)) {
        worker_lock(w);
        if (!w->stopping)
            worker_wait_locked(w, CMP_MEM_FLUSH_S);
        worker_unlock(w);
        cmp_mem_flush(mem_look);
    }
}

/* parse_ids - a text[] of run ids ("{a,b}") into `ids`; returns how many. */
static int parse_ids(const char *s, char ids[][40], int cap)
{
    int n = 0;
    if (*s == '{')
        s++;
    while (*s && *s != '}' && n < cap) {
        size_t len = strcspn(s, ",}");
        snprintf(ids[n++], 40, "%.*s", (int)(len < 39 ? len : 39), s);
        s += len;
        if (*s == ',')
            s++;
    }
    return n;
}

/* check_restores - the restore checks of `rank` of `group` (server/twins/restore.c), in a transaction under the
 * rank's lock; the fleet is told after the commit. Every run of the group is paired (left-out ones too). Returns 1
 * when a restore difference was stored, 0 when none (or the rank's lock was taken: its batch asks again), -1 on a
 * database error. */
static int check_restores(const char *group, int rank, double commit_s)
{
    int locked = cmp_txn_begin(group, rank, 0);
    if (locked <= 0)
        return locked;
    char rk[16], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {group, rk};
    cmp_found found;
    memset(&found, 0, sizeof(found));
    PGresult *r = db_exec("cmp_runs", 2, p, err, sizeof(err));
    if (!r)
        return cmp_txn_end(group, -1, &found);
    cmp_group G;
    memset(&G, 0, sizeof(G));
    cmp_group *g = &G;
    for (int i = 0; i < PQntuples(r) && g->nruns < GROUP_MAX_RUNS; i++) {
        int k = g->nruns++;
        g->keys[k] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        snprintf(g->ids[k], sizeof(g->ids[k]), "%s", PQgetvalue(r, i, 1));
        g->start[k] = strtoll(PQgetvalue(r, i, 2), NULL, 10);
        g->max_step[k] = PQgetisnull(r, i, 3) ? INT64_MIN : strtoll(PQgetvalue(r, i, 3), NULL, 10);
        g->ended[k] = PQgetvalue(r, i, 4)[0] == 't';
        g->ranks[k] = atoi(PQgetvalue(r, i, 5));
    }
    PQclear(r);
    cmp_key_array(g);
    int rc = g->nruns >= 2 ? cmp_check_restores(group, rank, g, commit_s, &found) : 0;
    return cmp_txn_end(group, rc, &found);
}

/* check_logical - a group of runs of different rank counts compared on its logical tensors
 * (server/twins/logical.c), in a transaction under the lock of the rank that asked; the fleet is told after the
 * commit, and the group is queued again when more steps are left. Returns as check_restores. */
static int check_logical(const char *group, int rank, double commit_s)
{
    int locked = cmp_txn_begin(group, rank, 0);
    if (locked <= 0)
        return locked;
    cmp_found found;
    memset(&found, 0, sizeof(found));
    int again = 0;
    int rc = cmp_txn_end(group, cmp_check_logical(group, commit_s, &found, &again), &found);
    if (rc >= 0 && again)
        cmp_notify(group, rank, commit_s);
    return rc;
}

/* prelook - before the digests' look at ranks `ranks` of `group`: a group of runs with different rank counts is
 * compared on its logical tensors instead (returns 2 after doing so, or -1); restored state blocks on these ranks
 * are checked (a restore difference is stored before any later step's). Returns 1 when something was stored, 0
 * when not, -1 on a database error. */
static int prelook(const char *group, const int *ranks, size_t n, double commit_s)
{
    char err[512];
    char *arr = xmalloc(n * 12 + 3);
    size_t len = 0;
    arr[len++] = '{';
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(arr + len, "%s%d", i ? "," : "", ranks[i]);
    arr[len++] = '}';
    arr[len] = 0;
    const char *p[] = {group, arr};
    PGresult *r = db_exec("cmp_prelook", 2, p, err, sizeof(err));
    free(arr);
    if (!r)
        return -1;
    int layouts = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    int64_t restored[CMP_CHUNK];
    int nr = PQntuples(r) == 1 ? db_int_array_parse(PQgetvalue(r, 0, 1), restored, CMP_CHUNK) : 0;
    PQclear(r);
    if (nr) { /* a run restored a checkpoint: it is compared from the step after it, whatever start it registered */
        int again = 0, moved = cmp_resume_starts(group, &again);
        if (moved < 0)
            return -1;
        if (again)
            cmp_notify(group, ranks[0], commit_s);
        for (int k = 0; k < moved; k++)
            cmp_notify(group, k, commit_s);
    }
    if (layouts) /* runs of different rank counts: their ranks hold different pieces; compare logical tensors */
        return check_logical(group, ranks[0], commit_s) < 0 ? -1 : 2;
    int any = 0;
    for (int i = 0; i < nr; i++) {
        int got = check_restores(group, (int)restored[i], commit_s);
        if (got < 0)
            return -1;
        any |= got > 0;
    }
    return any;
}

/* found_run - cmp_found_run, and the rank queued again when it asks to be. */
static int found_run(const found_item *f)
{
    int again = 0;
    int got = cmp_found_run(f, &again);
    if (again)
        cmp_notify(f->group, f->rank, f->commit_s);
    return got;
}

/* look_group - the first look at `n` ranks of `group` in one round trip a chunk; then each rank with a differing
 * step compared on its own: here when `share` is 0, else handed to the comparison threads (a burst of them is
 * compared side by side). With `wait` (one rank a reply waits for: cmp_check) the look waits for the rank's lock where
 * it would skip the rank while another look or memory's marks hold it (lockstep_cmp_rank_wait). Returns 1 when some
 * divergence was stored here, 0 when none, -1 on a database error (the ranks not compared are queued again). */
static int look_group(const char *group, const int *ranks, size_t n, double commit_s, int share, int wait,
                      found_item ***out, size_t *n_out)
{
    wait &= n == 1;
    int any = 0;
    found_item **many = NULL; /* share: the differing ranks of this look, for the caller */
    size_t n_many = 0, n_dropped = 0;
    cmp_found dropped = {.stored = 0}; /* what the look dropped, told once it is over */
    char mr[16], err[512];
    snprintf(mr, sizeof(mr), "%d", GROUP_MAX_RUNS);
    for (size_t c = 0; c < n; c += CMP_CHUNK) {
        int pre = prelook(group, ranks + c, n - c < CMP_CHUNK ? n - c : CMP_CHUNK, commit_s);
        if (pre < 0) {
            for (size_t i = c; i < n; i++)
                cmp_notify(group, ranks[i], commit_s); /* try again shortly */
            return -1;
        }
        if (pre == 2) {
            if (share) {
                *out = NULL;
                *n_out = 0;
            }
            return 0; /* compared on logical tensors: nothing per rank */
        }
        any |= pre;
    }
    for (size_t c = 0; c < n; c += CMP_CHUNK) {
        size_t m = n - c < CMP_CHUNK ? n - c : CMP_CHUNK;
        char *arr = xmalloc(m * 12 + 3);
        size_t len = 0;
        arr[len++] = '{';
        for (size_t i = 0; i < m; i++)
            len += (size_t)sprintf(arr + len, "%s%d", i ? "," : "", ranks[c + i]);
        arr[len++] = '}';
        arr[len] = 0;
        char one[16];
        snprintf(one, sizeof(one), "%d", ranks[c]);
        const char *p[] = {group, wait ? one : arr, mr};
        PGresult *r = db_exec(wait ? "cmp_rank_wait" : "cmp_ranks", 3, p, err, sizeof(err));
        free(arr);
        if (!r) {
            for (size_t i = c; i < n; i++)
                cmp_notify(group, ranks[i], commit_s); /* try again shortly */
            for (size_t i = 0; i < n_many; i++)
                cmp_notify(group, many[i]->rank, commit_s), free(many[i]);
            free(many);
            return -1;
        }
        for (int i = 0; i < PQntuples(r); i++) {
            int rank = atoi(PQgetvalue(r, i, 0));
            if (PQgetisnull(r, i, 1)) { /* its step divergence no longer shows: dropped and committed */
                if (!dropped.stored)
                    dropped = (cmp_found){.stored = -1, .rank = rank};
                n_dropped++;
                continue;
            }
            int64_t keys[GROUP_MAX_RUNS];
            char ids[GROUP_MAX_RUNS][40];
            int nruns = db_int_array_parse(PQgetvalue(r, i, 1), keys, GROUP_MAX_RUNS);
            if (parse_ids(PQgetvalue(r, i, 2), ids, GROUP_MAX_RUNS) != nruns) {
                log_warn("comparing group %s rank %d: the runs' ids do not parse", group, rank);
                continue;
            }
            found_item *f = xcalloc(1, sizeof(*f));
            snprintf(f->group, sizeof(f->group), "%s", group);
            f->rank = rank;
            f->nruns = nruns;
            memcpy(f->keys, keys, sizeof(keys));
            memcpy(f->ids, ids, sizeof(ids));
            f->hi = strtoll(PQgetvalue(r, i, 3), NULL, 10);
            f->upto = strtoll(PQgetvalue(r, i, 4), NULL, 10);
            f->newest = strtoll(PQgetvalue(r, i, 5), NULL, 10);
            f->step = strtoll(PQgetvalue(r, i, 6), NULL, 10);
            f->from = strtoll(PQgetvalue(r, i, 7), NULL, 10);
            f->waiting = PQgetvalue(r, i, 8)[0] == 't';
            f->wait = wait;
            f->commit_s = commit_s;
            if (share) {
                many = xrealloc(many, (n_many + 1) * sizeof(*many));
                many[n_many++] = f;
                continue;
            }
            int got = found_run(f);
            free(f);
            if (got > 0)
                any = 1;
        }
        PQclear(r);
    }
    if (n_dropped) { /* cmp_ranks committed: the fleet may be told */
        if (n_dropped > 1)
            log_info("group %s: %zu ranks' divergences no longer show", group, n_dropped);
        cmp_tell(group, &dropped);
    }
    if (share) {
        *out = many;
        *n_out = n_many;
    }
    return any;
}

/* found_share - what a look found, once its group is free for the next look: one rank to any thread, a burst
 * compared together here (two round trips). Frees the items. */
static void found_share(found_item **many, size_t n)
{
    if (n == 1) {
        worker_lock(&thread);
        if (found_tail)
            found_tail->next = many[0];
        else
            found_head = many[0];
        found_tail = many[0];
        worker_kick_locked(&thread);
        worker_unlock(&thread);
    } else if (n > 1) {
        for (size_t i = 0; i < n; i++) {
            found_run(many[i]);
            free(many[i]);
        }
    }
    free(many);
}

int cmp_check(const char *group, int rank, double commit_s)
{
    return look_group(group, &rank, 1, commit_s, 0, 1, NULL, NULL);
}

/* end_quiet - whether the comparison's memory vouches for the end of run `run_key` on `rank` (cmp_mem_end_quiet),
 * from the group's runs as the database holds them now (cmp_runs); never where the runs registered different rank
 * counts (their logical tensors: the look). */
static int end_quiet(const char *group, int rank, int64_t run_key)
{
    if (!lease_mine(group))
        return 0;
    char rk[16], err[256];
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {group, rk};
    PGresult *r = db_exec("cmp_runs", 2, p, err, sizeof(err));
    if (!r)
        return 0;
    int64_t keys[GROUP_MAX_RUNS], counts[GROUP_MAX_RUNS];
    int ended[GROUP_MAX_RUNS], n = PQntuples(r), same = 1;
    for (int i = 0; i < n; i++) {
        keys[i] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        ended[i] = PQgetvalue(r, i, 4)[0] == 't';
        same &= !strcmp(PQgetvalue(r, i, 5), PQgetvalue(r, 0, 5));
        counts[i] = strtoll(PQgetvalue(r, i, 6), NULL, 10);
    }
    PQclear(r);
    return same && cmp_mem_end_quiet(group, rank, run_key, keys, counts, ended, (size_t)n);
}

int cmp_end(const char *group, int rank, int64_t run_key)
{
    cmp_mem_end_seen(group, rank, run_key);
    if (end_quiet(group, rank, run_key)) {
        metrics_compare_end(1);
        notify(group, rank, 0, CMP_GAP_END_S);
        return 0;
    }
    metrics_compare_end(0);
    return cmp_check(group, rank, 0);
}

/* memory_counted - whether the comparison's memory counted every record of cmp_active's row i (its runs' keys and
 * record counts in columns 2 and 3) and no run of the group ended on its rank (column 4). */
static int memory_counted(const char *group, int rank, const PGresult *r, int i)
{
    if (PQgetisnull(r, i, 2) || PQgetisnull(r, i, 3) || strcmp(PQgetvalue(r, i, 4), "f") != 0)
        return 0;
    int64_t keys[GROUP_MAX_RUNS], counts[GROUP_MAX_RUNS];
    int n = db_int_array_parse(PQgetvalue(r, i, 2), keys, GROUP_MAX_RUNS);
    if (n < 1 || db_int_array_parse(PQgetvalue(r, i, 3), counts, GROUP_MAX_RUNS) != n)
        return 0;
    return cmp_mem_counted(group, rank, keys, counts, (size_t)n);
}

static double next_sweep;             /* under thread.lock */
static double sweep_period = SWEEP_S; /* under thread.lock */

/* sweep - queue the groups with recent activity (and set the period to the next one by what it took); at start
 * (`backlog`), every group and rank whose shared steps are not all compared yet (work a killed lockstepd left
 * undone). */
static void sweep(int backlog)
{
    char err[256], window[32];
    worker_lock(&thread);
    snprintf(window, sizeof(window), "%.0f seconds", sweep_period + SWEEP_MARGIN_S);
    worker_unlock(&thread);
    const char *p[] = {window};
    double t0 = clock_mono_s();
    PGresult *r =
        backlog ? db_exec("cmp_backlog", 0, NULL, err, sizeof(err)) : db_exec("cmp_active", 1, p, err, sizeof(err));
    if (!backlog) {
        double took = clock_mono_s() - t0, period = took * SWEEP_SHARE;
        period = period < SWEEP_S ? SWEEP_S : period > SWEEP_MAX_S ? SWEEP_MAX_S : period;
        worker_lock(&thread);
        sweep_period = period;
        worker_unlock(&thread);
        metrics_compare_sweep(took, period);
    }
    if (!r)
        return;
    for (int i = 0; i < PQntuples(r); i++) { /* the groups this instance compares, and those nobody does now */
        const char *group = PQgetvalue(r, i, 0);
        int rank = atoi(PQgetvalue(r, i, 1));
        if (!lease_mine(group) || (!backlog && memory_counted(group, rank, r, i)))
            continue;
        notify(group, rank, 0, CMP_GAP_S);
    }
    PQclear(r);
}

/* comeback_seen - 1 once after each time lockstepd reconnected to a PostgreSQL it had lost (db_comebacks): the
 * comparisons committed last before it (synchronous_commit off) may be gone, a standby promoted in its place has
 * only what reached it, and their ranks are not all within cmp_active's 15 s any more, so the sweep looks at the
 * whole backlog, as at a start. */
static int comeback_seen(void)
{
    static atomic_ulong seen;
    unsigned long now = db_comebacks();
    return atomic_exchange(&seen, now) != now;
}

/* prune_locked - forget the groups nothing came for in a while. */
static void prune_locked(double now)
{
    size_t k = 0;
    for (size_t i = 0; i < n_groups; i++) {
        pgroup *g = groups[i];
        if (!g->n && !g->active && now - g->last > CMP_IDLE_S) {
            free(g->ranks);
            free(g->bits);
            free(g);
        } else {
            groups[k++] = g;
        }
    }
    n_groups = k;
}

/* take_locked - the ranks of the oldest group with ranks to compare that no thread looks at now, in a new array
 * the caller frees (*n of them), with the group's commit; NULL when none may be taken now (a group is looked at
 * again at most every CMP_GAP_S, or CMP_GAP_DIGESTS_S when only step digests came for it, so that under load one
 * look takes many ranks). */
static pgroup *take_locked(int **ranks, size_t *n, double *commit_s)
{
    double now = clock_mono_s();
    prune_locked(now);
    for (size_t i = 0; i < n_groups; i++) {
        pgroup *g = groups[i];
        if (!g->n || g->active || now - g->last < g->gap)
            continue;
        g->last = now;
        *ranks = g->ranks;
        *n = g->n;
        *commit_s = g->commit_s;
        g->ranks = NULL;
        g->n = g->cap = 0;
        g->commit_s = 0;
        memset(g->bits, 0, g->bits_cap);
        g->active = 1;
        return g;
    }
    return NULL;
}

/* runnable_locked - 0 when nothing waits; else how long until something may be done (a tiny positive time when
 * it may now: a found rank, or a group whose gap has passed). */
static double runnable_locked(void)
{
    if (found_head)
        return 1e-9;
    double now = clock_mono_s(), wait = 0;
    for (size_t i = 0; i < n_groups; i++) {
        const pgroup *g = groups[i];
        if (!g->n || g->active)
            continue;
        double w = g->last + g->gap - now;
        if (w <= 0)
            return 1e-9;
        if (wait == 0 || w < wait)
            wait = w;
    }
    return wait;
}

/* release_locked - a thread is done with `g`. It stays queued, empty, so that its gap holds for the next notice
 * (prune_locked forgets it later). */
static void release_locked(pgroup *g)
{
    g->active = 0;
}

static void cmp_loop(worker *w)
{
    char err[512];
    if (db_prepare_all(err, sizeof(err)) < 0) /* connected and ready before the first divergence waits on it */
        log_warn("a comparison thread could not prepare its statements yet: %s", err);
    worker_lock(w);
    int first = next_sweep == 0;
    if (first)
        next_sweep = clock_mono_s() + sweep_period;
    worker_unlock(w);
    if (first)
        sweep(1);
    for (;;) {
        worker_lock(w);
        for (;;) {
            double until = runnable_locked(), left = next_sweep - clock_mono_s();
            if (w->stopping || left <= 0 || (until > 0 && until <= 1e-9))
                break;
            worker_wait_locked(w, until > 0 && until < left ? until : left);
        }
        found_item *f = found_head;
        if (f) { /* a differing rank first: its divergence waits on it */
            found_head = f->next;
            if (!found_head)
                found_tail = NULL;
            if (found_head)
                worker_kick_locked(w);
            worker_unlock(w);
            if (!worker_stopping(w))
                found_run(f);
            free(f);
            continue;
        }
        int *ranks = NULL;
        size_t n = 0;
        double commit_s = 0;
        pgroup *g = take_locked(&ranks, &n, &commit_s);
        char name[256] = "";
        if (g)
            snprintf(name, sizeof(name), "%s", g->name);
        if (g && runnable_locked() > 0)
            worker_kick_locked(w); /* the rest of this group, or another group, for the other thread */
        int do_sweep = clock_mono_s() >= next_sweep;
        if (do_sweep)
            next_sweep = clock_mono_s() + sweep_period;
        worker_unlock(w);
        found_item **many = NULL;
        size_t n_many = 0;
        /* another instance took the group's lease since its ranks were queued: its own notices and sweep cover them */
        int failed = g && !worker_stopping(w) && lease_mine(name) &&
                     look_group(name, ranks, n, commit_s, 1, 0, &many, &n_many) < 0;
        free(ranks);
        worker_lock(w);
        if (g)
            release_locked(g); /* the next look may start while this thread compares what this one found */
        if (runnable_locked() > 0)
            worker_kick_locked(w);
        worker_unlock(w);
        if (n_many)
            found_share(many, n_many);
        else
            free(many);
        if (worker_stopping(w))
            return;
        if (failed)
            usleep(200000);
        if (do_sweep) /* after a comeback or a takeover, work may have been left undone: the whole backlog */
            sweep(comeback_seen() | lease_takeovers_seen());
    }
}

int cmp_start(void)
{
    if (worker_start(&thread, CMP_THREADS) < 0)
        return -1;
    return worker_start(&mem_thread, 1);
}

void cmp_stop(void)
{
    worker_stop(&mem_thread);
    cmp_mem_clear(); /* what it held unmarked is compared by the look at the next start (cmp_backlog) */
    worker_stop(&thread);
    /* no thread is left: what was still waiting is compared again at the next start (cmp_backlog) */
    while (found_head) {
        found_item *f = found_head;
        found_head = f->next;
        free(f);
    }
    found_tail = NULL;
    for (size_t i = 0; i < n_groups; i++) {
        free(groups[i]->ranks);
        free(groups[i]->bits);
        free(groups[i]);
    }
    free(groups);
    groups = NULL;
    n_groups = cap_groups = 0;
}
