/* log.c - lockstepd's leveled log lines on stderr (or a file reopened on SIGHUP). */
#include "server/core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/text.h"

static int min_level = LOG_INFO;
static FILE *log_file; /* NULL: stderr */
static char log_path[4096];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const names[] = {"debug", "info", "warn", "error"};

void log_set_level(int level)
{
    min_level = level;
}

int log_open_file(const char *path)
{
    if (!path) {
        pthread_mutex_lock(&log_lock);
        if (log_file)
            fclose(log_file);
        log_file = NULL;
        log_path[0] = 0;
        pthread_mutex_unlock(&log_lock);
        return 0;
    }
    FILE *f = fopen(path, "a");
    if (!f)
        return -1;
    setvbuf(f, NULL, _IOLBF, 0);
    pthread_mutex_lock(&log_lock);
    if (log_file)
        fclose(log_file);
    log_file = f;
    snprintf(log_path, sizeof(log_path), "%s", path);
    pthread_mutex_unlock(&log_lock);
    return 0;
}

int log_reopen(void)
{
    char path[sizeof(log_path)];
    pthread_mutex_lock(&log_lock);
    snprintf(path, sizeof(path), "%s", log_path);
    pthread_mutex_unlock(&log_lock);
    if (!path[0])
        return 0;
    return log_open_file(path);
}

void log_msg(int level, const char *fmt, ...)
{
    if (level < min_level)
        return;
    char when[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);

    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One event, one line: whatever a client sent (a newline in a job id, bytes that are not UTF-8) is
     * shown as '?' so that it can neither split the line nor forge another. */
    char clean[sizeof(line)];
    text_sanitize(line, clean, sizeof(clean));

    pthread_mutex_lock(&log_lock);
    FILE *out = log_file ? log_file : stderr;
    fprintf(out, "%s.%03ldZ %-5s lockstepd: %s\n", when, ts.tv_nsec / 1000000, names[level & 3], clean);
    fflush(out);
    pthread_mutex_unlock(&log_lock);
}
