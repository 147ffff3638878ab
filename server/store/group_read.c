/* group_read.c - what every twin group read asks of the database first (server/store/group_read.h). */
#include "server/store/group_read.h"

#include "server/core/limits.h"
#include "server/store/db.h"

void group_read_register(void)
{
    /* The first GROUP_MAX_RUNS runs (a group holds no more since registration refuses the next one; older
     * data may), and how many there are. */
    db_register(
        "grp_runs",
        "SELECT run_key, run_id, job_id, user_name, nodes, status, start_step, ranks, mode, " DB_TS(
            "created_at") ", " DB_TS("ended_at") ", count(*) OVER (), attested_user FROM runs "
                                                 "WHERE twin_group = $1 ORDER BY run_key LIMIT " GROUP_MAX_RUNS_TEXT);
    /* Runs by key, as an ad hoc group in the order asked (GET /api/v1/compare/records); the same columns. */
    db_register("grp_runs_keys",
                "SELECT run_key, run_id, job_id, user_name, nodes, status, start_step, ranks, mode, " DB_TS(
                    "created_at") ", " DB_TS("ended_at") ", count(*) OVER (), attested_user FROM runs "
                                                         "WHERE run_key = ANY($1::bigint[]) ORDER BY "
                                                         "array_position($1::bigint[], run_key) "
                                                         "LIMIT " GROUP_MAX_RUNS_TEXT);
    /* Whom a job's token reads as: the user slurmstepd attested for the job, else one a run of the job was
     * attested as (the admin registered it so), else, unattested, what its first run reported. */
    db_register("grp_reader", "SELECT coalesce((SELECT user_name FROM attestations WHERE job_id = $1 "
                              "ORDER BY attested_at LIMIT 1), (SELECT attested_user FROM runs WHERE job_id = $1 "
                              "AND attested_user IS NOT NULL ORDER BY run_key LIMIT 1)), "
                              "(SELECT user_name FROM runs WHERE job_id = $1 ORDER BY run_key LIMIT 1)");
    /* How many of the runs $1 (uuid[]) viewer $2 (attested: $3) may not read: a run of a twin group through the
     * group (lockstep_group_visible), a run outside any group through its user: attested, else (for an attested
     * viewer, or a run no one attested) reported. */
    db_register("grp_runs_hidden", "SELECT count(*) FROM runs r WHERE r.run_id = ANY($1::uuid[]) AND NOT CASE "
                                   "WHEN coalesce(r.twin_group, '') <> '' THEN lockstep_group_visible(r.twin_group, "
                                   "$2, $3) WHEN $3 THEN coalesce(r.attested_user, r.user_name) = $2 "
                                   "ELSE r.attested_user IS NULL AND r.user_name = $2 END");
    db_register("grp_visible", "SELECT lockstep_group_visible($1, $2, $3)");
    db_register("grp_resolve", "SELECT key, owner, owner_attested FROM lockstep_group_resolve($1, $2, $3)");
}

PGresult *group_read_runs(const char *key, char *err, size_t cap)
{
    const char *p[] = {key};
    return db_exec("grp_runs", 1, p, err, cap);
}

PGresult *group_read_runs_keys(const char *keys, char *err, size_t cap)
{
    const char *p[] = {keys};
    return db_exec("grp_runs_keys", 1, p, err, cap);
}

PGresult *group_read_job_user(const char *job, char *err, size_t cap)
{
    const char *p[] = {job};
    return db_exec("grp_reader", 1, p, err, cap);
}

/* by_viewer - statement `stmt` with `what`, the user and whether it is attested. */
static PGresult *by_viewer(const char *stmt, const char *what, const char *user, int attested, char *err, size_t cap)
{
    const char *p[] = {what, user, attested ? "true" : "false"};
    return db_exec(stmt, 3, p, err, cap);
}

PGresult *group_read_resolve(const char *name, const char *user, int attested, char *err, size_t cap)
{
    return by_viewer("grp_resolve", name, user, attested, err, cap);
}

PGresult *group_read_visible(const char *key, const char *user, int attested, char *err, size_t cap)
{
    return by_viewer("grp_visible", key, user, attested, err, cap);
}

PGresult *group_read_hidden_runs(const char *run_ids, const char *user, int attested, char *err, size_t cap)
{
    return by_viewer("grp_runs_hidden", run_ids, user, attested, err, cap);
}
