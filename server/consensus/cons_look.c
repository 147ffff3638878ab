/* cons_look.c - the database's look at a run's consensus: the digests stored beside its step digests
 * (step_consensus.cons) past the steps already swept, grouped into windows; each complete window no one judged yet
 * (consensus_judged) is judged as memory would (cons_check.c). The swept mark then moves to the last step no window
 * can still fill: every rank reported a later step (a rank's batches arrive in order) or ended. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/consensus/cons_int.h"
#include "server/consensus/cons_mem.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/store/cons_batch.h"
#include "server/store/db.h"

#define LOOK_ROWS 262144 /* rank-steps one look reads at most (the rest at the next) */
#define LOOK_ROWS_TEXT "262144"
#define TOUCHED_MAX 1048576     /* slots of the set of runs the next sweep looks at (half of them used at most) */
#define GONE_AFTER "10 minutes" /* a rank silent this long no longer holds the swept mark back */

/* The runs the next sweep's database look reads (cons_look.c): those whose batches or ends came since the last
 * sweep, and at the start the runs a lockstepd before this one may have left windows of. A set (open addressing,
 * run keys start at 1), under touched_lock. */
static pthread_mutex_t touched_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t *touched;
static size_t n_touched, cap_touched; /* cap_touched: a power of two, or 0 */

static void touched_put(int64_t *set, size_t cap, int64_t key)
{
    size_t s = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ULL >> 20) & (cap - 1);
    while (set[s] && set[s] != key)
        s = (s + 1) & (cap - 1);
    if (!set[s]) {
        set[s] = key;
        n_touched++;
    }
}

void cons_touch(int64_t run_key)
{
    if (run_key <= 0)
        return;
    pthread_mutex_lock(&touched_lock);
    if (2 * (n_touched + 1) > cap_touched && cap_touched < TOUCHED_MAX) {
        size_t cap = cap_touched ? 2 * cap_touched : 256;
        int64_t *set = xcalloc(cap, sizeof(*set));
        n_touched = 0;
        for (size_t i = 0; i < cap_touched; i++)
            if (touched[i])
                touched_put(set, cap, touched[i]);
        free(touched);
        touched = set;
        cap_touched = cap;
    }
    if (2 * (n_touched + 1) <= cap_touched) /* full (TOUCHED_MAX): the run is touched again by its next batch */
        touched_put(touched, cap_touched, run_key);
    pthread_mutex_unlock(&touched_lock);
}

void cons_look_touched(void)
{
    pthread_mutex_lock(&touched_lock);
    int64_t *set = touched;
    size_t cap = cap_touched;
    touched = NULL;
    n_touched = cap_touched = 0;
    pthread_mutex_unlock(&touched_lock);
    for (size_t i = 0; i < cap; i++)
        if (set[i] && cons_look(set[i]) < 0)
            cons_touch(set[i]); /* the database failed: again at the next sweep */
    free(set);
}

void cons_look_reset(void)
{
    pthread_mutex_lock(&touched_lock);
    free(touched);
    touched = NULL;
    n_touched = cap_touched = 0;
    pthread_mutex_unlock(&touched_lock);
}

void cons_look_register(void)
{
    /* the swept mark (the smallest step when none) and the step up to which no window can still fill: a rank that
     * ended counts with its last step, one still reporting with the step before its last (its batch of that step
     * may still bring digests), one silent for GONE_AFTER not at all (its late digests, if any, come too late to be
     * judged); known once every rank reported, or GONE_AFTER after the run began (a rank never heard from is gone) */
    db_register("cons_look_marks",
                "SELECT coalesce((SELECT swept_upto FROM consensus_runs WHERE run_key = $1), -9223372036854775808), "
                "(SELECT CASE WHEN count(*) >= max(u.ranks) OR min(u.created_at) < now() - interval '" GONE_AFTER "' "
                "THEN coalesce(min(CASE WHEN e.rank IS NOT NULL THEN p.max_step WHEN p.updated_at >= now() - "
                "interval '" GONE_AFTER "' THEN p.max_step - 1 END), max(p.max_step)) END "
                "FROM rank_progress p JOIN runs u ON u.run_key = p.run_key "
                "LEFT JOIN rank_ends e ON e.run_key = p.run_key AND e.rank = p.rank WHERE p.run_key = $1)");
    /* a run that named no group has no consensus digests: nothing is read */
    db_register("cons_look_rows", "SELECT step, rank, cons FROM step_consensus WHERE run_key = $1 AND "
                                  "blk >= lockstep_step_block($2) AND step > $2 AND EXISTS (SELECT 1 FROM "
                                  "consensus_comms WHERE run_key = $1) ORDER BY step, rank LIMIT " LOOK_ROWS_TEXT);
    db_register("cons_look_comms", "SELECT comm_key, size, ranks::text FROM consensus_comms WHERE run_key = $1 "
                                   "ORDER BY comm_key");
    db_register("cons_look_judged", "SELECT step, comm_key, win FROM consensus_judged WHERE run_key = $1 AND "
                                    "step > $2 ORDER BY step, comm_key, win");
    /* the mark moves on (never back: another lockstepd may have moved it further), and the judged rows of steps the
     * previous mark covered go: no look reads those steps again, and memory judged their windows long before */
    db_register("cons_look_swept",
                "WITH gone AS (DELETE FROM consensus_judged WHERE run_key = $1 AND step <= $3) "
                "INSERT INTO consensus_runs AS c (run_key, swept_upto) VALUES ($1, $2) ON CONFLICT (run_key) DO "
                "UPDATE SET swept_upto = greatest(c.swept_upto, excluded.swept_upto)");
    /* the runs still running, or ended within the day, with consensus digests */
    db_register("cons_look_recent", "SELECT DISTINCT c.run_key FROM consensus_comms c JOIN runs u ON "
                                    "u.run_key = c.run_key WHERE u.status = 'running' OR u.ended_at > now() - "
                                    "interval '1 day'");
}

/* One member's digest, as a look read it. */
typedef struct look_digest {
    cons_place at;
    uint32_t rank, n, ord;
    uint64_t fold;
} look_digest;

static int by_place_rank(const void *pa, const void *pb)
{
    const look_digest *a = pa, *b = pb;
    int c = cons_place_cmp(&a->at, &b->at);
    if (c)
        return c;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->ord < b->ord ? -1 : a->ord > b->ord;
}

/* What one look holds: the digests read, the run's groups, the windows judged before. */
typedef struct look {
    char key[24], lo_text[24];
    int64_t lo;
    look_digest *d;
    size_t n, cap;
    PGresult *comms, *judged;
} look;

/* add_row - the digests of one rank-step (its row's cons, PostgreSQL's text form of bytea) into `l`; a repeat of a
 * (key, window) in the row is left out (the first counts). */
static void add_row(look *l, int64_t step, uint32_t rank, const char *text)
{
    size_t len = 0;
    unsigned char *b = PQunescapeBytea((const unsigned char *)text, &len);
    if (!b)
        return;
    size_t first = l->n;
    for (size_t off = 0; off + CONS_PACKED <= len; off += CONS_PACKED) {
        look_digest x = {.at = {.step = step}, .rank = rank, .ord = (uint32_t)(off / CONS_PACKED)};
        cons_unpack(b + off, &x.at.key, &x.at.win, &x.n, &x.fold);
        int again = 0;
        for (size_t k = first; k < l->n && !again; k++)
            again = l->d[k].at.key == x.at.key && l->d[k].at.win == x.at.win;
        if (again)
            continue;
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 1024;
            l->d = xrealloc(l->d, l->cap * sizeof(*l->d));
        }
        l->d[l->n++] = x;
    }
    PQfreemem(b);
}

/* comm_row - the row of consensus_comms for `key` (rows sorted by key, as PostgreSQL sorts a bigint), or -1. */
static int comm_row(PGresult *r, uint64_t key)
{
    int lo = 0, hi = PQntuples(r) - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int64_t k = strtoll(PQgetvalue(r, mid, 0), NULL, 10);
        if (k == (int64_t)key)
            return mid;
        if (k < (int64_t)key)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* judged_before - `at` has a row in consensus_judged (rows sorted by step, key, window, as cons_place_cmp sorts: a
 * bigint key signed; linear from *cursor, as the places come sorted the same way). */
static int judged_before(PGresult *r, int *cursor, const cons_place *at)
{
    for (; *cursor < PQntuples(r); (*cursor)++) {
        cons_place j = {strtoll(PQgetvalue(r, *cursor, 0), NULL, 10),
                        (uint64_t)strtoll(PQgetvalue(r, *cursor, 1), NULL, 10),
                        (uint32_t)strtoul(PQgetvalue(r, *cursor, 2), NULL, 10)};
        int c = cons_place_cmp(&j, at);
        if (c == 0)
            return 1;
        if (c > 0)
            return 0;
    }
    return 0;
}

/* judge_all - each complete window of `l` no one judged yet, judged and stored in one statement. Returns how many,
 * or -1 on a database error. */
static int judge_all(look *l, int64_t run)
{
    qsort(l->d, l->n, sizeof(*l->d), by_place_rank);
    cons_judging *jg = NULL;
    int judged = 0, cursor = 0;
    cons_copy *c = xmalloc((l->n + 1) * sizeof(*c));
    for (size_t i = 0, j; i < l->n; i = j) {
        size_t m = 0;
        for (j = i; j < l->n && cons_place_cmp(&l->d[j].at, &l->d[i].at) == 0; j++)
            if (j == i || l->d[j].rank != l->d[j - 1].rank) /* a rank's first digest counts */
                c[m++] = (cons_copy){l->d[j].rank, l->d[j].n, l->d[j].fold};
        int row = comm_row(l->comms, l->d[i].at.key);
        if (row < 0 || judged_before(l->judged, &cursor, &l->d[i].at))
            continue;
        int64_t size = strtoll(PQgetvalue(l->comms, row, 1), NULL, 10);
        if (size < 1 || size > CONSMEM_GROUP_MAX || (int64_t)m < size)
            continue; /* not complete (yet) */
        if (!jg)
            jg = cons_judging_new(run, l->n);
        cons_window w = {l->d[i].at, size, PQgetvalue(l->comms, row, 2), m, c, 0};
        cons_judging_add(jg, &w);
        judged++;
    }
    free(c);
    if (jg && cons_judging_end(jg) < 0)
        return -1;
    return judged;
}

/* read_rows - the rows past the mark into `l`. Returns how many rows, the step of the last one in *last, or -1. */
static int read_rows(look *l, int64_t *last)
{
    char err[512];
    const char *p[] = {l->key, l->lo_text};
    PGresult *r = db_exec("cons_look_rows", 2, p, err, sizeof(err));
    if (!r) {
        log_warn("consensus of run %s not read: %s", l->key, err);
        return -1;
    }
    int n = PQntuples(r);
    for (int i = 0; i < n; i++) {
        *last = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        add_row(l, *last, (uint32_t)strtoul(PQgetvalue(r, i, 1), NULL, 10), PQgetvalue(r, i, 2));
    }
    PQclear(r);
    return n;
}

/* move_mark - the swept mark to `upto` (the judged rows the old mark covered go). */
static void move_mark(const look *l, int64_t upto)
{
    char err[512], to[24];
    snprintf(to, sizeof(to), "%" PRId64, upto);
    const char *p[] = {l->key, to, l->lo_text};
    PGresult *r = db_exec("cons_look_swept", 3, p, err, sizeof(err));
    if (!r)
        log_warn("the swept mark of run %s not moved: %s", l->key, err);
    PQclear(r);
}

int cons_look(int64_t run_key)
{
    char err[512];
    look l = {.n = 0};
    snprintf(l.key, sizeof(l.key), "%" PRId64, run_key);
    const char *p[] = {l.key, NULL};
    PGresult *marks = db_exec("cons_look_marks", 1, p, err, sizeof(err));
    if (!marks) {
        log_warn("consensus of run %s not read: %s", l.key, err);
        return -1;
    }
    l.lo = strtoll(PQgetvalue(marks, 0, 0), NULL, 10);
    int settled = !PQgetisnull(marks, 0, 1);
    int64_t frontier = settled ? strtoll(PQgetvalue(marks, 0, 1), NULL, 10) : 0, last = l.lo;
    PQclear(marks);
    snprintf(l.lo_text, sizeof(l.lo_text), "%" PRId64, l.lo);
    p[1] = l.lo_text;
    int rows = read_rows(&l, &last), rc = rows < 0 ? -1 : 0;
    if (rc == 0 && l.n) {
        l.comms = db_exec("cons_look_comms", 1, p, err, sizeof(err));
        l.judged = l.comms ? db_exec("cons_look_judged", 2, p, err, sizeof(err)) : NULL;
        rc = l.judged ? judge_all(&l, run_key) : -1;
        if (!l.judged)
            log_warn("consensus of run %s not read: %s", l.key, err);
    }
    /* a look cut short by LOOK_ROWS may have read part of its last step */
    int64_t upto = rows == LOOK_ROWS ? last - 1 : INT64_MAX;
    if (rc >= 0 && settled && frontier < upto)
        upto = frontier;
    if (rc >= 0 && settled && upto > l.lo)
        move_mark(&l, upto);
    PQclear(l.comms);
    PQclear(l.judged);
    free(l.d);
    if (rows == LOOK_ROWS && rc >= 0)
        cons_touch(run_key); /* the rest at the next sweep */
    return rc;
}

void cons_look_recent(void)
{
    char err[512];
    PGresult *r = db_exec("cons_look_recent", 0, NULL, err, sizeof(err));
    if (!r) {
        log_warn("the runs to look at after the start not read: %s", err);
        return;
    }
    for (int i = 0; i < PQntuples(r); i++)
        cons_touch(strtoll(PQgetvalue(r, i, 0), NULL, 10));
    PQclear(r);
}
