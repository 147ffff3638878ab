/* cons_read.c - what a run's consensus check found, as the API shows it. */
#include "server/consensus/cons_read.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/core/xalloc.h"
#include "server/store/db.h"

void cons_read_register(void)
{
    db_register("cons_read", "SELECT coalesce((SELECT checked FROM consensus_runs WHERE run_key = $1), 0), v.step, "
                             "v.name, v.occ, array_to_json(v.comm_ranks)::text, array_to_json(v.odd_ranks)::text, "
                             "v.clear, v.site::text, v.node, v.gpu, v.comm_size, v.odd_rank, "
                             "to_char(v.detected_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
                             "EXISTS (SELECT 1 FROM consensus_comms c WHERE c.run_key = $1) "
                             "FROM (SELECT 1) one LEFT JOIN consensus_divergences v ON v.run_key = $1");
    /* the fleet's runs with a consensus disagreement, newest first */
    db_register("cons_list", "SELECT json_build_object('run_id', r.run_id, 'job_id', r.job_id, 'user', r.user_name, "
                             "'step', v.step, 'name', v.name, 'occurrence', v.occ, 'comm_ranks', v.comm_ranks, "
                             "'comm_size', v.comm_size, 'odd_ranks', v.odd_ranks, 'clear', v.clear, 'node', v.node, "
                             "'gpu', v.gpu, 'detected_at', to_char(v.detected_at AT TIME ZONE 'UTC', "
                             "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))::text FROM consensus_divergences v "
                             "JOIN runs r ON r.run_key = v.run_key ORDER BY v.detected_at DESC, v.run_key DESC "
                             "LIMIT $1");
}

static json_t *text_or_null(PGresult *r, int c)
{
    return PQgetisnull(r, 0, c) ? json_null() : json_string(PQgetvalue(r, 0, c));
}

static json_t *json_col(PGresult *r, int c)
{
    json_t *v = PQgetisnull(r, 0, c) ? NULL : json_loads(PQgetvalue(r, 0, c), JSON_DECODE_ANY, NULL);
    return v ? v : json_null();
}

json_t *cons_read_json(int64_t run_key, char *err, size_t cap)
{
    char key[24];
    snprintf(key, sizeof(key), "%" PRId64, run_key);
    const char *p[] = {key};
    PGresult *r = db_exec("cons_read", 1, p, err, cap);
    if (!r)
        return NULL;
    if (PQntuples(r) != 1) {
        snprintf(err, cap, "the consensus read returned %d rows", PQntuples(r));
        PQclear(r);
        return NULL;
    }
    long long checked = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    int has = !PQgetisnull(r, 0, 1);
    json_t *first = json_null();
    if (has)
        first = json_pack("{s:I, s:o, s:I, s:o, s:I, s:o, s:b, s:o, s:o, s:o, s:o, s:o}", "step",
                          (json_int_t)strtoll(PQgetvalue(r, 0, 1), NULL, 10), "name", text_or_null(r, 2), "occurrence",
                          (json_int_t)strtoll(PQgetvalue(r, 0, 3), NULL, 10), "comm_ranks", json_col(r, 4), "comm_size",
                          (json_int_t)strtoll(PQgetvalue(r, 0, 10), NULL, 10), "odd_ranks", json_col(r, 5), "clear",
                          PQgetvalue(r, 0, 6)[0] == 't', "site", json_col(r, 7), "node", text_or_null(r, 8), "gpu",
                          text_or_null(r, 9), "odd_rank", json_col(r, 11), "detected_at", text_or_null(r, 12));
    json_t *o = json_pack("{s:s, s:I, s:o}", "status",
                          has           ? "disagree"
                          : checked > 0 ? "agree"
                                        : "none",
                          "checked", (json_int_t)checked, "first", first);
    if (!has && checked == 0) /* why nothing was checked: the answer a user needs first */
        json_object_set_new(o, "why",
                            json_string(PQgetvalue(r, 0, 13)[0] == 't'
                                            ? "no window is complete yet: a window is judged once every member of its "
                                              "group has sent its digest"
                                            : "no consensus digest came from this run: its agent recorded no "
                                              "collective whose copies must agree (an MPI program's collectives "
                                              "are recorded only with liblockstep_mpi.so loaded, docs/agent.md)"));
    PQclear(r);
    return o;
}

json_t *cons_read_list(int limit, char *err, size_t cap)
{
    char lim[16];
    snprintf(lim, sizeof(lim), "%d", limit);
    const char *p[] = {lim};
    PGresult *r = db_exec("cons_list", 1, p, err, cap);
    if (!r)
        return NULL;
    json_t *items = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *o = json_loads(PQgetvalue(r, i, 0), 0, NULL);
        if (o)
            json_array_append_new(items, o);
    }
    PQclear(r);
    return json_pack("{s:o}", "items", items);
}
