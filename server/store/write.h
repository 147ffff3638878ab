/* write.h - the write path of a record batch: one transaction (batches row, binary COPY of the records, step digests, rank progress), acknowledged only after COMMIT. */
#ifndef SERVER_STORE_WRITE_H
#define SERVER_STORE_WRITE_H

#include "server/core/error.h"
#include "server/store/batch.h"
#include "server/store/runs.h"

/* store_write_register - register the prepared statements of this module. */
void store_write_register(void);

/* store_batch - store batch `b` of `run` in one transaction: the batches
 * row first (a replay finds it and stores nothing: `*duplicate` = 1), the
 * records by binary COPY, the per-step digests and the rank's progress; and
 * commit. Returns 0 only after COMMIT succeeded (or for a duplicate), else
 * -1 with `e` filled and nothing stored. `*commit_s` gets the wall-clock time
 * of the commit (seconds since the epoch). */
int store_batch(const run_info *run, const srv_batch *b, int *duplicate, double *commit_s, srv_error *e);

#endif /* SERVER_STORE_WRITE_H */
