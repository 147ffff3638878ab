/* hostlist.h - Slurm node lists ("n[1-4,7],gpu[01-02],login", "rack[1-2]n[1-4]"): the node at a position, as
 * slurmstepd numbers a step's nodes, and a list expanded to node names.
 *
 * The SPANK plugin names the node it runs on from the step's node list and slurmstepd's own index of the
 * node in it (S_JOB_NODEID), to attest which node ran which ranks (hostlist_nth: one bracket group per name;
 * "r[1-2]n[1-4]" is refused there and the plugin attests no node name then). lockstepd and the CLI expand
 * lists of nodes to probe or exclude (hostlist_expand: any number of bracket groups, duplicates dropped).
 * Ranges keep their zero padding ("n[01-03]" is n01 n02 n03), as Slurm writes them. Pure, no allocation.
 * Tested in tests/unit/test_hostlist.c and tests/unit/test_replay.c.
 */
#ifndef COMMON_HOSTLIST_H
#define COMMON_HOSTLIST_H

#include <stddef.h>

#define HOSTLIST_NAME_MAX 64 /* longest node name, with its NUL */

/* hostlist_nth - the `index`-th node name (from 0) of node list `list` into
 * `out` (cap bytes). Returns 0, or -1 when the list is shorter, malformed, has
 * two bracket groups in one name, or the name does not fit. */
int hostlist_nth(const char *list, size_t index, char *out, size_t cap);

/* hostlist_count - how many nodes `list` names, or -1 when it is malformed. */
long hostlist_count(const char *list);

/* hostlist_expand - the node names of `list` into names[0..max), in the order the list gives them, without
 * duplicates. Returns how many, or -1 when the list is malformed (an unbalanced bracket, a bad range, a name
 * too long) or names more than `max` nodes. "" gives 0. */
int hostlist_expand(const char *list, char (*names)[HOSTLIST_NAME_MAX], int max);

/* hostlist_join - names[0..n) joined by commas into `out` (Slurm takes that form). Returns 0, or -1 when it
 * does not fit (out is then ""). */
int hostlist_join(char (*names)[HOSTLIST_NAME_MAX], int n, char *out, size_t cap);

#endif /* COMMON_HOSTLIST_H */
