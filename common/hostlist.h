/* hostlist.h - Slurm node lists ("n[1-3,07],gpu01", "rack[1-2]n[1-4]") expanded to node names, one rule for lockstepd and the CLI.
 *
 * Ranges keep their zero padding ("n[01-03]" is n01 n02 n03), as Slurm writes them. Pure: no allocation, so the
 * agent could use it too.
 */
#ifndef COMMON_HOSTLIST_H
#define COMMON_HOSTLIST_H

#include <stddef.h>

#define HOSTLIST_NAME_MAX 64 /* longest node name, with its NUL */

/* hostlist_expand - the node names of `list` into names[0..max), in the order the list gives them, without
 * duplicates. Returns how many, or -1 when the list is malformed (an unbalanced bracket, a bad range, a name
 * too long) or names more than `max` nodes. "" gives 0. */
int hostlist_expand(const char *list, char (*names)[HOSTLIST_NAME_MAX], int max);

/* hostlist_join - names[0..n) joined by commas into `out` (Slurm takes that form). Returns 0, or -1 when it
 * does not fit (out is then ""). */
int hostlist_join(char (*names)[HOSTLIST_NAME_MAX], int n, char *out, size_t cap);

#endif /* COMMON_HOSTLIST_H */
