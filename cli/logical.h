/* logical.h - a run's logical tensors: its shard records combined across ranks (common/shard.h), as a one-rank run that
 * `lockstep diff --logical` compares whatever the runs' rank counts. */
#ifndef CLI_LOGICAL_H
#define CLI_LOGICAL_H

#include <stddef.h>

#include "cli/tracedir.h"
#include "common/shard.h"

/* A run's logical tensors. `run` holds one rank whose records are the
 * tensors (shard_as_record), by step, then in the order the program
 * recorded them (the position of each tensor's first shard on the lowest
 * rank that holds one); tensors[i] is the assembly behind run.ranks[0].recs[i]. */
typedef struct lg_run {
    td_run run; /* its one rank's records are lg.recs (not owned by the rank) */
    shard_logical lg;
    shard_tensor *tensors; /* lg.tensors */
    size_t n_ranks;        /* ranks of the source run */
    size_t n_plain;        /* step records that are not shards: rank-local, not compared */
    size_t n_state;        /* state entries: not compared here */
    const td_run *src;     /* the source run (set by the caller, for notes) */
} lg_run;

/* lg_build - the logical tensors of `src` (which must outlive `out`).
 * Returns 0; -1 with a sentence in `why` naming the tensor and step whose
 * shards do not tile it (a gap, an overlap, totals that disagree) or when
 * out of memory. Free with lg_release. */
int lg_build(const td_run *src, lg_run *out, char *why, size_t cap);

void lg_release(lg_run *lr);

#endif /* CLI_LOGICAL_H */
