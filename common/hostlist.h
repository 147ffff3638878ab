/* hostlist.h - Slurm node lists ("n[1-4,7],gpu[01-02],login"): the node at a position, as slurmstepd numbers a step's nodes.
 *
 * The SPANK plugin names the node it runs on from the step's node list and slurmstepd's own index of the
 * node in it (S_JOB_NODEID), to attest which node ran which ranks. Pure, no allocation (the plugin runs in
 * slurmstepd). One bracket group per name ("rack2-n[01-16]" and "n[1-4]-ib" work; "r[1-2]n[1-4]" does not:
 * the lookup says so and the plugin attests no node name then). Tested in tests/unit/test_hostlist.c.
 */
#ifndef COMMON_HOSTLIST_H
#define COMMON_HOSTLIST_H

#include <stddef.h>

/* hostlist_nth - the `index`-th node name (from 0) of node list `list` into
 * `out` (cap bytes). Returns 0, or -1 when the list is shorter, malformed, has
 * two bracket groups in one name, or the name does not fit. */
int hostlist_nth(const char *list, size_t index, char *out, size_t cap);

/* hostlist_count - how many nodes `list` names, or -1 when it is malformed. */
long hostlist_count(const char *list);

#endif /* COMMON_HOSTLIST_H */
