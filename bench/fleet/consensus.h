/* consensus.h - bench/fleet's consensus digests: a simulated rank's REC_CONSENSUS_DIGEST pseudo-records of one step,
 * as the agent makes them (common/consensus.h), for comparing a consensus batch's server cost with a digest batch's. */
#ifndef BENCH_FLEET_CONSENSUS_H
#define BENCH_FLEET_CONSENSUS_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"
#include "tests/integration/harness.h"

/* The communicators of a simulated run: k of them per rank. Communicator 0 spans the whole run (a data-parallel
 * allreduce); communicator c >= 1 is the block of 4 << c consecutive ranks holding the rank (tensor- or
 * pipeline-parallel groups), the whole run when that is larger. */
typedef struct fleet_cons {
    int k;              /* communicators per rank; 0: no consensus digests */
    uint32_t run_ranks; /* ranks of a run (world ranks 0..run_ranks-1) */
    uint64_t world_key; /* cons_key of the whole run, computed once */
} fleet_cons;

/* fleet_cons_init - `k` communicators per rank in runs of `run_ranks` ranks. */
void fleet_cons_init(fleet_cons *fc, int k, uint32_t run_ranks);

/* fleet_cons_place - the consensus place of a rank's j-th collective record of a step (j from 0): communicator
 * j % k at index j / k, encoded as an extension field into `ext` (REC_EXT_ENCODED_MAX bytes) and attached to `r`. */
void fleet_cons_place(const fleet_cons *fc, uint32_t rank, int j, rec_record *r, unsigned char *ext);

/* fleet_cons_add - fold rank `rank`'s n collective records of one step (colls[j] the j-th, each placed by
 * fleet_cons_place) into one consensus digest per (communicator, window of CONS_WINDOW places) and add them to
 * `b`; seq is the seq they carry (the step's last record's, as in the agent). Returns how many it added. */
int fleet_cons_add(const fleet_cons *fc, h_batch *b, uint32_t rank, const rec_record *colls, int n, uint64_t seq);

#endif /* BENCH_FLEET_CONSENSUS_H */
