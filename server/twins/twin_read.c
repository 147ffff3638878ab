/* twin_read.c - what the twin API reads of twin groups beside their findings (server/twins/twin_read.h). */
#include "server/twins/twin_read.h"

#include <stdio.h>

#include "server/core/limits.h"
#include "server/store/db.h"

/* The classification's columns of group_evidence (TWIN_CLASS_NCOLS of them). */
#define TWIN_CLASS_COLS "class, reason_code, reason, " DB_TS("evaluated_at") ", implicated"

/* Groups named by the JSON array text $1. */
#define IN_NAMES "IN (SELECT jsonb_array_elements_text($1::jsonb))"

/* register_list - the statements of the list (GET /api/v1/twins). */
static void register_list(void)
{
    /* The list: groups newest first (by their newest run), filtered by a run's user, a node one of their runs
     * ran on (its hostlist or a rank's manifest, lockstep_run_on_node), and their newest run's start; for a job's
     * token ($6, attested: $7; group_reader), only the groups it may read (lockstep_group_visible). */
    db_register("twins_list", "SELECT twin_group, count(*) OVER () FROM runs WHERE twin_group IS NOT NULL "
                              "AND twin_group <> '' AND ($6 = '' OR twin_group IN (SELECT o.twin_group FROM "
                              "twin_groups o WHERE lockstep_group_visible(o.twin_group, $6, $7::boolean))) "
                              "GROUP BY twin_group HAVING ($1 = '' OR bool_or(user_name = $1)) "
                              "AND ($2 = '' OR bool_or(lockstep_run_on_node(run_key, nodes, $2))) "
                              "AND max(created_at) >= coalesce(nullif($3, '')::timestamptz, '-infinity') "
                              "ORDER BY max(run_key) DESC, twin_group LIMIT $4 OFFSET $5");
    db_register("twins_runs",
                "SELECT twin_group, run_id, job_id, step_id, user_name, nodes, status, " DB_TS("created_at") ", " DB_TS(
                    "ended_at") " FROM runs WHERE twin_group " IN_NAMES " ORDER BY twin_group, run_key");
    db_register("twins_owners",
                "SELECT twin_group, name, owner, owner_attested FROM twin_groups WHERE twin_group " IN_NAMES);
    db_register("twins_classes",
                "SELECT " TWIN_CLASS_COLS ", twin_group FROM group_evidence WHERE twin_group " IN_NAMES);
    db_register("twins_replays", "SELECT DISTINCT ON (twin_group) twin_group, id, state, verdict, node FROM narrows "
                                 "WHERE twin_group " IN_NAMES " ORDER BY twin_group, id DESC");
}

void twin_read_register(void)
{
    register_list();
    db_register("grp_classification",
                "SELECT " TWIN_CLASS_COLS ", coalesce(evidence_narrow::text, ''), evidence_reason "
                "FROM group_evidence WHERE twin_group = $1");
    /* The runs set aside from a group when its owner claimed it, and the other groups of its name. */
    db_register("grp_set_aside_runs", "SELECT run_id, job_id, user_name, attested_user, set_aside_reason, " DB_TS(
                                          "set_aside_at") " FROM runs WHERE set_aside_from = $1 ORDER BY run_key "
                                                          "LIMIT " GROUP_MAX_RUNS_TEXT);
    db_register("grp_namesakes", "SELECT o.twin_group FROM twin_groups o JOIN twin_groups g ON g.twin_group = $1 "
                                 "AND o.name = g.name AND o.twin_group <> g.twin_group ORDER BY o.twin_group LIMIT 16");
    db_register("grp_restores",
                "SELECT r.run_id, c.rank, c.step, t.run_id, c.reference, c.status, c.entry, c.occ, c.diff, c.compared, "
                "c.unverified, c.detail::text FROM restore_checks c JOIN runs r ON r.run_key = c.run_key "
                "JOIN runs t ON t.run_key = c.ref_run_key WHERE c.twin_group = $1 ORDER BY c.step, c.rank, r.run_key, "
                "t.run_key");
    db_register("grp_awaiting",
                "SELECT r.run_id, q.rank, q.step, " DB_TS("q.requested_at") ", " DB_TS("q.committed_at") ", " DB_MS(
                    "q.committed_at", "q.requested_at") " "
                                                        "FROM record_requests q JOIN runs r USING (run_key) "
                                                        "WHERE r.twin_group = $1 AND NOT q.answered "
                                                        "ORDER BY q.step, q.rank, q.run_key LIMIT 100");
    db_register("grp_removed", "SELECT r.run_id, q.rank, q.step FROM record_requests q JOIN runs r USING (run_key) "
                               "WHERE r.twin_group = $1 AND q.removed ORDER BY q.step, q.rank, q.run_key LIMIT 100");
}

PGresult *twin_read_list(const twin_list_filter *f, long long from, long long count, char *err, size_t cap)
{
    char lim[32], off[32];
    snprintf(lim, sizeof(lim), "%lld", count);
    snprintf(off, sizeof(off), "%lld", from);
    const char *p[] = {f->user, f->node, f->since, lim, off, f->viewer, f->attested ? "true" : "false"};
    return db_exec("twins_list", 7, p, err, cap);
}

/* one_param - statement `stmt` with its one parameter `what`. */
static PGresult *one_param(const char *stmt, const char *what, char *err, size_t cap)
{
    const char *p[] = {what};
    return db_exec(stmt, 1, p, err, cap);
}

PGresult *twin_read_runs(const char *names_json, char *err, size_t cap)
{
    return one_param("twins_runs", names_json, err, cap);
}

PGresult *twin_read_owners(const char *names_json, char *err, size_t cap)
{
    return one_param("twins_owners", names_json, err, cap);
}

PGresult *twin_read_classes(const char *names_json, char *err, size_t cap)
{
    return one_param("twins_classes", names_json, err, cap);
}

PGresult *twin_read_replays(const char *names_json, char *err, size_t cap)
{
    return one_param("twins_replays", names_json, err, cap);
}

PGresult *twin_read_classification(const char *key, char *err, size_t cap)
{
    return one_param("grp_classification", key, err, cap);
}

PGresult *twin_read_restores(const char *key, char *err, size_t cap)
{
    return one_param("grp_restores", key, err, cap);
}

PGresult *twin_read_awaiting(const char *key, char *err, size_t cap)
{
    return one_param("grp_awaiting", key, err, cap);
}

PGresult *twin_read_removed(const char *key, char *err, size_t cap)
{
    return one_param("grp_removed", key, err, cap);
}

PGresult *twin_read_set_aside(const char *key, char *err, size_t cap)
{
    return one_param("grp_set_aside_runs", key, err, cap);
}

PGresult *twin_read_namesakes(const char *key, char *err, size_t cap)
{
    return one_param("grp_namesakes", key, err, cap);
}
