/* resume.c - a resumed run's start taken from its restored state block: a run that restored the checkpoint of step k
 * is compared from k+1 (common/recmatch.h's rec_resume_start, the rule `lockstep diff --overlap` applies too),
 * whatever start it registered with (the plugin registers before the program has loaded anything). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"
#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/store/db.h"
#include "server/twins/cmp_int.h"

void cmp_register_resumes(void)
{
    /* each run of the group: its start, its earliest restored state block (kind 4, under the partial index
     * record_frames_state), whether it has step records before that step (state blocks add no step digest), and
     * its rank count */
    db_register(
        "cmp_resume_runs",
        "SELECT r.run_key, r.start_step, x.k, x.k IS NOT NULL AND EXISTS (SELECT 1 FROM step_digest_packs d WHERE "
        "d.run_key = r.run_key AND d.blk <= lockstep_step_block(x.k) AND EXISTS (SELECT 1 FROM unnest(d.steps) s WHERE "
        "s < x.k)), r.ranks FROM runs r LEFT JOIN LATERAL (SELECT min(f.step) AS "
        "k FROM record_frames f WHERE f.run_key = r.run_key AND f.kind = 4) x ON true WHERE r.twin_group = $1 "
        "ORDER BY r.run_key LIMIT " GROUP_MAX_RUNS_TEXT);
    /* every rank's lock of the group (and its logical mark's, rank -1), exclusively and without waiting: no batch
     * commits and no comparison runs on any of them while the start moves */
    db_register("cmp_resume_lock", "SELECT bool_and(pg_try_advisory_xact_lock(lockstep_check_key($1, x))) "
                                   "FROM generate_series(-1, $2::int - 1) x");
    db_register("cmp_resume_set", "UPDATE runs SET start_step = $2 WHERE run_key = $1 AND start_step < $2");
    /* what was compared with the old start is compared again: step divergences and marks go, and so do the restore
     * checks made meanwhile (a step divergence of the old start may have replaced the restore difference they
     * stored: checked again, it is stored again) */
    db_register("cmp_resume_reset",
                "WITH d AS (DELETE FROM divergences WHERE twin_group = $1 AND kind <> 'restore' RETURNING 1), "
                "c AS (DELETE FROM restore_checks WHERE twin_group = $1 RETURNING 1) "
                "DELETE FROM group_checks WHERE twin_group = $1");
}

/* One run whose start moves. */
typedef struct moved {
    char key[32], start[32];
} moved;

int cmp_resume_starts(const char *group, int *again)
{
    char err[512], maxr[16];
    const char *p[] = {group};
    *again = 0;
    PGresult *r = db_exec("cmp_resume_runs", 1, p, err, sizeof(err));
    if (!r) {
        log_warn("resumed runs of group %s: %s", group, err);
        return -1;
    }
    moved mv[GROUP_MAX_RUNS];
    int n = 0, ranks = 0;
    for (int i = 0; i < PQntuples(r) && i < GROUP_MAX_RUNS; i++) {
        int rk = atoi(PQgetvalue(r, i, 4));
        ranks = rk > ranks ? rk : ranks;
        if (PQgetisnull(r, i, 2))
            continue;
        int64_t declared = strtoll(PQgetvalue(r, i, 1), NULL, 10), restored = strtoll(PQgetvalue(r, i, 2), NULL, 10);
        int64_t start = rec_resume_start(declared, restored, PQgetvalue(r, i, 3)[0] == 't');
        if (start == declared)
            continue;
        snprintf(mv[n].key, sizeof(mv[n].key), "%s", PQgetvalue(r, i, 0));
        snprintf(mv[n].start, sizeof(mv[n].start), "%" PRId64, start);
        n++;
    }
    PQclear(r);
    if (!n)
        return 0;
    snprintf(maxr, sizeof(maxr), "%d", ranks);
    const char *pl[] = {group, maxr};
    if (db_begin(err, sizeof(err)) < 0)
        return -1;
    PGresult *l = db_exec("cmp_resume_lock", 2, pl, err, sizeof(err));
    if (!l)
        goto out_rollback;
    int locked = PQgetvalue(l, 0, 0)[0] == 't';
    PQclear(l);
    if (!locked) { /* a batch or a comparison holds a rank: look again once it is over */
        db_rollback();
        *again = 1;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const char *ps[] = {mv[i].key, mv[i].start};
        PGresult *u = db_exec("cmp_resume_set", 2, ps, err, sizeof(err));
        if (!u)
            goto out_rollback;
        PQclear(u);
    }
    PGresult *d = db_exec("cmp_resume_reset", 1, p, err, sizeof(err));
    if (!d)
        goto out_rollback;
    PQclear(d);
    if (db_commit(err, sizeof(err)) < 0)
        goto out_rollback;
    for (int i = 0; i < n; i++)
        log_info("group %s: run %s restored a checkpoint; it is compared from step %s", group, mv[i].key, mv[i].start);
    return ranks;
out_rollback:
    db_rollback();
    log_warn("resumed runs of group %s: %s", group, err);
    return -1;
}
