/* timeline.h - the fleet's days as the front page's chart strip reads them: the nodes suspect or drained at each
 * day's end, and the twin groups whose first divergence was detected that day. */
#ifndef SERVER_FLEET_TIMELINE_H
#define SERVER_FLEET_TIMELINE_H

#include <stddef.h>
#include <libpq-fe.h>

/* timeline_register - register the prepared statements of this module. */
void timeline_register(void);

/* timeline_node_states - one row per day of the last `ndays` (today included, UTC), oldest first: the day
 * (YYYY-MM-DD), how many nodes were suspect and how many drained at its end (today: now), from their history.
 * NULL with the database's message in `err`. Free with PQclear. */
PGresult *timeline_node_states(long long ndays, char *err, size_t cap);

/* timeline_divergences - the twin groups whose first divergence was detected in the last `ndays`, oldest first,
 * at most `limit`: rows of group, day (YYYY-MM-DD, UTC) and its classification now ("" before it is evaluated).
 * NULL with the database's message in `err`. Free with PQclear. */
PGresult *timeline_divergences(long long ndays, int limit, char *err, size_t cap);

#endif /* SERVER_FLEET_TIMELINE_H */
