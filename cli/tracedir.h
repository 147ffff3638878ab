/* tracedir.h - a run's traces in memory: every rank file of a trace directory, decoded. */
#ifndef CLI_TRACEDIR_H
#define CLI_TRACEDIR_H

#include <stddef.h>
#include <stdint.h>

#include "common/fsutil.h"
#include "common/record.h"

/* One rank's trace. Record names and call sites point into `blob`; inputs,
 * chunks and the other extension fields into `words`. */
typedef struct td_rank {
    char path[4096];
    fs_blob blob;
    rec_header hdr;
    rec_record *recs;
    size_t n;
    uint64_t *words;
    rec_status status; /* why reading stopped: REC_OK or a torn/corrupt tail */
    size_t err_off;
    char err[256];
} td_rank;

typedef struct td_run {
    char path[4096];
    td_rank *ranks; /* sorted by rank */
    size_t n_ranks;
    size_t n_records;
} td_run;

/* td_load - load `path`: a directory of *.lstrace files (one per rank) or
 * one trace file. Returns 0, or -1 with a message in `why` when the path
 * cannot be read, holds no trace, a file has no valid header, or two files
 * claim one rank. A torn or corrupt tail is not an error: the rank keeps the
 * records before it and says why it stopped. Free with td_release. */
int td_load(td_run *run, const char *path, char *why, size_t cap);

void td_release(td_run *run);

/* td_rank_find - the rank `rank` of `run`, or NULL. */
const td_rank *td_rank_find(const td_run *run, uint32_t rank);

#endif /* CLI_TRACEDIR_H */
