/* set_aside.h - what the fleet takes back when runs are set aside from a twin group (its owner claimed it:
 * server/store/groups.h). */
#ifndef SERVER_FLEET_SET_ASIDE_H
#define SERVER_FLEET_SET_ASIDE_H

#include <stddef.h>

/* fleet_set_aside - inside the claim's open transaction, on this thread's connection: wait for any evaluation under
 * way (the evaluator's lock, held to the end of the transaction), then take back everything the fleet concluded
 * from group `group` while the runs now set aside were in it: its exposures and involvements (each involvement gets
 * a "withdrawn" history entry saying `why`), its classification (group_evidence: the group is evaluated afresh), and
 * its open alerts (resolved as "set-aside"). The group is evaluated again once the claim committed
 * (fleet_notify) and the fleet rescored (fleet_kick). Returns 0, or -1 with the database's message in `err`. */
int fleet_set_aside(const char *group, const char *why, char *err, size_t cap);

/* set_aside_register - prepare the statements this module runs (db_register). */
void set_aside_register(void);

#endif /* SERVER_FLEET_SET_ASIDE_H */
