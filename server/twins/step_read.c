/* step_read.c - what the per-step view of a twin group reads (server/twins/step_read.h). */
#include "server/twins/step_read.h"

#include <inttypes.h>
#include <stdio.h>

#include "server/store/db.h"

void step_read_register(void)
{
    db_register("steps_progress",
                "SELECT p.run_key, p.rank, p.max_step, e.run_key IS NOT NULL OR r.status <> 'running' "
                "FROM rank_progress p JOIN runs r USING (run_key) LEFT JOIN rank_ends e "
                "ON e.run_key = p.run_key AND e.rank = p.rank "
                "WHERE p.run_key = ANY($1::bigint[]) AND p.rank BETWEEN $2::int AND $3::int");
    db_register("steps_more_ranks",
                "SELECT 1 FROM rank_progress WHERE run_key = ANY($1::bigint[]) AND rank > $2::int LIMIT 1");
    /* No ORDER BY: the rows are sorted in C, which spares PostgreSQL an on-disk sort of a
     * 500-step x 64-rank window (see bench/api). The LIMIT is the bound whatever is stored. */
    db_register("steps_digests", "SELECT run_key, rank, step, n, digest FROM step_digests "
                                 "WHERE run_key = ANY($1::bigint[]) AND blk BETWEEN lockstep_step_block($2) "
                                 "AND lockstep_step_block($3) AND step BETWEEN $2 AND $3 "
                                 "AND rank BETWEEN $4::int AND $5::int LIMIT $6");
}

PGresult *step_read_progress(const char *keys, const char *rank_from, const char *rank_to, char *err, size_t cap)
{
    const char *p[] = {keys, rank_from, rank_to};
    return db_exec("steps_progress", 3, p, err, cap);
}

PGresult *step_read_more_ranks(const char *keys, const char *rank_to, char *err, size_t cap)
{
    const char *p[] = {keys, rank_to};
    return db_exec("steps_more_ranks", 2, p, err, cap);
}

PGresult *step_read_digests(const char *keys, int64_t from, int64_t to, const char *rank_from, const char *rank_to,
                            int limit, char *err, size_t cap)
{
    char f[32], t[32], lim[32];
    snprintf(f, sizeof(f), "%" PRId64, from);
    snprintf(t, sizeof(t), "%" PRId64, to);
    snprintf(lim, sizeof(lim), "%d", limit);
    const char *p[] = {keys, f, t, rank_from, rank_to, lim};
    return db_exec("steps_digests", 6, p, err, cap);
}
