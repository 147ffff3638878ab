/* alert_read.c - the alerts as the API shows them, and acknowledging one (server/alerts/alert_read.h). */
#include "server/alerts/alert_read.h"

#include <stdio.h>

#include "server/alerts/alerts.h"
#include "server/store/db.h"
#include "server/store/sql.h"

#define ALERT_COLS                                                                                                     \
    "a.id, a.kind, a.twin_group, a.node, a.severity, a.summary, a.body, a.url, a.details::text, " DB_TS(               \
        "a.created_at") ", " DB_TS("a.acked_at") ", a.acked_by, (SELECT json_agg(json_build_object('sink', d.sink, "   \
                                                 "'phase', d.phase, "                                                  \
                                                 "'state', d.state, 'attempts', d.attempts, 'last_error', "            \
                                                 "d.last_error, "                                                      \
                                                 "'delivered_at', " DB_TS(                                             \
                                                     "d.delivered_at") ") ORDER BY d.sink, d.phase) FROM "             \
                                                                       "alert_deliveries d WHERE d.alert_id = "        \
                                                                       "a.id)::text, " DB_TS(                          \
                                                                           "a.resolved_at") ", "                       \
                                                                                            "a.resolved_"              \
                                                                                            "reason, "                 \
                                                                                            "a.resolved_"              \
                                                                                            "by, "                     \
                                                                                            "a."                       \
                                                                                            "superseded_"              \
                                                                                            "by, "                     \
                                                                                            "a.labels::"               \
                                                                                            "text, "                   \
                                                                                            "a."                       \
                                                                                            "annotations:"             \
                                                                                            ":text"

PGresult *alert_list_read(const char *kind, const char *state, long long limit, long long offset, char *err, size_t cap)
{
    char lim[24], off[32];
    snprintf(lim, sizeof(lim), "%lld", limit);
    snprintf(off, sizeof(off), "%lld", offset);
    const char *p[] = {kind, lim, off, state};
    return db_exec_once("aread_page", 4, p, err, cap);
}

PGresult *alert_read(const char *id, char *err, size_t cap)
{
    const char *p[] = {id};
    return db_exec_once("aread_one", 1, p, err, cap);
}

/* ack_txn - acknowledge alert p[0] (by p[1]) and resolve it, in one transaction. *found: whether it exists. Returns
 * 0, or -1 rolled back with the reason in `err` (sql_conflicted: may be run again). */
static int ack_txn(const char *const *p, long long id, int *found, char *err, size_t cap)
{
    *found = 0;
    if (sql_begin(err, cap) < 0)
        return -1;
    PGresult *r = db_exec_once("aread_ack", 2, p, err, cap);
    if (!r) {
        sql_rollback();
        return -1;
    }
    *found = PQntuples(r) > 0;
    char by[256] = "";
    if (*found)
        snprintf(by, sizeof(by), "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    if (!*found) {
        sql_rollback();
        return 0;
    }
    if (alert_resolve(id, "acknowledged", by, 0, err, cap) < 0 || sql_commit(err, cap) < 0) {
        sql_rollback();
        return -1;
    }
    return 0;
}

int alert_acknowledge(const char *id, long long n, const char *by, int *found, char *err, size_t cap)
{
    const char *p[] = {id, by};
    int rc, attempt = 0;
    while ((rc = ack_txn(p, n, found, err, cap)) < 0 && sql_retry(attempt++))
        ;
    return rc;
}

void alert_read_register(void)
{
    db_register("aread_page", "SELECT " ALERT_COLS ", count(*) OVER () FROM alerts a WHERE ($1 = '' OR a.kind = $1) "
                              "AND ($4 = '' OR $4 = CASE WHEN a.acked_at IS NOT NULL THEN 'acknowledged' "
                              "WHEN a.resolved_at IS NOT NULL THEN 'resolved' ELSE 'open' END) "
                              "ORDER BY a.id DESC LIMIT $2::int OFFSET $3::int");
    db_register("aread_one", "SELECT " ALERT_COLS " FROM alerts a WHERE a.id = $1::bigint");
    db_register("aread_ack",
                "UPDATE alerts SET acked_at = coalesce(acked_at, now()), acked_by = coalesce(acked_by, $2) "
                "WHERE id = $1::bigint RETURNING id, acked_by");
}
