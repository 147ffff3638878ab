/* lease.c - the twin groups' comparison leases (lease.h): a table of the groups this instance was asked about, with
 * who holds each lease and until when as this instance last learnt it, and the thread that renews its own. */
#include "server/peers/lease.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/worker.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"

#define LEASE_IDLE_S 120.0 /* a group nothing asked about for this long is given back (or forgotten) */
#define LEASE_BUCKETS 4096
#define RUN_PREFIX "consensus\t" /* a run's consensus lease: this, then the run key (lease_run_name) */

/* One group: who compares it, as this instance last learnt. */
typedef struct lentry {
    char group[256];
    int mine;       /* this instance holds the lease */
    double until;   /* monotonic seconds: while before it, `mine` holds (the holder's lease runs to at least then) */
    double touched; /* the last lease_mine about it */
    struct lentry *next;
} lentry;

static void renew_loop(worker *w);
static worker thread = WORKER_INIT("comparison leases", renew_loop);
static lentry *buckets[LEASE_BUCKETS]; /* under thread.lock */
static char me[128] = "lockstepd";
static double ttl = 5.0;
static atomic_ulong takeovers; /* leases taken over since lease_takeovers_seen last said so */

void lease_register(void)
{
    db_register("lease_take", "SELECT holder, left_s, took_over FROM lockstep_lease_take($1, $2, $3::float8)");
    db_register("lease_renew", "SELECT twin_group FROM lockstep_lease_renew($1, $2::float8, $3::jsonb)");
    db_register("lease_release", "DELETE FROM group_leases WHERE owner = $1");
}

void lease_configure(const char *instance, double ttl_s)
{
    snprintf(me, sizeof(me), "%s", instance);
    ttl = ttl_s;
}

const char *lease_run_name(int64_t run_key, char *buf, size_t cap)
{
    snprintf(buf, cap, RUN_PREFIX "%lld", (long long)run_key);
    return buf;
}

static unsigned bucket_of(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % LEASE_BUCKETS;
}

/* find_locked - the group's entry, made when new. */
static lentry *find_locked(const char *group)
{
    unsigned b = bucket_of(group);
    for (lentry *e = buckets[b]; e; e = e->next)
        if (!strcmp(e->group, group))
            return e;
    lentry *e = xcalloc(1, sizeof(*e));
    snprintf(e->group, sizeof(e->group), "%s", group);
    e->next = buckets[b];
    buckets[b] = e;
    return e;
}

/* ask - lockstep_lease_take for `group`: 1 when this instance holds it now, 0 when another does (its lease runs
 * another *left seconds), -1 when the database cannot say. */
static int ask(const char *group, double *left)
{
    char t[32], err[256];
    snprintf(t, sizeof(t), "%.3f", ttl);
    const char *p[] = {group, me, t};
    PGresult *r = db_exec("lease_take", 3, p, err, sizeof(err));
    if (!r)
        return -1;
    int got = -1;
    if (PQntuples(r) == 1) {
        got = !strcmp(PQgetvalue(r, 0, 0), me);
        *left = strtod(PQgetvalue(r, 0, 1), NULL);
        if (got && PQgetvalue(r, 0, 2)[0] == 't') {
            atomic_fetch_add(&takeovers, 1);
            metrics_lease_takeover();
            const char *run = !strncmp(group, RUN_PREFIX, strlen(RUN_PREFIX)) ? group + strlen(RUN_PREFIX) : NULL;
            log_info("took over the comparison lease of %s %s (its holder let it expire)",
                     run ? "the consensus of run key" : "twin group", run ? run : group);
        }
    }
    PQclear(r);
    return got;
}

int lease_mine(const char *group)
{
    if (!group || !*group)
        return 1;
    double now = clock_mono_s();
    worker_lock(&thread);
    lentry *e = find_locked(group);
    e->touched = now;
    int known = now < e->until, mine = e->mine;
    worker_unlock(&thread);
    if (known)
        return mine;
    double left = 0;
    int got = ask(group, &left);
    worker_lock(&thread);
    e = find_locked(group);
    if (got < 0) { /* the database cannot say: compare (twice at worst) for a second, then ask again */
        e->mine = 1;
        e->until = now + 1.0;
        worker_unlock(&thread);
        return 1;
    }
    e->mine = got;
    e->until = now + (left > 0 ? left : 0); /* `now` was before the statement: never later than the database's */
    worker_unlock(&thread);
    return got;
}

int lease_takeovers_seen(void)
{
    return atomic_exchange(&takeovers, 0) != 0;
}

/* renew - renew this instance's leases but those of groups idle for LEASE_IDLE_S (given back); forget idle groups
 * held by others. */
static void renew(void)
{
    double now = clock_mono_s();
    json_t *gone = json_array();
    worker_lock(&thread);
    for (unsigned b = 0; b < LEASE_BUCKETS; b++)
        for (lentry **pe = &buckets[b]; *pe;) {
            lentry *e = *pe;
            if (now - e->touched <= LEASE_IDLE_S) {
                pe = &e->next;
                continue;
            }
            if (e->mine)
                json_array_append_new(gone, json_string(e->group));
            *pe = e->next;
            free(e);
        }
    worker_unlock(&thread);
    char *gone_text = json_dumps(gone, JSON_COMPACT);
    json_decref(gone);
    char t[32], err[256];
    snprintf(t, sizeof(t), "%.3f", ttl);
    const char *p[] = {me, t, gone_text ? gone_text : "[]"};
    PGresult *r = db_exec("lease_renew", 3, p, err, sizeof(err));
    free(gone_text);
    if (!r)
        return; /* the leases run out on their own; lease_mine asks again then */
    worker_lock(&thread);
    for (unsigned b = 0; b < LEASE_BUCKETS; b++)
        for (lentry *e = buckets[b]; e; e = e->next)
            if (e->mine)
                e->mine = 0, e->until = 0; /* lost unless the renewal returns it */
    for (int i = 0; i < PQntuples(r); i++) {
        lentry *e = find_locked(PQgetvalue(r, i, 0));
        e->mine = 1;
        e->until = now + ttl;
        if (e->touched == 0)
            e->touched = now; /* held before a restart of this instance: kept until idle */
    }
    worker_unlock(&thread);
    metrics_leases((size_t)PQntuples(r));
    PQclear(r);
}

static void renew_loop(worker *w)
{
    while (!worker_stopping(w)) {
        renew();
        worker_lock(w);
        if (!w->stopping)
            worker_wait_locked(w, ttl / 3);
        worker_unlock(w);
    }
    char err[256];
    const char *p[] = {me};
    PGresult *r = db_exec("lease_release", 1, p, err, sizeof(err)); /* another instance takes them at once */
    if (r)
        PQclear(r);
}

int lease_start(void)
{
    return worker_start(&thread, 1);
}

void lease_stop(void)
{
    worker_stop(&thread);
    for (unsigned b = 0; b < LEASE_BUCKETS; b++)
        while (buckets[b]) {
            lentry *e = buckets[b];
            buckets[b] = e->next;
            free(e);
        }
    metrics_leases(0);
}
