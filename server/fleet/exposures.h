/* exposures.h - the hardware suspected in twin groups, as the twin reads show it beside each group. */
#ifndef SERVER_FLEET_EXPOSURES_H
#define SERVER_FLEET_EXPOSURES_H

#include <stddef.h>
#include <libpq-fe.h>

/* exposures_register - register the prepared statements of this module. */
void exposures_register(void);

/* exposures_of_groups - the nodes and GPUs with a positive exposure in the twin groups `names_json` (a JSON array
 * of group names): rows of group, node, GPU (NULL when none), the largest weight and the node's state ("ok" when
 * unknown), by group and weight, heaviest first. NULL with the database's message in `err`. Free with PQclear. */
PGresult *exposures_of_groups(const char *names_json, char *err, size_t cap);

#endif /* SERVER_FLEET_EXPOSURES_H */
