/* maint.c - periodic database upkeep: daily records partitions ahead of time, and retention. */
#include "server/maint.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "server/db.h"
#include "server/log.h"

#define DAYS_AHEAD 3
#define PERIOD_S 3600

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stopping, running, retain;

int maint_ensure_partitions(char *err, size_t cap)
{
    char sql[96];
    snprintf(sql, sizeof(sql), "SELECT lockstep_ensure_partitions(%d)", DAYS_AHEAD);
    PGresult *r = db_exec_sql(sql, err, cap);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

int maint_drop_old(int keep_days, char *err, size_t cap)
{
    char sql[96];
    snprintf(sql, sizeof(sql), "SELECT lockstep_drop_partitions(%d)", keep_days);
    PGresult *r = db_exec_sql(sql, err, cap);
    if (!r)
        return -1;
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (n)
        log_info("retention: dropped %d records partitions older than %d days", n, keep_days);
    return n;
}

static void *maint_main(void *arg)
{
    (void)arg;
    char err[512];
    pthread_mutex_lock(&lock);
    while (!stopping) {
        pthread_mutex_unlock(&lock);
        if (maint_ensure_partitions(err, sizeof(err)) < 0)
            log_warn("cannot create records partitions: %s", err);
        if (retain > 0 && maint_drop_old(retain, err, sizeof(err)) < 0)
            log_warn("retention failed: %s", err);
        pthread_mutex_lock(&lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += PERIOD_S;
        while (!stopping && pthread_cond_timedwait(&cond, &lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int maint_start(int retain_days)
{
    retain = retain_days;
    if (pthread_create(&thread, NULL, maint_main, NULL) != 0)
        return -1;
    running = 1;
    return 0;
}

void maint_stop(void)
{
    if (!running)
        return;
    pthread_mutex_lock(&lock);
    stopping = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);
    running = 0;
}
