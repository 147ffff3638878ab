/* run_read.c - the runs as the read API lists and shows them (server/store/run_read.h). */
#include "server/store/run_read.h"

#include <stdio.h>

#include "server/core/limits.h"
#include "server/store/db.h"

/* Text columns are cut to their registration limits (server/core/limits.h), so that a row is bounded whatever
 * was stored before the limits existed. */
#define RUN_COLS                                                                                                       \
    "run_id, left(job_id, 128), left(step_id, 64), left(coalesce(twin_group, ''), 255), ranks, start_step, "           \
    "left(user_name, 64), left(nodes, 4096), left(command, 4096), left(mode, 16), status, " DB_TS(                     \
        "created_at") ", " DB_TS("ended_at") ", left(partition, 128), left(resume_template, 4096), "                   \
                                             "array_to_json(argv)::text"

void run_read_register(void)
{
#define RUNS_WHERE                                                                                                     \
    "WHERE ($1 = '' OR user_name = $1) AND ($2 = '' OR job_id = $2) AND ($3 = '' OR twin_group = "                     \
    "(SELECT lockstep_group_key($3))) "                                                                                \
    "AND ($4 = '' OR status = $4) AND ($7 = '' OR step_id = $7)"
    db_register("runs_list", "SELECT " RUN_COLS " FROM runs " RUNS_WHERE " ORDER BY run_key DESC LIMIT $5 OFFSET $6");
    /* $5 and $6 unused but typed alike, so that both statements take the same parameters. */
    db_register("runs_count",
                "SELECT count(*) FROM (SELECT 1 FROM runs " RUNS_WHERE
                " AND $5::text IS NOT NULL AND $6::text IS NOT NULL LIMIT " LIST_TOTAL_MAX_TEXT " + 1) x");
    db_register("run_one", "SELECT " RUN_COLS ", run_key, set_aside_from, set_aside_reason, " DB_TS(
                               "set_aside_at") " FROM runs WHERE run_id = $1::uuid");
    db_register("run_manifests", "SELECT rank, manifest::text FROM manifests WHERE run_key = $1 AND rank >= $2::int "
                                 "ORDER BY rank LIMIT $3");
    db_register("run_ranks",
                "SELECT coalesce(p.rank, e.rank), p.min_step, p.max_step, p.max_seq, p.n_records, e.exit_code "
                "FROM (SELECT * FROM rank_progress WHERE run_key = $1 AND rank >= $2::int ORDER BY rank LIMIT $3) p "
                "FULL JOIN (SELECT * FROM rank_ends WHERE run_key = $1 AND rank >= $2::int ORDER BY rank LIMIT $3) e "
                "ON p.rank = e.rank ORDER BY 1 LIMIT $3");
    db_register("run_attested", "SELECT a.node, a.ranks::text, a.user_name, a.nodes, a.attested_by FROM attestations a "
                                "JOIN runs r ON a.job_id = r.job_id AND a.step_id = r.step_id WHERE r.run_key = $1 "
                                "ORDER BY a.node_index NULLS LAST, a.node LIMIT 4097");
}

/* list_exec - statement `stmt` (runs_list or runs_count) over filter `f`, with its limit and offset texts. */
static PGresult *list_exec(const char *stmt, const run_filter *f, const char *lim, const char *off, char *err,
                           size_t cap)
{
    const char *p[] = {f->user, f->job, f->group, f->status, lim, off, f->step};
    return db_exec(stmt, 7, p, err, cap);
}

PGresult *run_read_list(const run_filter *f, long long limit, long long offset, char *err, size_t cap)
{
    char lim[32], off[32];
    snprintf(lim, sizeof(lim), "%lld", limit);
    snprintf(off, sizeof(off), "%lld", offset);
    return list_exec("runs_list", f, lim, off, err, cap);
}

PGresult *run_read_count(const run_filter *f, char *err, size_t cap)
{
    return list_exec("runs_count", f, "0", "0", err, cap);
}

PGresult *run_read_one(const char *run_id, char *err, size_t cap)
{
    const char *p[] = {run_id};
    return db_exec("run_one", 1, p, err, cap);
}

/* rank_page - statement `stmt` for run `key` from rank `rank_from`, at most `limit` rows. */
static PGresult *rank_page(const char *stmt, const char *key, long long rank_from, int limit, char *err, size_t cap)
{
    char rf[24], lm[16];
    snprintf(rf, sizeof(rf), "%lld", rank_from);
    snprintf(lm, sizeof(lm), "%d", limit);
    const char *p[] = {key, rf, lm};
    return db_exec(stmt, 3, p, err, cap);
}

PGresult *run_read_manifests(const char *key, long long rank_from, int limit, char *err, size_t cap)
{
    return rank_page("run_manifests", key, rank_from, limit, err, cap);
}

PGresult *run_read_ranks(const char *key, long long rank_from, int limit, char *err, size_t cap)
{
    return rank_page("run_ranks", key, rank_from, limit, err, cap);
}

PGresult *run_read_attested(const char *key, char *err, size_t cap)
{
    const char *p[] = {key};
    return db_exec("run_attested", 1, p, err, cap);
}
