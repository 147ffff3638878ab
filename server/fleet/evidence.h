/* evidence.h - the pure rules of the suspects part: the spread of one record's divergences, blame shares. (What
 * differs between twins' manifests is common/json/mdiff.h's, the one manifest diff.) */
#ifndef SERVER_FLEET_EVIDENCE_H
#define SERVER_FLEET_EVIDENCE_H

#include <stddef.h>
#include <jansson.h>

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
