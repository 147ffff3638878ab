/* fleet_thread.c - the fleet thread: evaluate notified and changed twin groups, rescore the fleet, wake the alert
 * sender. */
#include "server/fleet/fleet_thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/log.h"
#include "server/core/state.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/alerts/alerts.h"
#include "server/replay/narrow_eval.h"
#include "server/fleet/consensus.h"
#include "server/fleet/rescore.h"
#include "server/fleet/suspects.h"
#include "server/store/db.h"

#define MAX_REQUEUE 64
#define RESCORE_EVERY_S 30

static void fleet_loop(worker *w);
static worker thread = WORKER_INIT("fleet", fleet_loop);
static char (*s_queue)[256]; /* under thread.lock */
static int s_len, s_cap, s_rescore;

void fleet_kick(void)
{
    worker_lock(&thread);
    s_rescore = 1;
    worker_kick_locked(&thread);
    worker_unlock(&thread);
}

void fleet_notify(const char *group)
{
    if (!group || !*group || strlen(group) >= 256)
        return;
    worker_lock(&thread);
    int i;
    for (i = 0; i < s_len; i++)
        if (!strcmp(s_queue[i], group))
            break;
    if (i == s_len) {
        if (s_len == s_cap) {
            s_cap = s_cap ? 2 * s_cap : 32;
            s_queue = xrealloc(s_queue, (size_t)s_cap * sizeof(*s_queue));
        }
        snprintf(s_queue[s_len++], 256, "%s", group);
    }
    worker_kick_locked(&thread);
    worker_unlock(&thread);
}

/* Groups with recent activity (a run started or ended, a divergence, a rank
 * that failed) that are ready (two runs or more, and a divergence or every
 * run ended) and whose state changed since they were last evaluated. */
#define RECENT "now() - interval '15 minutes'"
#define Q_CHANGED                                                                                                      \
    "SELECT a.g FROM (SELECT twin_group AS g FROM runs WHERE twin_group IS NOT NULL AND (created_at > " RECENT         \
    " OR ended_at > " RECENT ") UNION SELECT twin_group FROM divergences WHERE detected_at > " RECENT                  \
    " UNION SELECT r.twin_group FROM rank_ends e JOIN runs r USING (run_key) WHERE r.twin_group IS NOT NULL AND "      \
    "e.exit_code <> 0 AND e.ended_at > " RECENT ") a "                                                                 \
    "WHERE (SELECT count(*) FROM runs r WHERE r.twin_group = a.g) >= 2 AND (EXISTS (SELECT 1 FROM divergences d "      \
    "WHERE d.twin_group = a.g) OR NOT EXISTS (SELECT 1 FROM runs r WHERE r.twin_group = a.g AND r.status = "           \
    "'running')) AND NOT EXISTS (SELECT 1 FROM group_evidence e WHERE e.twin_group = a.g AND e.signature = "           \
    "lockstep_group_signature(a.g)) LIMIT 10000"

static time_t last_rescore;
static int s_soon;      /* a group waits to settle (the thread's own flag) */
static int s_narrowing; /* replay experiments are running: look at them twice a second */

int fleet_pass(void)
{
    worker_lock(&thread);
    char(*work)[256] = s_queue;
    int n = s_len;
    s_queue = NULL;
    s_len = s_cap = 0;
    int kicked = s_rescore;
    s_rescore = 0;
    worker_unlock(&thread);

    char err[512];
    int rc = 0, changed = 0;
    /* Replay experiments first: a verdict re-evaluates its groups (they are notified for the next pass). */
    int running = 0;
    if (narrow_pass(&running, fleet_notify) < 0)
        rc = -1;
    s_narrowing = running > 0;
    PGresult *r = db_exec_once("fleet_changed", 0, NULL, err, sizeof(err));
    if (!r) {
        log_warn("suspects: cannot list changed groups: %s", err);
        rc = -1;
    }
    int nr = r ? PQntuples(r) : 0;
    char(*all)[256] = xcalloc((size_t)(n + nr + MAX_REQUEUE) + 1, 256);
    int total = 0;
    for (int i = 0; i < n; i++)
        snprintf(all[total++], 256, "%s", work[i]);
    for (int i = 0; i < nr; i++) {
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
            dup = !strcmp(work[j], PQgetvalue(r, i, 0));
        if (!dup)
            snprintf(all[total++], 256, "%.255s", PQgetvalue(r, i, 0));
    }
    PQclear(r);
    free(work);
    char requeue[MAX_REQUEUE][256];
    int nreq = 0;
    for (int i = 0; i < total; i++) {
        int e = suspects_evaluate(all[i], requeue, MAX_REQUEUE, &nreq);
        if (e < 0) {
            rc = -1;
            fleet_notify(all[i]);
        }
        changed |= e == 1;
        if (e == 2)
            s_soon = 1; /* settles within moments: look again in 100 ms, not a whole interval */
        /* groups that the spread rule reclassified: evaluate them again now */
        for (; nreq > 0; nreq--) {
            const char *g = requeue[nreq - 1];
            char p[256];
            snprintf(p, sizeof(p), "%s", g);
            const char *pp[] = {p};
            db_do("fleet_evidence_stale", 1, pp, err, sizeof(err));
            snprintf(all[total < n + nr + MAX_REQUEUE ? total++ : total - 1], 256, "%s", p);
        }
    }
    free(all);
    /* Runs' consensus disagreements: each new or changed row, once. */
    int cons = consensus_pass();
    if (cons < 0)
        rc = -1;
    changed |= cons > 0;
    time_t now = time(NULL);
    if (changed || kicked || now - last_rescore >= RESCORE_EVERY_S) {
        if (rescore_fleet() < 0)
            rc = -1;
        else
            last_rescore = now;
    }
    if (changed)
        alert_notify();
    return rc;
}

static void fleet_loop(worker *w)
{
    for (;;) {
        worker_lock(w);
        if (!s_len && !s_rescore) {
            int ms = s_soon && g_srv.cfg.suspects_interval_ms > 100 ? 100 : g_srv.cfg.suspects_interval_ms;
            if (s_narrowing && ms > 500)
                ms = 500;
            s_soon = 0;
            worker_wait_locked(w, ms / 1000.0);
        }
        int stop = w->stopping;
        worker_unlock(w);
        if (stop)
            return;
        fleet_pass();
    }
}

int fleet_start(void)
{
    return worker_start(&thread, 1);
}

void fleet_stop(void)
{
    worker_stop(&thread);
}

void fleet_thread_register(void)
{
    db_register("fleet_changed", Q_CHANGED);
    db_register("fleet_evidence_stale", "UPDATE group_evidence SET signature = '' WHERE twin_group = $1");
}
