/* suspects_thread.c - the suspects thread: evaluate notified and changed twin groups, rescore the fleet, wake the alert sender. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/alerts.h"
#include "server/hwcfg.h"
#include "server/hwdb.h"
#include "server/log.h"
#include "server/rescore.h"
#include "server/suspects.h"

#define MAX_REQUEUE 64
#define RESCORE_EVERY_S 30

static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_cond = PTHREAD_COND_INITIALIZER;
static char (*s_queue)[256];
static int s_len, s_cap, s_stopping, s_running, s_kicked;
static pthread_t s_thread;

void susp_kick(void)
{
    pthread_mutex_lock(&s_lock);
    s_kicked = 1;
    pthread_cond_signal(&s_cond);
    pthread_mutex_unlock(&s_lock);
}

void susp_notify(const char *group)
{
    if (!group || !*group || strlen(group) >= 256)
        return;
    pthread_mutex_lock(&s_lock);
    int i;
    for (i = 0; i < s_len; i++)
        if (!strcmp(s_queue[i], group))
            break;
    if (i == s_len) {
        if (s_len == s_cap) {
            s_cap = s_cap ? 2 * s_cap : 32;
            s_queue = realloc(s_queue, (size_t)s_cap * sizeof(*s_queue));
            if (!s_queue)
                abort();
        }
        snprintf(s_queue[s_len++], 256, "%s", group);
    }
    pthread_cond_signal(&s_cond);
    pthread_mutex_unlock(&s_lock);
}

/* Groups with recent activity that are ready (two runs or more, and a
 * divergence or every run ended) and whose state changed since they were
 * last evaluated. */
#define RECENT "now() - interval '15 minutes'"
#define Q_CHANGED                                                                                                      \
    "SELECT a.g FROM (SELECT twin_group AS g FROM runs WHERE twin_group IS NOT NULL AND (created_at > " RECENT         \
    " OR ended_at > " RECENT ") UNION SELECT twin_group FROM divergences WHERE detected_at > " RECENT ") a "           \
    "WHERE (SELECT count(*) FROM runs r WHERE r.twin_group = a.g) >= 2 AND (EXISTS (SELECT 1 FROM divergences d "      \
    "WHERE d.twin_group = a.g) OR NOT EXISTS (SELECT 1 FROM runs r WHERE r.twin_group = a.g AND r.status = "           \
    "'running')) AND NOT EXISTS (SELECT 1 FROM group_evidence e WHERE e.twin_group = a.g AND e.signature = "           \
    "lockstep_group_signature(a.g)) LIMIT 10000"

static time_t last_rescore;
static int s_soon; /* a group waits to settle (the thread's own flag) */

int susp_pass(void)
{
    pthread_mutex_lock(&s_lock);
    char(*work)[256] = s_queue;
    int n = s_len;
    s_queue = NULL;
    s_len = s_cap = 0;
    int kicked = s_kicked;
    s_kicked = 0;
    pthread_mutex_unlock(&s_lock);

    char err[512];
    int rc = 0, changed = 0;
    PGresult *r = hw_q(Q_CHANGED, 0, NULL, err, sizeof(err));
    if (!r) {
        log_warn("suspects: cannot list changed groups: %s", err);
        rc = -1;
    }
    int nr = r ? PQntuples(r) : 0;
    char(*all)[256] = calloc((size_t)(n + nr + MAX_REQUEUE) + 1, 256);
    if (!all)
        abort();
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
        int e = susp_evaluate(all[i], requeue, MAX_REQUEUE, &nreq);
        if (e < 0) {
            rc = -1;
            susp_notify(all[i]);
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
            hw_do("UPDATE group_evidence SET signature = '' WHERE twin_group = $1", 1, pp, err, sizeof(err));
            snprintf(all[total < n + nr + MAX_REQUEUE ? total++ : total - 1], 256, "%s", p);
        }
    }
    free(all);
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

static void *susp_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&s_lock);
        if (!s_len && !s_stopping && !s_kicked) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long ms = s_soon && g_hw.suspects_interval_ms > 100 ? 100 : g_hw.suspects_interval_ms;
            s_soon = 0;
            ts.tv_sec += ms / 1000;
            ts.tv_nsec += (ms % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&s_cond, &s_lock, &ts);
        }
        int stop = s_stopping;
        pthread_mutex_unlock(&s_lock);
        if (stop)
            break;
        susp_pass();
    }
    return NULL;
}

int susp_start(void)
{
    if (pthread_create(&s_thread, NULL, susp_main, NULL) != 0)
        return -1;
    s_running = 1;
    return 0;
}

void susp_stop(void)
{
    if (!s_running)
        return;
    pthread_mutex_lock(&s_lock);
    s_stopping = 1;
    pthread_cond_signal(&s_cond);
    pthread_mutex_unlock(&s_lock);
    pthread_join(s_thread, NULL);
    s_running = 0;
}
