/* logical.c - a twin group whose runs have different rank counts, compared on its logical tensors: per step, each run's
 * shard records combined across its ranks (common/shard.h) into one record per tensor, then the first-divergence rule
 * (common/first.h) over those records; a divergence is stored at rank -1 and names the tensor, the first
 * differing 1 MiB chunk and the ranks that hold it in each run. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lsfp1.h"
#include "common/recmatch.h"
#include "common/shard.h"
#include "server/twins/cmp_int.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

/* has_ext - a record that may be a shard: extension fields, no state block's entry. */
static int has_ext(const rec_record *r)
{
    return r->ext_len && rec_in_steps(r);
}

#define LOGICAL_RANK (-1) /* the rank logical divergences and checks are stored under */
#define LOGICAL_STEPS 64  /* steps compared per call; more are left to the next (cmp_notify) */

void cmp_register_logical(void)
{
    /* per run: the registered rank count and start, and over the ranks that reported: the smallest progress, the
     * largest, how many, and whether the run (or every rank) ended */
    db_register("cmp_lg_runs",
                "SELECT r.run_key, r.run_id, r.ranks, r.start_step, min(p.max_step), max(p.max_step), count(p.rank), "
                "r.status <> 'running' OR (SELECT count(*) FROM rank_ends e WHERE e.run_key = r.run_key) >= r.ranks "
                "FROM runs r LEFT JOIN rank_progress p USING (run_key) WHERE r.twin_group = $1 "
                "GROUP BY r.run_key ORDER BY r.run_key");
    /* only records with extension fields can be shards: their own segments (kind 3, and series points, kind 1,
     * that carry some); the rank-local rest is never read */
    db_register("cmp_lg_recs",
                "SELECT run_key, rank, step, frames FROM record_frames WHERE run_key = ANY($1::bigint[]) "
                "AND kind IN (1, 3) AND " FRAMES_REACHING("$2", "$3") " ORDER BY step, run_key, rank, seq_lo");
    /* runs of the group that recorded no record with extension fields (no shard can be among their records: the
     * partial index record_frames_ext) */
    db_register("cmp_lg_noshard", "SELECT count(*) FROM unnest($1::bigint[]) AS k WHERE NOT EXISTS (SELECT 1 FROM "
                                  "record_frames f WHERE f.run_key = k AND f.kind = 3)");
    db_register("cmp_lg_checked", "SELECT checked_upto, members::text FROM group_checks WHERE twin_group = $1 "
                                  "AND rank = -1");
    /* The logical mark, on rank -1 and on every rank the runs reported (the twin API and the fleet read each
     * rank's check): how far, up to where (NULL: nothing to compare), with which runs, and when. */
    db_register("cmp_lg_mark",
                "INSERT INTO group_checks (twin_group, rank, checked_upto, target, members, checked_at, waiting) "
                "SELECT $1, x.rank, $2, $3, $4::bigint[], clock_timestamp(), false FROM (SELECT -1 AS rank UNION "
                "SELECT DISTINCT p.rank FROM rank_progress p JOIN runs r USING (run_key) WHERE r.twin_group = $1) x "
                "ON CONFLICT (twin_group, rank) DO UPDATE SET checked_upto = excluded.checked_upto, "
                "target = excluded.target, members = excluded.members, checked_at = excluded.checked_at, "
                "waiting = false");
}

/* holders - the ranks of `t` that hold 1 MiB chunk `c`, as a JSON array. */
static json_t *holders(const shard_tensor *t, int64_t c)
{
    uint32_t ranks[256];
    json_t *a = json_array();
    size_t n = shard_holders(t, (uint64_t)c * FP_CHUNK_BYTES, (uint64_t)(c + 1) * FP_CHUNK_BYTES, ranks, 256);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ranks[i]));
    return a;
}

/* compare_step - the logical tensors of one step of every run (rows[lo, hi) of `all`, sorted by run, rank, seq;
 * a tensor's place in its run's order is its first shard's among the shards of the lowest rank holding one).
 * Returns 1 when a divergence was stored, 0 when they match, -1 on a database error. */
static int compare_step(const char *group, const cmp_group *g, cmp_rows *all, size_t lo, size_t hi, int64_t step,
                        double commit_s, cmp_found *out)
{
    shard_logical lg[GROUP_MAX_RUNS];
    char why[GROUP_MAX_RUNS][400];
    int bad[GROUP_MAX_RUNS];
    memset(lg, 0, sizeof(lg));
    shard_src *src = xcalloc(hi - lo + 1, sizeof(*src));
    size_t total = 0;
    for (int k = 0; k < g->nruns; k++) {
        size_t n = 0;
        uint32_t cur_rank = UINT32_MAX;
        size_t pos = 0;
        for (size_t i = lo; i < hi; i++) {
            const first_rec *c = &all->recs[i];
            if (c->run != k)
                continue;
            if (c->rec.rank != cur_rank) {
                cur_rank = c->rec.rank;
                pos = 0;
            }
            rec_ext x;
            rec_ext_of(&c->rec, &x);
            if (x.has_shard)
                src[n++] = (shard_src){&c->rec, c->rec.rank, pos};
            pos++;
        }
        int got = shard_logical_build(src, n, &lg[k], why[k], sizeof(why[k]));
        if (got == -2)
            abort(); /* out of memory: the server's policy (server/core/xalloc.h) */
        bad[k] = got < 0;
        total += lg[k].n;
    }
    free(src);
    /* the logical records of every run, for the one rule; seq is each tensor's place in its run's order */
    first_rec *recs = xcalloc(total + 1, sizeof(*recs));
    size_t n = 0;
    for (int k = 0; k < g->nruns; k++)
        for (size_t i = 0; i < lg[k].n; i++) {
            recs[n].run = k;
            recs[n].rec = lg[k].recs[i];
            recs[n].rec.seq = i;
            n++;
        }
    first_div f;
    first_find(recs, n, g->nruns, &f);
    int rc = 0;
    int any_bad = 0;
    for (int k = 0; k < g->nruns; k++)
        any_bad |= bad[k];
    if (f.found || any_bad) {
        json_t *runs = json_array();
        const rec_record *named = NULL;
        const char *kind = "mismatch";
        if (!f.found) { /* a run whose shards do not tile a tensor: that tensor, missing from it */
            for (int k = 0; k < g->nruns && !named; k++)
                named = bad[k] ? lg[k].bad : NULL;
            kind = "missing";
        }
        int64_t chunk = -1;
        const rec_record *ra = NULL;
        for (int k = 0; k < g->nruns && f.found; k++) {
            const rec_record *r = f.by_run[k] ? &f.by_run[k]->rec : NULL;
            if (!r)
                continue;
            named = named ? named : r;
            if (!ra) {
                ra = r;
            } else if (chunk < 0 && r->n_chunks && r->n_chunks == ra->n_chunks) {
                for (uint32_t c = 0; c < r->n_chunks && chunk < 0; c++)
                    chunk = r->chunks[c] != ra->chunks[c] ? (int64_t)c : -1;
            }
        }
        if (f.found && f.missing)
            kind = "missing";
        for (int k = 0; k < g->nruns; k++) {
            json_t *e = cmp_run_entry(g->ids[k], f.found ? f.by_run[k] : NULL);
            json_object_set_new(e, "ranks", json_integer(g->ranks[k]));
            if (f.found && f.majority >= 0)
                json_object_set_new(e, "majority", json_boolean(f.agrees[k]));
            if (bad[k])
                json_object_set_new(e, "error", json_string(why[k]));
            if (chunk >= 0 && f.by_run[k]) {
                const shard_tensor *t = &lg[k].tensors[f.by_run[k]->rec.seq];
                json_object_set_new(e, "first_chunk", json_integer(chunk));
                json_object_set_new(e, "chunk_holders", holders(t, chunk));
                json_object_set_new(e, "shards", json_integer((json_int_t)t->n_pieces));
            }
            json_array_append_new(runs, e);
        }
        rc = cmp_store_divergence(group, LOGICAL_RANK, step, f.found ? f.seq : 0, named->name, named->name_len,
                                  named->occurrence, kind, f.found && f.odd >= 0 ? g->keys[f.odd] : 0, runs, commit_s,
                                  0, out);
    }
    free(recs);
    for (int k = 0; k < g->nruns; k++)
        shard_logical_release(&lg[k]);
    return rc;
}

/* The steps a group's runs share: from the latest start (lo) to the last step every rank of every run completed
 * (hi; INT64_MIN while a run has recorded nothing yet), the last step any run recorded (top). */
typedef struct lg_window {
    int64_t lo, hi, top;
    int all_ended;
} lg_window;

/* group_window - the group's runs into `g` (their keys, ids, rank counts, starts) and the steps they share into
 * `w`. 0, or -1 on a database error. */
static int group_window(const char *group, cmp_group *g, lg_window *w)
{
    char err[512];
    const char *p[] = {group};
    PGresult *r = db_exec_once("cmp_lg_runs", 1, p, err, sizeof(err));
    if (!r)
        return -1;
    int64_t lo = INT64_MIN, hi = INT64_MAX, top = INT64_MIN;
    int all_ended = 1;
    for (int i = 0; i < PQntuples(r) && g->nruns < GROUP_MAX_RUNS; i++) {
        int k = g->nruns++;
        g->keys[k] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        snprintf(g->ids[k], sizeof(g->ids[k]), "%s", PQgetvalue(r, i, 1));
        g->ranks[k] = atoi(PQgetvalue(r, i, 2));
        g->start[k] = strtoll(PQgetvalue(r, i, 3), NULL, 10);
        int ended = PQgetvalue(r, i, 7)[0] == 't';
        int reported = atoi(PQgetvalue(r, i, 6));
        all_ended &= ended;
        lo = g->start[k] > lo ? g->start[k] : lo;
        if (PQgetisnull(r, i, 4)) {
            if (!ended)
                hi = INT64_MIN; /* a run with nothing yet: wait for it */
            continue;
        }
        int64_t least = strtoll(PQgetvalue(r, i, 4), NULL, 10), most = strtoll(PQgetvalue(r, i, 5), NULL, 10);
        /* every rank's shards are needed: the step the slowest rank completed (or every rank, once it ended) */
        int64_t done = ended ? most : reported < g->ranks[k] ? INT64_MIN : least - 1;
        hi = done < hi ? done : hi;
        top = most > top ? most : top;
    }
    PQclear(r);
    *w = (lg_window){lo, hi, top, all_ended};
    return 0;
}

/* compare_steps - compare the group's shards step by step from `from` to at most LOGICAL_STEPS steps on, up to
 * `hi`; the last step compared in *to. Returns what compare_step returned last (0 or 1), or -1 on an error. */
static int compare_steps(const char *group, const cmp_group *g, int64_t from, int64_t hi, double commit_s,
                         cmp_found *out, int64_t *to_out)
{
    char err[512];
    char from_s[32], to_s[32];
    int rc = 0;
    int64_t to = hi - from >= LOGICAL_STEPS ? from + LOGICAL_STEPS - 1 : hi;
    snprintf(from_s, sizeof(from_s), "%" PRId64, from);
    snprintf(to_s, sizeof(to_s), "%" PRId64, to);
    const char *pq[] = {g->keyarr, from_s, to_s};
    PGresult *r = db_exec_bin("cmp_lg_recs", 3, pq, err, sizeof(err));
    if (!r)
        return -1;
    frame_set set = {0};
    if (frames_rows(&set, r, 0, 1, 2, 3, from, to, has_ext, err, sizeof(err)) < 0) {
        log_warn("logical comparison of group %s: %s", group, err);
        frame_set_release(&set);
        return -1;
    }
    frames_sort_steps(&set); /* a segment of series points spans steps: its records go to theirs */
    cmp_rows rows;
    cmp_rows_from_set(&set, g, NULL, &rows);
    for (size_t i = 0; i < rows.n && rc == 0;) {
        size_t j = i;
        while (j < rows.n && rows.recs[j].rec.step == rows.recs[i].rec.step)
            j++;
        rc = compare_step(group, g, &rows, i, j, rows.recs[i].rec.step, commit_s, out);
        i = j;
    }
    cmp_rows_release(&rows);
    *to_out = to;
    return rc;
}

int cmp_check_logical(const char *group, double commit_s, cmp_found *out, int *again)
{
    char err[512];
    const char *p[] = {group};
    PGresult *r;
    cmp_group G;
    memset(&G, 0, sizeof(G));
    cmp_group *g = &G;
    lg_window w;
    if (group_window(group, g, &w) < 0)
        return -1;
    int64_t lo = w.lo, hi = w.hi;
    cmp_key_array(g);
    int comparable = g->nruns >= 2 && lo <= hi;
    if (comparable) { /* only shards are compared here: a run that recorded none leaves nothing to compare, and the
                         group must not say its runs agreed (twin_status: "nothing they share to compare") */
        const char *pk[] = {g->keyarr};
        r = db_exec_once("cmp_lg_noshard", 1, pk, err, sizeof(err));
        if (!r)
            return -1;
        comparable = atoi(PQgetvalue(r, 0, 0)) == 0;
        PQclear(r);
    }

    /* Where to start: after what was compared with these same runs (a batch of records of a step compared
     * already moves the mark back, server/store/write.c), else from the shared start. */
    r = db_exec_once("cmp_lg_checked", 1, p, err, sizeof(err));
    if (!r)
        return -1;
    int same_members = PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 1), g->keyarr);
    int64_t done = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : INT64_MIN;
    PQclear(r);
    int64_t from = same_members && done != INT64_MIN && done >= lo ? done + 1 : lo;
    int64_t checked = same_members ? done : INT64_MIN, target = hi;
    int rc = 0;
    if (comparable && from <= hi) {
        int64_t to;
        rc = compare_steps(group, g, from, hi, commit_s, out, &to);
        if (rc < 0)
            return -1;
        checked = to;
        if (to < hi)
            *again = 1; /* more to compare: come back */
    } else if (comparable) {
        checked = hi;
    }
    if (comparable && !*again && w.all_ended && w.top > checked)
        checked = target = w.top; /* nothing past the shared steps can be compared: the group is checked to its end */
    char up[32], tg[32];
    snprintf(up, sizeof(up), "%" PRId64, checked);
    snprintf(tg, sizeof(tg), "%" PRId64, target);
    const char *m[] = {group, checked == INT64_MIN ? NULL : up, comparable ? tg : NULL, g->keyarr};
    r = db_exec_once("cmp_lg_mark", 4, m, err, sizeof(err));
    if (!r)
        return -1;
    PQclear(r);
    return rc;
}
