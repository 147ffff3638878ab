/* timeline.c - the fleet's days for the front page's chart strip (server/fleet/timeline.h). */
#include "server/fleet/timeline.h"

#include <stdio.h>

#include "server/store/db.h"

/* The window's first day, 00:00 UTC, as a timestamptz ($1: the number of days, today included). */
#define TL_FROM "((date_trunc('day', now() AT TIME ZONE 'UTC') - ($1::int - 1) * interval '1 day') AT TIME ZONE 'UTC')"

void timeline_register(void)
{
    /* Each day of the window with the nodes whose newest state event before its end (a fleet pass's state change,
     * an admin's drain or repair: hw_history_node_states) says suspect or drained. */
    db_register("tl_suspects",
                "SELECT to_char(d.day, 'YYYY-MM-DD'), count(*) FILTER (WHERE s.state = 'suspect'), "
                "count(*) FILTER (WHERE s.state = 'drained') FROM generate_series(date_trunc('day', now() AT TIME "
                "ZONE 'UTC') - ($1::int - 1) * interval '1 day', date_trunc('day', now() AT TIME ZONE 'UTC'), "
                "interval '1 day') AS d(day) LEFT JOIN LATERAL (SELECT DISTINCT ON (h.node) h.state FROM hw_history "
                "h WHERE h.state IS NOT NULL AND h.gpu IS NULL AND h.at < (d.day + interval '1 day') AT TIME ZONE "
                "'UTC' ORDER BY h.node, h.id DESC) s ON true GROUP BY d.day ORDER BY d.day");
    /* The groups whose first divergence (the earliest of their per-rank divergences) was detected in the window,
     * with the day (UTC) and their classification now ('' before it is evaluated), oldest first. */
    db_register("tl_divergences",
                "WITH g AS (SELECT DISTINCT twin_group FROM divergences WHERE detected_at >= " TL_FROM "), "
                "f AS (SELECT d.twin_group, min(d.detected_at) AS t FROM divergences d JOIN g USING (twin_group) "
                "GROUP BY d.twin_group HAVING min(d.detected_at) >= " TL_FROM ") "
                "SELECT f.twin_group, to_char(f.t AT TIME ZONE 'UTC', 'YYYY-MM-DD'), coalesce(e.class, '') FROM f "
                "LEFT JOIN group_evidence e USING (twin_group) ORDER BY f.t, f.twin_group LIMIT $2::int");
}

PGresult *timeline_node_states(long long ndays, char *err, size_t cap)
{
    char dn[24];
    snprintf(dn, sizeof(dn), "%lld", ndays);
    const char *p[] = {dn};
    return db_exec("tl_suspects", 1, p, err, cap);
}

PGresult *timeline_divergences(long long ndays, int limit, char *err, size_t cap)
{
    char dn[24], lim[16];
    snprintf(dn, sizeof(dn), "%lld", ndays);
    snprintf(lim, sizeof(lim), "%d", limit);
    const char *p[] = {dn, lim};
    return db_exec("tl_divergences", 2, p, err, cap);
}
