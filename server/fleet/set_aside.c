/* set_aside.c - what the fleet takes back when runs are set aside from a twin group (server/fleet/set_aside.h). */
#include "server/fleet/set_aside.h"

#include <stdlib.h>

#include "server/alerts/alerts.h"
#include "server/store/db.h"
#include "server/store/sql.h"

int fleet_set_aside(const char *group, const char *why, char *err, size_t cap)
{
    const char *p[] = {group, why};
    if (sql_lock_evaluator(err, cap) < 0)
        return -1;
    /* the weights it set: each involvement that goes says why in the node's (and GPU's) history */
    if (db_do("aside_exposures_drop", 2, p, err, cap) < 0 || db_do("aside_evidence_drop", 1, p, err, cap) < 0)
        return -1;
    PGresult *r = db_exec_once("aside_open_alerts", 1, p, err, cap);
    if (!r)
        return -1;
    int rc = 0;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++)
        rc = alert_resolve(strtoll(PQgetvalue(r, i, 0), NULL, 10), "set-aside", NULL, 0, err, cap) < 0 ? -1 : 0;
    PQclear(r);
    return rc;
}

void set_aside_register(void)
{
    db_register("aside_exposures_drop",
                "WITH w AS (DELETE FROM hw_exposures WHERE twin_group = $1 RETURNING node, gpu, run_key, weight) "
                "INSERT INTO hw_history (node, gpu, kind, twin_group, run_key, weight, detail) "
                "SELECT node, nullif(gpu, ''), 'withdrawn', $1, run_key, 0, $2 FROM w WHERE weight > 0 "
                "ORDER BY node, gpu, run_key");
    db_register("aside_evidence_drop", "DELETE FROM group_evidence WHERE twin_group = $1");
    db_register("aside_open_alerts", "SELECT id FROM alerts WHERE twin_group = $1 AND resolved_at IS NULL ORDER BY id");
}
