/* evidence.h - the pure rules of the suspects part: determinism-relevant manifest differences, the spread of one record's divergences, blame shares. */
#ifndef SERVER_FLEET_EVIDENCE_H
#define SERVER_FLEET_EVIDENCE_H

#include <stddef.h>
#include <jansson.h>

/* ev_det_relevant - 1 when the flattened manifest key `key` (e.g.
 * "env.NCCL_ALGO", "exe_xxh3", "gpus.0.name") can change a run's bits: the
 * determinism environment (NCCL_*, CUBLAS*, OMP_*, MKL_*, NVTE_*, OMPI_MCA_coll*,
 * PYTHONHASHSEED, TORCH_DETERMINISTIC*, CUDA_LAUNCH_BLOCKING, LOCKSTEP_MODE),
 * the executable's and libraries' hashes, CUDA/NCCL/MPI versions, GPU model
 * and SM count. Per-job values (run ids, tokens, paths with job ids, the
 * graph dump path, CUDA_VISIBLE_DEVICES, host names) are not. */
int ev_det_relevant(const char *key);

/* ev_det_diff - compare two manifests (borrowed) on the relevant keys.
 * Libraries are compared by path: the same path with another hash differs.
 * An env variable set in one manifest only differs; any other key missing
 * from one manifest (not captured there) is not compared.
 * Returns 1 when they differ (the first such key and both values, as
 * "key: A vs B", in `why`), 0 when not. */
int ev_det_diff(json_t *a, json_t *b, char *why, size_t cap);

/* ev_cover_size - how many nodes a greedy hitting set needs to explain a
 * list of divergences, each given as the set of nodes that could have
 * caused it: `sets[i]` is a ','-separated list of node names. Returns the
 * number of nodes picked (0 when n = 0 or every set is empty). */
int ev_cover_size(const char *const *sets, int n);

/* One weak piece of evidence: a group whose diverging runs point at
 * `ncand` nodes (indices into a rate table), total blame `mass`. */
typedef struct ev_weak {
    int cand[8];
    int ncand;
    double mass;
} ev_weak;

/* ev_share_blame - split each weak group's mass over its candidates in
 * proportion to their involvement rates, and iterate (EM-style) so that a
 * node that diverges with every partner takes the blame its partners do not.
 * `strong[i]` is node i's strong evidence, `expo[i]` its exposures; `k[i]`
 * receives its total involvements (strong plus shares). Never fails. */
void ev_share_blame(const ev_weak *w, int nw, const double *strong, const double *expo, int nnodes, double *k);

#endif /* SERVER_FLEET_EVIDENCE_H */
