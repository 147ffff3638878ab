/* cons_check.c - the consensus thread: the queue of runs batches touched, and the judging of their complete windows
 * (the first record of a divergence: cons_first.c). */
#include "server/consensus/cons_check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/consensus.h"
#include "server/consensus/cons_int.h"
#include "server/consensus/cons_mem.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"

#define SWEEP_S 10
#define WINDOW_HELD_S 120     /* a window memory holds this long at most (cons_mem.h) */
#define CONS_WINDOWS_MAX 2048 /* windows one look judges (the rest at the next) */
#define CONS_WINDOWS_MAX_TEXT "2048"

static void cons_loop(worker *w);
static worker thread = WORKER_INIT("consensus", cons_loop);
typedef struct queued {
    int64_t key;
    double commit_s;
} queued;
static queued *queue; /* under thread.lock: each run once */
static size_t n_queue, cap_queue;

void cons_register(void)
{
    cons_first_register();
    /* The windows of a run every member reported (the digests of judged windows are gone). */
    db_register("cons_windows",
                "SELECT d.step, d.comm_key, d.win, c.size, c.ranks::text, array_agg(d.rank ORDER BY d.rank)::text, "
                "array_agg(d.n ORDER BY d.rank)::text, array_agg(d.fold ORDER BY d.rank)::text "
                "FROM consensus_digests d JOIN consensus_comms c ON c.run_key = d.run_key AND c.comm_key = d.comm_key "
                "WHERE d.run_key = $1 AND c.size <= 65536 GROUP BY d.step, d.comm_key, d.win, c.size, c.ranks "
                "HAVING count(*) >= c.size LIMIT " CONS_WINDOWS_MAX_TEXT);
    /* In one statement: the judged windows' digests go (a window counts once, for whoever deleted it), the run's
     * count grows, and its first disagreement is stored unless an earlier one is (by step, key, window), with the
     * node slurmstepd attested for a clear single odd rank ($15) and that node's GPU when it attested exactly one. */
    db_register(
        "cons_judged",
        "WITH w AS (SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::int[]) AS w(k, s, x)), "
        "del AS (DELETE FROM consensus_digests d USING w WHERE d.run_key = $1 AND d.comm_key = w.k AND d.step = w.s "
        "AND d.win = w.x RETURNING d.comm_key, d.step, d.win), "
        "cnt AS (INSERT INTO consensus_runs AS c (run_key, checked) SELECT $1, count(*) FROM (SELECT DISTINCT "
        "comm_key, step, win FROM del) z ON CONFLICT (run_key) DO UPDATE SET checked = c.checked + excluded.checked, "
        "updated_at = clock_timestamp() RETURNING checked) "
        "INSERT INTO consensus_divergences AS v (run_key, step, comm_key, win, comm_ranks, comm_size, odd_ranks, "
        "clear, members, member_n, node, gpu, committed_at) "
        "SELECT $1, $5, $6, $7, $8::int[], $9, $10::int[], $11, $12::int[], $13::int[], a.node, a.gpu, "
        "to_timestamp($14) FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT t.node, CASE WHEN t.gpus <> '' AND "
        "strpos(t.gpus, ',') = 0 THEN t.gpus END AS gpu FROM runs r JOIN attestations t ON t.job_id = r.job_id "
        "AND t.step_id = r.step_id WHERE $15::int IS NOT NULL AND r.run_key = $1 AND $15::int = ANY (t.ranks) "
        "ORDER BY t.attested_at DESC LIMIT 1) a ON true "
        "WHERE $5::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM del WHERE del.comm_key = $6 AND del.step = $5 AND "
        "del.win = $7) AND EXISTS (SELECT 1 FROM cnt) "
        "ON CONFLICT (run_key) DO UPDATE SET step = excluded.step, comm_key = excluded.comm_key, win = excluded.win, "
        "name = '', occ = 0, comm_ranks = excluded.comm_ranks, comm_size = excluded.comm_size, "
        "odd_ranks = excluded.odd_ranks, clear = excluded.clear, site = NULL, node = excluded.node, "
        "gpu = excluded.gpu, members = excluded.members, member_n = excluded.member_n, idx = NULL, odd_rank = NULL, "
        "committed_at = excluded.committed_at, detected_at = clock_timestamp() "
        "WHERE (excluded.step, excluded.comm_key, excluded.win) < (v.step, v.comm_key, v.win) RETURNING 1");
    /* what another lockstepd (or this one before a restart) left: runs with complete windows or unfinished rows */
    db_register("cons_sweep", "SELECT run_key FROM consensus_divergences WHERE name = '' AND idx IS NULL UNION "
                              "SELECT DISTINCT run_key FROM consensus_digests LIMIT 256");
}

/* One complete window as read, judged. */
typedef struct window {
    cons_place at;
    int64_t size;
    const char *ranks; /* the group's sorted world ranks as listed ('{}' when not) */
    size_t n;
    cons_copy *c; /* the members' copies, by rank */
} window;

/* window_read - row `i` of cons_windows into `w` (arrays allocated: free with window_free). 0, or -1 when its
 * members do not line up (a row changed under the read). */
static int window_read(PGresult *r, int i, window *w)
{
    w->at = (cons_place){strtoll(PQgetvalue(r, i, 0), NULL, 10), (uint64_t)strtoll(PQgetvalue(r, i, 1), NULL, 10),
                         (uint32_t)atoi(PQgetvalue(r, i, 2))};
    w->size = strtoll(PQgetvalue(r, i, 3), NULL, 10);
    w->ranks = PQgetvalue(r, i, 4);
    int cap = (int)w->size + 16; /* members past the size: ranks of an unlisted group that are not its own */
    int64_t *rank = xmalloc((size_t)cap * sizeof(int64_t)), *cnt = xmalloc((size_t)cap * sizeof(int64_t)),
            *fold = xmalloc((size_t)cap * sizeof(int64_t));
    int a = db_int_array_parse(PQgetvalue(r, i, 5), rank, cap), b = db_int_array_parse(PQgetvalue(r, i, 6), cnt, cap),
        c = db_int_array_parse(PQgetvalue(r, i, 7), fold, cap);
    w->n = a == b && a == c && a > 0 ? (size_t)a : 0;
    w->c = xmalloc((w->n + 1) * sizeof(*w->c));
    for (size_t k = 0; k < w->n; k++)
        w->c[k] = (cons_copy){(uint32_t)rank[k], (uint32_t)cnt[k], (uint64_t)fold[k]};
    free(rank);
    free(cnt);
    free(fold);
    return w->n ? 0 : -1;
}

static void window_free(window *w)
{
    free(w->c);
}

/* copies_text - the ranks (or, with `counts`, the record counts) of `n` copies as an int[] literal (a new string);
 * with `only`, of the copies it flags. */
static char *copies_text(const cons_copy *c, size_t n, int counts, const unsigned char *only)
{
    char *s = xmalloc(n * 12 + 3);
    size_t len = 0;
    s[len++] = '{';
    for (size_t i = 0; i < n; i++)
        if (!only || only[i])
            len += (size_t)sprintf(s + len, "%s%u", len > 1 ? "," : "", counts ? c[i].n : c[i].rank);
    s[len++] = '}';
    s[len] = 0;
    return s;
}

/* The first disagreement a look found, ready to store. */
typedef struct found {
    int any;
    cons_place at;
    char size[24], clear[2], odd_rank[16];
    char *comm_ranks, *odd, *members, *member_n;
} found;

static void found_free(found *f)
{
    free(f->comm_ranks);
    free(f->odd);
    free(f->members);
    free(f->member_n);
}

/* judge - judge window `w`; a disagreement earlier than `f`'s goes into `f`. */
static void judge(const window *w, found *f)
{
    unsigned char *odd = xmalloc(w->n);
    cons_verdict v = cons_judge(w->c, w->n, odd);
    if (!v.agree && (!f->any || cons_place_cmp(&w->at, &f->at) < 0)) {
        found_free(f);
        memset(f, 0, sizeof(*f));
        f->any = 1;
        f->at = w->at;
        snprintf(f->size, sizeof(f->size), "%" PRId64, w->size);
        snprintf(f->clear, sizeof(f->clear), "%s", v.clear ? "t" : "f");
        for (size_t i = 0; v.clear && v.n_odd == 1 && i < w->n; i++)
            if (odd[i])
                snprintf(f->odd_rank, sizeof(f->odd_rank), "%u", w->c[i].rank);
        f->comm_ranks = xstrdup(w->ranks);
        f->odd = copies_text(w->c, w->n, 0, odd);
        f->members = copies_text(w->c, w->n, 0, NULL);
        f->member_n = copies_text(w->c, w->n, 1, NULL);
    }
    free(odd);
}

static void (*on_divergence)(void);

void cons_on_divergence(void (*fn)(void))
{
    on_divergence = fn;
}

/* tell - a disagreement was stored or its record found: the fleet looks at it now. */
static void tell(void)
{
    if (on_divergence)
        on_divergence();
}

/* store_judged - the windows judged (their places in `lit`: keys, steps, windows) and the first disagreement `f`, in
 * one statement. Returns 1 when a divergence was stored or moved, 0 when not, -1 on a database error. */
static int store_judged(const char *key, char *const lit[3], const found *f, double commit_s)
{
    char step[24] = "", comm[24] = "", win[16] = "", when[32], err[512];
    if (f->any) {
        snprintf(step, sizeof(step), "%" PRId64, f->at.step);
        snprintf(comm, sizeof(comm), "%" PRId64, (int64_t)f->at.key);
        snprintf(win, sizeof(win), "%u", f->at.win);
    }
    snprintf(when, sizeof(when), "%.6f", commit_s > 0 ? commit_s : clock_wall_s());
    const char *p[] = {key,
                       lit[0],
                       lit[1],
                       lit[2],
                       f->any ? step : NULL,
                       f->any ? comm : NULL,
                       f->any ? win : NULL,
                       f->comm_ranks,
                       f->size,
                       f->odd,
                       f->clear,
                       f->members,
                       f->member_n,
                       when,
                       f->odd_rank[0] ? f->odd_rank : NULL};
    if (!f->any)
        for (int i = 7; i < 13; i++)
            p[i] = i == 8 ? "0" : i == 10 ? "f" : "{}";
    PGresult *r = db_exec("cons_judged", 15, p, err, sizeof(err));
    if (!r) {
        log_warn("consensus of run %s not stored: %s", key, err);
        return -1;
    }
    int stored = PQntuples(r) > 0;
    PQclear(r);
    return stored;
}

/* The places of the windows one look judged, as the three int[] literals cons_judged takes: keys, steps, windows. */
typedef struct places {
    char *lit[3];
    size_t len[3];
} places;

static void places_init(places *p, size_t n)
{
    for (int k = 0; k < 3; k++) {
        p->lit[k] = xmalloc(n * 24 + 3);
        p->len[k] = (size_t)sprintf(p->lit[k], "{");
    }
}

static void places_add(places *p, const cons_place *at)
{
    char v[3][24];
    snprintf(v[0], sizeof(v[0]), "%" PRId64, (int64_t)at->key);
    snprintf(v[1], sizeof(v[1]), "%" PRId64, at->step);
    snprintf(v[2], sizeof(v[2]), "%u", at->win);
    for (int k = 0; k < 3; k++)
        p->len[k] += (size_t)sprintf(p->lit[k] + p->len[k], "%s%s", p->len[k] > 1 ? "," : "", v[k]);
}

static void places_end(places *p)
{
    for (int k = 0; k < 3; k++)
        sprintf(p->lit[k] + p->len[k], "}");
}

static void places_free(places *p)
{
    for (int k = 0; k < 3; k++)
        free(p->lit[k]);
}

/* store_look - what one look at run `key` judged (`ps`, and its first disagreement `f`) stored; a stored
 * disagreement told. Returns what store_judged returns. */
static int store_look(const char *key, places *ps, const found *f, double commit_s)
{
    places_end(ps);
    int rc = store_judged(key, ps->lit, f, commit_s);
    if (rc > 0) {
        log_info("run %s: consensus disagreement at step %" PRId64, key, f->at.step);
        tell();
    }
    return rc;
}

/* judge_run - one look at run `key` in the database: its complete windows (at most CONS_WINDOWS_MAX) judged and
 * stored. Returns how many windows it judged, or -1 on a database error. */
static int judge_run(const char *key, double commit_s)
{
    char err[512];
    const char *p[] = {key};
    PGresult *r = db_exec("cons_windows", 1, p, err, sizeof(err));
    if (!r) {
        log_warn("consensus of run %s not read: %s", key, err);
        return -1;
    }
    int n = PQntuples(r), rc = 0;
    if (n) {
        found f;
        memset(&f, 0, sizeof(f));
        places ps;
        places_init(&ps, (size_t)n);
        for (int i = 0; i < n; i++) {
            window w;
            if (window_read(r, i, &w) == 0)
                judge(&w, &f);
            places_add(&ps, &w.at);
            window_free(&w);
        }
        rc = store_look(key, &ps, &f, commit_s);
        places_free(&ps);
        found_free(&f);
    }
    PQclear(r);
    return rc < 0 ? -1 : n;
}

/* window_of - ready window `m` as judge() reads one (its copies allocated: free with window_free; `ranks` the
 * caller's buffer of REC_COMM_LIST_MAX * 11 + 3 bytes). */
static void window_of(const consmem_win *m, window *w, char *ranks)
{
    w->at = m->at;
    w->size = m->size;
    w->n = m->n;
    w->c = xmalloc(m->n * sizeof(*w->c));
    for (uint32_t i = 0; i < m->n; i++)
        w->c[i] = (cons_copy){m->m[i].rank, m->m[i].n, m->m[i].fold};
    size_t len = (size_t)sprintf(ranks, "{");
    for (uint32_t i = 0; i < m->n_listed; i++)
        len += (size_t)sprintf(ranks + len, "%s%u", i ? "," : "", m->listed[i]);
    sprintf(ranks + len, "}");
    w->ranks = ranks;
}

static int by_run(const void *pa, const void *pb)
{
    const consmem_win *a = *(consmem_win *const *)pa, *b = *(consmem_win *const *)pb;
    return a->run < b->run ? -1 : a->run > b->run;
}

/* judge_taken - the windows memory found ready (cons_mem.h), judged and stored run by run, each run's in one
 * statement; a run whose disagreement was stored has its first record looked for at once. Returns how many windows
 * were judged, or -1 when a run's could not be stored (its digests stay in the database for the sweep's look). */
static int judge_taken(void)
{
    size_t n = 0, cap = 0;
    consmem_win **all = NULL;
    for (consmem_win *w = consmem_take(), *next; w; w = next) {
        next = w->next;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            all = xrealloc(all, cap * sizeof(*all));
        }
        all[n++] = w;
    }
    if (n > 1)
        qsort(all, n, sizeof(*all), by_run); /* the take's order within a run does not matter: the first place wins */
    int rc = 0;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && all[j]->run == all[i]->run; j++)
            ;
        char key[24], ranks[REC_COMM_LIST_MAX * 11 + 3];
        snprintf(key, sizeof(key), "%" PRId64, all[i]->run);
        found f;
        memset(&f, 0, sizeof(f));
        double commit_s = all[i]->commit_s, found_commit = 0;
        places ps;
        places_init(&ps, j - i);
        for (size_t k = i; k < j; k++) {
            window w;
            window_of(all[k], &w, ranks);
            int was = f.any;
            cons_place before = f.at;
            judge(&w, &f);
            if (f.any && (!was || cons_place_cmp(&before, &f.at) != 0))
                found_commit = all[k]->commit_s;
            places_add(&ps, &w.at);
            window_free(&w);
        }
        int stored = store_look(key, &ps, &f, f.any ? found_commit : commit_s);
        places_free(&ps);
        found_free(&f);
        if (stored < 0)
            rc = -1;
        else if (stored > 0 && cons_finish_run(all[i]->run) > 0)
            tell();
    }
    for (size_t i = 0; i < n; i++)
        consmem_free(all[i]);
    free(all);
    return rc < 0 ? -1 : (int)n;
}

/* judge_ready - judge_taken, one caller at a time: a rank's end (ingest_end) that finds nothing left to take then
 * waits for the windows another caller took, so its reply's record requests include the disagreement they hold. */
static pthread_mutex_t judging = PTHREAD_MUTEX_INITIALIZER;

static int judge_ready(void)
{
    pthread_mutex_lock(&judging);
    int rc = judge_taken();
    pthread_mutex_unlock(&judging);
    return rc;
}

int cons_check_run(int64_t run_key, double commit_s)
{
    char key[24];
    snprintf(key, sizeof(key), "%" PRId64, run_key);
    if (judge_ready() < 0)
        return -1;
    int n = CONS_WINDOWS_MAX;
    for (int round = 0; round < 8 && n == CONS_WINDOWS_MAX; round++) { /* a look takes CONS_WINDOWS_MAX at most */
        n = judge_run(key, commit_s);
        if (n < 0)
            return -1;
    }
    int fin = cons_finish_run(run_key);
    if (fin > 0)
        tell();
    return fin < 0 ? -1 : 0;
}

/* count_held - what memory holds, for /metrics. */
static void count_held(void)
{
    size_t held, digests;
    uint64_t unheld;
    consmem_stats(&held, &digests, &unheld);
    metrics_consensus_held(held, digests, unheld);
}

void cons_digests_stored(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s)
{
    if (consmem_add(run_key, rank, d, n, commit_s) > 0)
        worker_kick(&thread);
    count_held();
}

void cons_notify(int64_t run_key, double commit_s)
{
    worker_lock(&thread);
    size_t i = 0;
    while (i < n_queue && queue[i].key != run_key)
        i++;
    if (i == n_queue) {
        if (n_queue == cap_queue) {
            cap_queue = cap_queue ? 2 * cap_queue : 64;
            queue = xrealloc(queue, cap_queue * sizeof(*queue));
        }
        queue[n_queue++] = (queued){run_key, commit_s};
    } else if (commit_s > 0 && (queue[i].commit_s <= 0 || commit_s < queue[i].commit_s))
        queue[i].commit_s = commit_s;
    worker_kick_locked(&thread);
    worker_unlock(&thread);
}

/* sweep - queue what the database says is waiting (another lockstepd's runs, or this one's before a restart). */
static void sweep(void)
{
    char err[512];
    PGresult *r = db_exec("cons_sweep", 0, NULL, err, sizeof(err));
    if (!r)
        return;
    for (int i = 0; i < PQntuples(r); i++)
        cons_notify(strtoll(PQgetvalue(r, i, 0), NULL, 10), 0);
    PQclear(r);
}

static void cons_loop(worker *w)
{
    double next_sweep = 0;
    for (;;) {
        judge_ready();
        count_held();
        if (clock_mono_s() >= next_sweep) {
            size_t gone = consmem_expire(WINDOW_HELD_S);
            if (gone)
                log_info("consensus: %zu windows incomplete after %d s are left to the database's look", gone,
                         WINDOW_HELD_S);
            sweep();
            next_sweep = clock_mono_s() + SWEEP_S;
        }
        worker_lock(w);
        int stop = w->stopping;
        if (!n_queue && !stop) /* a kick (a window ready, a run queued) or the sweep's time ends the wait */
            stop = worker_wait_locked(w, next_sweep - clock_mono_s() > 0 ? next_sweep - clock_mono_s() : 0.001);
        if (stop) {
            worker_unlock(w);
            return;
        }
        queued *take = queue;
        size_t n = n_queue;
        queue = NULL;
        n_queue = cap_queue = 0;
        worker_unlock(w);
        for (size_t i = 0; i < n; i++)
            cons_check_run(take[i].key, take[i].commit_s);
        free(take);
    }
}

int cons_start(void)
{
    return worker_start(&thread, 1);
}

void cons_stop(void)
{
    worker_stop(&thread);
    consmem_reset();
    free(queue);
    queue = NULL;
    n_queue = cap_queue = 0;
}
