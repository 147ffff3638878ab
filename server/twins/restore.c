/* restore.c - the restore check: each restored state block of a run on one rank against each twin's saved block of its
 * step (or, when the twin saved nothing there, its records of that step), judged by the one rule of common/recmatch.h;
 * a difference is the group's divergence at that step, kind "restore", before any later step's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"
#include "server/twins/cmp_int.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

static int is_state(const rec_record *r)
{
    return !rec_in_steps(r);
}

static int in_steps(const rec_record *r)
{
    return rec_in_steps(r);
}

void cmp_register_restores(void)
{
    /* the state entries' own segments (kinds 2 and 4), under the partial index record_frames_state */
    db_register("cmp_state", "SELECT run_key, rank, step, frames FROM record_frames WHERE run_key = ANY($1::bigint[]) "
                             "AND rank = $2 AND kind IN (2, 4) ORDER BY run_key, seq_lo");
    db_register("cmp_rs_done",
                "SELECT run_key, step, ref_run_key FROM restore_checks WHERE twin_group = $1 AND rank = $2");
    db_register("cmp_rs_store",
                "INSERT INTO restore_checks (twin_group, run_key, rank, step, ref_run_key, reference, status, entry, "
                "occ, diff, compared, unverified, detail) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
                "$13::jsonb) ON CONFLICT DO NOTHING");
}

/* A pair decided already. */
typedef struct done_pair {
    int64_t run, step, ref;
} done_pair;

static int is_done(const done_pair *d, int n, int64_t run, int64_t step, int64_t ref)
{
    for (int i = 0; i < n; i++)
        if (d[i].run == run && d[i].step == step && d[i].ref == ref)
            return 1;
    return 0;
}

/* complete - 1 when run `k` of `g` has recorded everything of `step` on this rank (a later step, or its end). */
static int complete(const cmp_group *g, int k, int64_t step)
{
    return g->ended[k] || (g->max_step[k] != INT64_MIN && g->max_step[k] > step);
}

/* block - the entries of run `run` with state flag `flag` at `step`, in record order, into out[]. */
static size_t block(const cmp_rows *rows, int run, int flag, int64_t step, const rec_record **out)
{
    size_t n = 0;
    for (size_t i = 0; i < rows->n; i++) {
        const rec_record *r = &rows->recs[i].rec;
        if (rows->recs[i].run == run && (r->flags & REC_STATE_MASK) == flag && r->step == step)
            out[n++] = r;
    }
    return n;
}

static first_rec *as_cmp(const rec_record *r, int run, first_rec *tmp)
{
    if (!r)
        return NULL;
    tmp->run = run;
    tmp->rec = *r;
    return tmp;
}

/* store_check - the restore_checks row of one pair, and the group's divergence when it differs. Returns 1 when a
 * divergence was stored, 0 when none, -1 on a database error. */
static int store_check(const char *group, int rank, const cmp_group *g, int a, int b, int64_t step,
                       const char *reference, const rec_restore_result *v, const rec_record *first_restored,
                       double commit_s, cmp_found *out)
{
    char run_s[32], rk[16], st[32], ref_s[32], occ_s[16], cmp_s[16], unv_s[16], name[LS_NAME_MAX + 1], err[512];
    const rec_record *named = v->restored ? v->restored : v->ref;
    int differs = v->status != REC_RESTORE_SAME && v->status != REC_RESTORE_UNVERIFIED;
    first_rec ta, tb;
    json_t *mine = cmp_run_entry(g->ids[a], as_cmp(v->restored, a, &ta));
    json_t *theirs = cmp_run_entry(g->ids[b], as_cmp(v->ref, b, &tb));
    json_object_set_new(mine, "role", json_string("restored"));
    json_object_set_new(theirs, "role", json_string(reference));
    if (!strcmp(reference, "saved")) { /* the whole block's account, not only its first difference */
        json_object_set_new(mine, "not_restored", json_integer((json_int_t)v->not_restored));
        json_object_set_new(mine, "not_saved", json_integer((json_int_t)v->not_saved));
    }
    json_t *detail = json_pack("{s:O, s:O}", "restored", mine, "reference", theirs);
    char *detail_s = json_dumps(detail, JSON_COMPACT);
    json_decref(detail);
    snprintf(run_s, sizeof(run_s), "%" PRId64, g->keys[a]);
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(st, sizeof(st), "%" PRId64, step);
    snprintf(ref_s, sizeof(ref_s), "%" PRId64, g->keys[b]);
    snprintf(occ_s, sizeof(occ_s), "%u", named ? named->occurrence : 0);
    snprintf(cmp_s, sizeof(cmp_s), "%zu", v->compared);
    snprintf(unv_s, sizeof(unv_s), "%zu", v->unverified);
    if (named)
        snprintf(name, sizeof(name), "%.*s", (int)named->name_len, named->name);
    const char *q[] = {group,
                       run_s,
                       rk,
                       st,
                       ref_s,
                       reference,
                       rec_restore_status_name(v->status),
                       differs && named ? name : NULL,
                       differs && named ? occ_s : NULL,
                       v->status == REC_RESTORE_DIFFERS ? rec_diff_name(v->diff) : NULL,
                       cmp_s,
                       unv_s,
                       differs ? detail_s : NULL};
    PGresult *r = db_exec_once("cmp_rs_store", 13, q, err, sizeof(err));
    free(detail_s);
    if (!r) {
        json_decref(mine);
        json_decref(theirs);
        return -1;
    }
    PQclear(r);
    if (!differs) {
        json_decref(mine);
        json_decref(theirs);
        return 0;
    }
    json_object_set_new(mine, "status", json_string(rec_restore_status_name(v->status)));
    if (v->status == REC_RESTORE_DIFFERS)
        json_object_set_new(mine, "diff", json_string(rec_diff_name(v->diff)));
    json_t *runs = json_array();
    json_array_append_new(runs, theirs);
    json_array_append_new(runs, mine);
    /* its place: the restored entry's seq, else (an entry not restored) where the restored block began */
    const rec_record *at = v->restored ? v->restored : first_restored;
    return cmp_store_divergence(group, rank, step, (int64_t)at->seq, named->name, named->name_len, named->occurrence,
                                "restore", g->keys[a], runs, commit_s, 0, out) < 0
               ? -1
               : 1;
}

int cmp_check_restores(const char *group, int rank, const cmp_group *g, double commit_s, cmp_found *out)
{
    char rk[16], err[512];
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {g->keyarr, rk};
    PGresult *sr = db_exec_bin("cmp_state", 2, p, err, sizeof(err));
    if (!sr)
        return -1;
    frame_set set = {0};
    cmp_rows rows;
    if (frames_rows(&set, sr, 0, 1, 2, 3, INT64_MIN, INT64_MAX, is_state, err, sizeof(err)) < 0) {
        log_warn("restore check of group %s rank %d: %s", group, rank, err);
        frame_set_release(&set);
        return -1;
    }
    cmp_rows_from_set(&set, g, NULL, &rows);
    int any = 0;
    for (size_t i = 0; i < rows.n && !any; i++)
        any = (rows.recs[i].rec.flags & REC_STATE_RESTORED) != 0;
    PGresult *dr = NULL;
    const rec_record **mine = NULL, **ref = NULL;
    done_pair *done = NULL;
    int ndone = 0, rc = 0;
    if (!any)
        goto out_free;
    const char *pd[] = {group, rk};
    if (!(dr = db_exec_once("cmp_rs_done", 2, pd, err, sizeof(err)))) {
        rc = -1;
        goto out_free;
    }
    ndone = PQntuples(dr);
    done = xcalloc((size_t)ndone + 1, sizeof(*done));
    for (int i = 0; i < ndone; i++)
        done[i] = (done_pair){strtoll(PQgetvalue(dr, i, 0), NULL, 10), strtoll(PQgetvalue(dr, i, 1), NULL, 10),
                              strtoll(PQgetvalue(dr, i, 2), NULL, 10)};
    mine = xcalloc(rows.n + 1, sizeof(*mine));
    ref = xcalloc(rows.n + 1, sizeof(*ref));
    for (size_t i = 0; i < rows.n && rc >= 0; i++) {
        const first_rec *c = &rows.recs[i];
        int a = c->run;
        int64_t k = c->rec.step;
        if (a >= g->nruns || !(c->rec.flags & REC_STATE_RESTORED) || !complete(g, a, k))
            continue;
        int first = 1; /* only at the block's first entry (rows are in seq order per run) */
        for (size_t j = 0; j < i && first; j++)
            first =
                !(rows.recs[j].run == a && (rows.recs[j].rec.flags & REC_STATE_RESTORED) && rows.recs[j].rec.step == k);
        if (!first)
            continue;
        size_t n = block(&rows, a, REC_STATE_RESTORED, k, mine);
        for (int b = 0; b < g->nruns && rc >= 0; b++) {
            if (b == a || g->ranks[b] != g->ranks[a] || is_done(done, ndone, g->keys[a], k, g->keys[b]))
                continue; /* another layout's rank r holds other state: not comparable here */
            size_t m = block(&rows, b, REC_STATE_SAVED, k, ref);
            rec_restore_result v;
            if (m) {
                if (!complete(g, b, k))
                    continue; /* the twin is still saving it */
                if (rec_restore_check(mine, n, ref, m, 1, &v) < 0)
                    abort(); /* out of memory: the server's policy (server/core/xalloc.h) */
                int got = store_check(group, rank, g, a, b, k, "saved", &v, mine[0], commit_s, out);
                rc = got < 0 ? -1 : rc | got;
                continue;
            }
            if (!complete(g, b, k))
                continue; /* it may yet save, or record the step */
            frame_set tset = {0};
            if (frames_read_step(&g->keys[b], 1, (uint32_t)rank, k, &tset, err, sizeof(err)) < 0) {
                frame_set_release(&tset);
                rc = -1;
                break;
            }
            cmp_rows trows;
            cmp_rows_from_set(&tset, g, in_steps, &trows);
            const rec_record **tref = xcalloc(trows.n + 1, sizeof(*tref));
            for (size_t t = 0; t < trows.n; t++)
                tref[t] = &trows.recs[t].rec;
            if (rec_restore_check(mine, n, tref, trows.n, 0, &v) < 0)
                abort();
            int got = store_check(group, rank, g, a, b, k, trows.n ? "records" : "none", &v, mine[0], commit_s, out);
            rc = got < 0 ? -1 : rc | got;
            free(tref);
            cmp_rows_release(&trows);
        }
    }
out_free:
    free(mine);
    free(ref);
    free(done);
    PQclear(dr);
    cmp_rows_release(&rows);
    if (rc < 0)
        log_warn("restore check of group %s rank %d: %s", group, rank, err);
    return rc;
}
