/* attest.c - what slurmstepd attested of a job step, stored (server/store/attest.h). */
#include "server/store/attest.h"

#include "server/store/db.h"

void store_attest_register(void)
{
    /* One node's word on one step; a later word from the same node replaces it. The job's runs get the user. */
    db_register(
        "attest_put",
        "WITH a AS (INSERT INTO attestations (job_id, step_id, node, node_index, ranks, user_name, nodes, gpus, "
        "attested_by) VALUES ($1, $2, $3, $4::int, $5::int[], $6, $7, $8, $9) ON CONFLICT (job_id, step_id, "
        "node) DO UPDATE SET node_index = excluded.node_index, ranks = excluded.ranks, user_name = "
        "excluded.user_name, nodes = excluded.nodes, gpus = excluded.gpus, attested_by = excluded.attested_by, "
        "attested_at = now() RETURNING 1) UPDATE runs SET attested_user = $6 WHERE job_id = $1 "
        "AND attested_user IS NULL");
    db_register("attest_groups", "SELECT DISTINCT twin_group FROM runs WHERE job_id = $1 AND step_id = $2 "
                                 "AND twin_group IS NOT NULL LIMIT 64");
}

int store_attest_put(const store_attestation *a, char *err, size_t cap)
{
    const char *p[] = {a->job, a->step, a->node, a->node_index, a->ranks, a->user, a->nodes, a->gpus, a->by};
    PGresult *r = db_exec("attest_put", 9, p, err, cap);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

PGresult *store_attested_groups(const char *job, const char *step, char *err, size_t cap)
{
    const char *p[] = {job, step};
    return db_exec("attest_groups", 2, p, err, cap);
}
