/* node_read.c - the hardware suspects as the nodes endpoints read them, and an admin's action on a node
 * (server/fleet/node_read.h). */
#include "server/fleet/node_read.h"

#include <stdio.h>
#include <string.h>

#include "server/alerts/alerts.h"
#include "server/store/db.h"
#include "server/store/sql.h"

#define NODE_COLS                                                                                                      \
    "name, state, score, involvements, exposures, baseline, " DB_TS("state_since") ", " DB_TS(                         \
        "first_seen") ", " DB_TS("last_seen")

#define EVENT_COLS                                                                                                     \
    "h.id, h.kind, " DB_TS("h.at") ", h.twin_group, r.run_id::text, h.gpu, h.step, h.rank, h.weight, h.score, "        \
                                   "h.state, h.actor, h.detail, h.involvements, h.exposures"

PGresult *node_read_totals(char *err, size_t cap)
{
    return db_exec_once("nodes_totals", 0, NULL, err, cap);
}

PGresult *node_read_page(const char *name, long long limit, long long offset, char *err, size_t cap)
{
    char lim[32], off[32];
    snprintf(lim, sizeof(lim), "%lld", limit);
    snprintf(off, sizeof(off), "%lld", offset);
    const char *p[] = {name, lim, off};
    return db_exec_once("nodes_page", 3, p, err, cap);
}

PGresult *node_read_gpus(const char *names_json, char *err, size_t cap)
{
    const char *p[] = {names_json};
    return db_exec_once("nodes_gpus", 1, p, err, cap);
}

PGresult *node_read_now(const char *name, char *err, size_t cap)
{
    const char *p[] = {name};
    return db_exec_once("nodes_now", 1, p, err, cap);
}

PGresult *node_read_timeline(const char *name, int limit, char *err, size_t cap)
{
    char lim[16];
    snprintf(lim, sizeof(lim), "%d", limit);
    const char *p[] = {name, lim};
    return db_exec_once("nodes_timeline", 2, p, err, cap);
}

PGresult *node_read_known(const char *name, char *err, size_t cap)
{
    const char *p[] = {name};
    return db_exec_once("nodes_known", 1, p, err, cap);
}

PGresult *node_read_history(const char *name, long long before, long long limit, char *err, size_t cap)
{
    char lim[24], bef[32];
    snprintf(lim, sizeof(lim), "%lld", limit);
    snprintf(bef, sizeof(bef), "%lld", before);
    const char *p[] = {name, bef, lim};
    return db_exec_once("nodes_history", 3, p, err, cap);
}

PGresult *node_read_event(const char *id, char *err, size_t cap)
{
    const char *p[] = {id};
    return db_exec_once("nodes_event", 1, p, err, cap);
}

/* node_txn - node_act's one attempt, on node p[0] with state p[1], actor p[2] and detail p[3]. Returns 0, or -1
 * rolled back with the reason in `err` (sql_conflicted: may be run again). */
static int node_txn(const char *const *p, const char *state, int *known, int *resolved, char *id, size_t idcap,
                    char *err, size_t cap)
{
    *known = *resolved = 0;
    if (sql_begin(err, cap) < 0)
        return -1;
    PGresult *r = db_exec_once("nodes_lock", 1, p, err, cap);
    if (!r)
        goto out_rollback;
    *known = PQntuples(r) > 0;
    PQclear(r);
    if (!*known) {
        sql_rollback();
        return 0;
    }
    if (state && db_do("nodes_state_set", 2, p, err, cap) < 0)
        goto out_rollback;
    if (state && !strcmp(state, "repaired") && db_do("nodes_gpus_clear", 1, p, err, cap) < 0)
        goto out_rollback;
    /* A repair ends the alerts that blame the node (its suspect alert, hardware divergences it ran). */
    *resolved = state && !strcmp(state, "repaired") ? alert_resolve_blaming(p[0], err, cap) : 0;
    if (*resolved < 0)
        goto out_rollback;
    r = db_exec_once("nodes_action_add", 4, p, err, cap);
    if (!r)
        goto out_rollback;
    snprintf(id, idcap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return sql_commit(err, cap);
out_rollback:
    sql_rollback();
    return -1;
}

int node_act(const char *name, const char *state, const char *actor, const char *detail, int *known, int *resolved,
             char *id, size_t idcap, char *err, size_t cap)
{
    const char *p[] = {name, state, actor, detail};
    /* Alert deliveries update alerts outside the evaluator's lock: a repair that resolves one while it is being
     * delivered fails on the concurrent update, and is simply run again. */
    int rc, attempt = 0;
    while ((rc = node_txn(p, state, known, resolved, id, idcap, err, cap)) < 0 && sql_retry(attempt++))
        ;
    return rc;
}

void node_read_register(void)
{
    db_register("nodes_totals",
                "SELECT count(*), coalesce(sum(involvements), 0), coalesce(sum(exposures), 0) FROM hw_nodes");
    db_register("nodes_page", "SELECT " NODE_COLS " FROM hw_nodes WHERE $1 = '' OR name = $1 ORDER BY score DESC, name "
                              "LIMIT $2::bigint OFFSET $3::bigint");
    db_register("nodes_gpus", "SELECT uuid, node, name, state, score, involvements, exposures FROM hw_gpus "
                              "WHERE node = ANY(ARRAY(SELECT json_array_elements_text($1::json))) "
                              "ORDER BY node COLLATE \"C\", score DESC, uuid");
    db_register("nodes_now",
                "SELECT " DB_TS("now()") ", score, involvements, exposures, state FROM hw_nodes WHERE name = $1");
    db_register("nodes_timeline",
                "SELECT * FROM (SELECT h.id, h.kind, " DB_TS(
                    "h.at") ", CASE WHEN h.state = 'repaired' AND "
                            "h.kind = 'action' THEN 0 ELSE h.score END, CASE WHEN h.state = 'repaired' AND h.kind = "
                            "'action' THEN 0 ELSE h.involvements END, CASE WHEN h.state = 'repaired' AND h.kind = "
                            "'action' THEN 0 ELSE h.exposures END, h.state FROM hw_history h WHERE h.node = $1 AND "
                            "h.gpu IS NULL AND (h.kind IN ('score', 'state') OR (h.kind = 'action' AND h.state = "
                            "'repaired')) ORDER BY h.id DESC LIMIT $2::int) t ORDER BY id");
    db_register("nodes_known", "SELECT 1 FROM hw_nodes WHERE name = $1");
    db_register("nodes_history", "SELECT " EVENT_COLS " FROM hw_history h LEFT JOIN runs r ON r.run_key = h.run_key "
                                 "WHERE h.node = $1 AND h.id < $2::bigint ORDER BY h.id DESC LIMIT $3::int");
    db_register("nodes_event",
                "SELECT " EVENT_COLS " FROM hw_history h LEFT JOIN runs r ON r.run_key = h.run_key WHERE h.id = $1");
    db_register("nodes_lock", "SELECT state FROM hw_nodes WHERE name = $1 FOR UPDATE");
    db_register("nodes_state_set",
                "UPDATE hw_nodes SET state = $2, state_since = now(), evidence_since = CASE WHEN $2 = "
                "'repaired' THEN now() ELSE evidence_since END, score = CASE WHEN $2 = 'repaired' THEN 0 ELSE "
                "score END, involvements = CASE WHEN $2 = 'repaired' THEN 0 ELSE involvements END "
                "WHERE name = $1");
    db_register("nodes_gpus_clear", "UPDATE hw_gpus SET state = 'ok', score = 0 WHERE node = $1");
    db_register("nodes_action_add",
                "INSERT INTO hw_history (node, kind, state, actor, detail) VALUES ($1, 'action', $2, $3, $4) "
                "RETURNING id");
}
