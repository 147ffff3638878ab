/* log.h - lockstepd's leveled log lines on stderr (or a file reopened on SIGHUP). */
#ifndef SERVER_CORE_LOG_H
#define SERVER_CORE_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* log_set_level - lines below `level` are dropped. */
void log_set_level(int level);

/* log_open_file - send log lines to `path` (appending) instead of stderr;
 * NULL means stderr. Returns 0, or -1 with errno set (logging stays where it
 * was). */
int log_open_file(const char *path);

/* log_reopen - reopen the log file (for SIGHUP after rotation); a no-op for
 * stderr. Returns 0 or -1 with errno set. */
int log_reopen(void);

/* log_msg - write one line "TIME LEVEL message" at `level`. Thread-safe. */
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif /* SERVER_CORE_LOG_H */
