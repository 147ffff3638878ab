/* node_read.h - the hardware suspects as the nodes endpoints read them (nodes with their GPUs, a node's history and
 * timeline), and an admin's action on a node. */
#ifndef SERVER_FLEET_NODE_READ_H
#define SERVER_FLEET_NODE_READ_H

#include <stddef.h>
#include <libpq-fe.h>

/* The columns of a node row, in this order: name, state, score, involvements, exposures, baseline (the rest of
 * the fleet's rate), state_since, first_seen, last_seen (ISO 8601, UTC). */
#define NODE_READ_NCOLS 9

/* The columns of a history event row, in this order: id, kind, at (ISO 8601, UTC), twin_group, run_id, gpu, step,
 * rank, weight, score, state, actor, detail, involvements, exposures (each NULL when the event has none). */
#define NODE_EVENT_NCOLS 15

/* node_read_totals - one row: how many nodes the fleet has, the sum of their involvements and of their
 * exposures. NULL with the database's message in `err`. Free with PQclear. */
PGresult *node_read_totals(char *err, size_t cap);

/* node_read_page - the node named `name` (or, for "", every node), highest score first, `limit` from `offset`:
 * rows of the NODE_READ_NCOLS columns. NULL with `err`. */
PGresult *node_read_page(const char *name, long long limit, long long offset, char *err, size_t cap);

/* node_read_gpus - the GPUs of nodes `names_json` (a JSON array text of node names), by node (C collation), then
 * score, highest first: rows of uuid, node, name, state, score, involvements, exposures. NULL with `err`. */
PGresult *node_read_gpus(const char *names_json, char *err, size_t cap);

/* node_read_now - node `name` as it stands now: one row (none when unknown) of the time now (ISO 8601, UTC), its
 * score, involvements, exposures and state. NULL with `err`. */
PGresult *node_read_now(const char *name, char *err, size_t cap);

/* node_read_timeline - node `name`'s newest `limit` score and state events and repairs (where score,
 * involvements and exposures read 0: evidence afresh), oldest first: rows of id, kind, at (ISO 8601, UTC), score,
 * involvements, exposures, state. NULL with `err`. */
PGresult *node_read_timeline(const char *name, int limit, char *err, size_t cap);

/* node_read_known - one row when node `name` has been seen, none when not. NULL with `err`. */
PGresult *node_read_known(const char *name, char *err, size_t cap);

/* node_read_history - node `name`'s events before event id `before`, newest first, at most `limit`: rows of the
 * NODE_EVENT_NCOLS columns. NULL with `err`. */
PGresult *node_read_history(const char *name, long long before, long long limit, char *err, size_t cap);

/* node_read_event - event `id` (decimal text) as one row of the NODE_EVENT_NCOLS columns. NULL with `err`. */
PGresult *node_read_event(const char *id, char *err, size_t cap);

/* node_act - an admin's action on node `name` in one transaction: its new state `state` ("drained", "repaired";
 * NULL: a note), a history event by `actor` saying `detail`; a repair clears the node's score and its GPUs' and
 * resolves the alerts that blame it. Run again while an alert delivery updating the same alert at that moment
 * makes it fail. *known: whether the node exists (nothing done when not); *resolved: alerts resolved; `id`: the
 * event's. Returns 0, or -1 with the reason in `err`. */
int node_act(const char *name, const char *state, const char *actor, const char *detail, int *known, int *resolved,
             char *id, size_t idcap, char *err, size_t cap);

/* node_read_register - prepare the statements this module runs (db_register). */
void node_read_register(void);

#endif /* SERVER_FLEET_NODE_READ_H */
