/* retention.c - periodic database upkeep: daily records partitions ahead of time, and retention. */
#include "server/store/retention.h"

#include <stdio.h>
#include <stdlib.h>

#include "server/core/log.h"
#include "server/core/worker.h"
#include "server/store/db.h"

#define DAYS_AHEAD 3
#define PERIOD_S 3600

static void retention_loop(worker *w);
static worker thread = WORKER_INIT("retention", retention_loop);
static int retain;

void retention_register(void)
{
    db_register("retention_ensure", "SELECT lockstep_ensure_partitions($1::int)");
    db_register("retention_drop", "SELECT lockstep_drop_partitions($1::int)");
}

int retention_ensure_partitions(char *err, size_t cap)
{
    char days[16];
    snprintf(days, sizeof(days), "%d", DAYS_AHEAD);
    const char *p[] = {days};
    PGresult *r = db_exec("retention_ensure", 1, p, err, cap);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

int retention_drop_old(int keep_days, char *err, size_t cap)
{
    char days[16];
    snprintf(days, sizeof(days), "%d", keep_days);
    const char *p[] = {days};
    PGresult *r = db_exec("retention_drop", 1, p, err, cap);
    if (!r)
        return -1;
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (n)
        log_info("retention: dropped %d records partitions older than %d days", n, keep_days);
    return n;
}

static void retention_loop(worker *w)
{
    char err[512];
    for (;;) {
        if (retention_ensure_partitions(err, sizeof(err)) < 0)
            log_warn("cannot create records partitions: %s", err);
        if (retain > 0 && retention_drop_old(retain, err, sizeof(err)) < 0)
            log_warn("retention failed: %s", err);
        worker_lock(w);
        int stop = worker_wait_locked(w, PERIOD_S);
        worker_unlock(w);
        if (stop)
            return;
    }
}

int retention_start(int retain_days)
{
    retain = retain_days;
    return worker_start(&thread, 1);
}

void retention_stop(void)
{
    worker_stop(&thread);
}
