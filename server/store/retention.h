/* retention.h - periodic database upkeep: daily records partitions ahead of time, and retention. */
#ifndef SERVER_STORE_RETENTION_H
#define SERVER_STORE_RETENTION_H

#include <stddef.h>

/* retention_ensure_partitions - create the records partitions for today and the
 * next days. Returns 0, or -1 with the reason in `err`. */
int retention_ensure_partitions(char *err, size_t cap);

/* retention_drop_old - drop records partitions older than `keep_days` days
 * (runs, digests and divergences stay). Returns how many were dropped, or -1
 * with the reason in `err`. */
int retention_drop_old(int keep_days, char *err, size_t cap);

/* retention_start - start the upkeep thread (hourly; retention when
 * `retain_days` > 0). Returns 0 or -1. */
int retention_start(int retain_days);

/* retention_stop - stop the upkeep thread. */
void retention_stop(void);

/* retention_register - prepare the statements this module runs (db_register). */
void retention_register(void);

#endif /* SERVER_STORE_RETENTION_H */
