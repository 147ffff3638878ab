/* narrow_int.h - what narrow.c and narrow_eval.c share; not used outside server/fleet/narrow*.c. */
#ifndef SERVER_FLEET_NARROW_INT_H
#define SERVER_FLEET_NARROW_INT_H

#include <stddef.h>

/* narrow_probe - the nodes (and their GPUs, "" when unknown) that ran ranks `origin[0..norigin)` of run
 * `run_key` (every rank when norigin is 0), from its manifests, as ','-separated lists in `probe` and `gpus`
 * (one entry per node, in the same order); without manifests, the run's node when `nodes` names one. Inside
 * the caller's transaction. Returns 0, or -1 with the database's message. */
int narrow_probe(const char *run_key, const int *origin, int norigin, const char *nodes, char *probe, size_t pcap,
                 char *gpus, size_t gcap, char *err, size_t ecap);

#endif /* SERVER_FLEET_NARROW_INT_H */
