/* cons_judge.c - a run's complete windows judged (cons_judge, common/consensus.h) and stored in one statement: a row
 * for each window (consensus_judged: a window counts once, whoever judges it: memory, the database's look, another
 * lockstepd), the run's count, and its first disagreement. Used by the consensus thread (cons_check.c) and the
 * database's look (cons_look.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/consensus.h"
#include "server/consensus/cons_int.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"

void cons_judge_register(void)
{
    /* In one statement: the judged windows get their row (a window counts once, for whoever inserted it), the run's
     * count grows, and its first disagreement is stored unless an earlier one is (by step, key, window), with the
     * node slurmstepd attested for a clear single odd rank ($15) and that node's GPU when it attested exactly one. */
    db_register(
        "cons_judged",
        "WITH w AS (SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::int[]) AS w(k, s, x)), "
        "ins AS (INSERT INTO consensus_judged (run_key, step, comm_key, win) SELECT $1, w.s, w.k, w.x FROM w "
        "ORDER BY 2, 3, 4 ON CONFLICT DO NOTHING RETURNING comm_key, step, win), "
        "cnt AS (INSERT INTO consensus_runs AS c (run_key, checked) SELECT $1, count(*) FROM ins "
        "ON CONFLICT (run_key) DO UPDATE SET checked = c.checked + excluded.checked, "
        "updated_at = clock_timestamp() RETURNING checked) "
        "INSERT INTO consensus_divergences AS v (run_key, step, comm_key, win, comm_ranks, comm_size, odd_ranks, "
        "clear, members, member_n, node, gpu, committed_at) "
        "SELECT $1, $5, $6, $7, $8::int[], $9, $10::int[], $11, $12::int[], $13::int[], a.node, a.gpu, "
        "to_timestamp($14) FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT t.node, CASE WHEN t.gpus <> '' AND "
        "strpos(t.gpus, ',') = 0 THEN t.gpus END AS gpu FROM runs r JOIN attestations t ON t.job_id = r.job_id "
        "AND t.step_id = r.step_id WHERE $15::int IS NOT NULL AND r.run_key = $1 AND $15::int = ANY (t.ranks) "
        "ORDER BY t.attested_at DESC LIMIT 1) a ON true "
        "WHERE $5::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM ins WHERE ins.comm_key = $6 AND ins.step = $5 AND "
        "ins.win = $7) AND EXISTS (SELECT 1 FROM cnt) "
        "ON CONFLICT (run_key) DO UPDATE SET step = excluded.step, comm_key = excluded.comm_key, win = excluded.win, "
        "name = '', occ = 0, comm_ranks = excluded.comm_ranks, comm_size = excluded.comm_size, "
        "odd_ranks = excluded.odd_ranks, clear = excluded.clear, site = NULL, node = excluded.node, "
        "gpu = excluded.gpu, members = excluded.members, member_n = excluded.member_n, idx = NULL, odd_rank = NULL, "
        "committed_at = excluded.committed_at, detected_at = clock_timestamp() "
        "WHERE (excluded.step, excluded.comm_key, excluded.win) < (v.step, v.comm_key, v.win) RETURNING 1");
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
static void judge(const cons_window *w, found *f)
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

void cons_tell_to(void (*fn)(void))
{
    on_divergence = fn;
}

void cons_tell(void)
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
        cons_tell();
    }
    return rc;
}

/* A run's windows being judged, to be stored in one statement. */
struct cons_judging {
    int64_t run;
    found f;
    places ps;
    double commit_s, found_commit;
};

cons_judging *cons_judging_new(int64_t run, size_t n_max)
{
    cons_judging *j = xcalloc(1, sizeof(*j));
    j->run = run;
    places_init(&j->ps, n_max);
    return j;
}

void cons_judging_add(cons_judging *j, const cons_window *w)
{
    int was = j->f.any;
    cons_place before = j->f.at;
    judge(w, &j->f);
    if (j->f.any && (!was || cons_place_cmp(&before, &j->f.at) != 0))
        j->found_commit = w->commit_s;
    if (w->commit_s > 0 && (j->commit_s <= 0 || w->commit_s < j->commit_s))
        j->commit_s = w->commit_s;
    places_add(&j->ps, &w->at);
}

int cons_judging_end(cons_judging *j)
{
    char key[24];
    snprintf(key, sizeof(key), "%" PRId64, j->run);
    int stored = store_look(key, &j->ps, &j->f, j->f.any ? j->found_commit : j->commit_s);
    places_free(&j->ps);
    found_free(&j->f);
    if (stored > 0 && cons_finish_run(j->run) > 0)
        cons_tell();
    free(j);
    return stored;
}
