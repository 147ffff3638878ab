/* glance.c - each run's outcome in its twin group, from its place at the group's earliest divergence
 * (server/twins/glance.h). */
#include "server/twins/glance.h"

#include <stdlib.h>
#include <string.h>

#include "server/rules/outcome.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"

void glance_register(void)
{
    /* The earliest divergence of each group of $1 (a JSON array of keys): the first diverging step, its smallest
     * seq, its lowest rank (common/cause.h's earliest point, as glance_outcomes picks it from findings_load's), with
     * its run entries and the run it names odd. */
    db_register("glance_earliest",
                "SELECT DISTINCT ON (d.twin_group) d.twin_group, d.runs::text, o.run_id FROM divergences d "
                "LEFT JOIN runs o ON o.run_key = d.odd_run_key WHERE d.twin_group IN "
                "(SELECT jsonb_array_elements_text($1::jsonb)) ORDER BY d.twin_group, d.step, d.seq, d.rank");
    /* Which of the runs $1 (a JSON array of run ids) failed: its status, or a rank's non-zero exit (as findings_load
     * counts a failed run). */
    db_register(
        "glance_failed",
        "SELECT r.run_id::text FROM runs r WHERE r.run_id IN (SELECT jsonb_array_elements_text($1::jsonb)::uuid) "
        "AND (r.status = 'failed' OR EXISTS (SELECT 1 FROM rank_ends e WHERE e.run_key = r.run_key AND "
        "e.exit_code <> 0))");
}

/* outcome_at - the outcome of run `id` (failed or not) of a group of status `status` whose earliest divergence has
 * the run entries e[0..n) and names `odd` (NULL: none). */
static const char *outcome_at(const div_entry *e, int n, const char *odd, const char *status, const char *id,
                              int failed)
{
    const div_entry *mine = div_entry_of(e, n, id);
    run_place p = {.status = status,
                   .failed = failed,
                   .at_first = mine != NULL,
                   .majority = div_has_majority(e, n),
                   .in_majority = mine && mine->majority == DIV_MAJORITY_IN,
                   .named = odd != NULL,
                   .is_named = odd && !strcmp(odd, id)};
    return twin_outcome(&p);
}

/* earliest - the divergence of divs[0..n) with the smallest (step, seq, rank), or NULL. */
static const divergence *earliest(const divergence *divs, int n)
{
    const divergence *best = NULL;
    for (int i = 0; i < n; i++) {
        const divergence *d = &divs[i];
        if (!best || d->step < best->step ||
            (d->step == best->step && (d->seq < best->seq || (d->seq == best->seq && d->rank < best->rank))))
            best = d;
    }
    return best;
}

void glance_outcomes(json_t *runs, const divergence *divs, int n, const char *status)
{
    const divergence *e0 = earliest(divs, n);
    json_t *r;
    const char *odd = e0 ? e0->odd_run_id : NULL;
    size_t i;
    json_array_foreach(runs, i, r)
    {
        const char *id = json_string_value(json_object_get(r, "run_id")) ?: "";
        int failed = !strcmp(json_string_value(json_object_get(r, "status")) ?: "", "failed") ||
                     json_array_size(json_object_get(r, "failed_ranks")) > 0;
        const char *o = outcome_at(e0 ? e0->entries : NULL, e0 ? e0->nentries : 0, odd, status, id, failed);
        json_object_set_new(r, "outcome", json_string(o));
        json_object_set_new(r, "outcome_why", json_string(twin_outcome_why(o)));
    }
}

int glance_run_outcomes(const char *const *run_ids, const char *const *groups, const char *const *statuses, int n,
                        const char **out, char *err, size_t cap)
{
    json_t *div = json_array(), *inc = json_array();
    for (int i = 0; i < n; i++) {
        out[i] = NULL;
        if (!groups[i])
            continue;
        if (!strcmp(statuses[i], "diverged"))
            json_array_append_new(div, json_string(groups[i])); /* repeated names are harmless */
        else if (!strcmp(statuses[i], "incomplete"))
            json_array_append_new(inc, json_string(run_ids[i]));
    }
    char *dj = json_dumps(div, JSON_COMPACT), *ij = json_dumps(inc, JSON_COMPACT);
    const char *pd[] = {dj}, *pi[] = {ij};
    PGresult *e = json_array_size(div) ? db_exec("glance_earliest", 1, pd, err, cap) : NULL;
    PGresult *f =
        (e || !json_array_size(div)) && json_array_size(inc) ? db_exec("glance_failed", 1, pi, err, cap) : NULL;
    int rc = (json_array_size(div) && !e) || (json_array_size(inc) && !f) ? -1 : 0;
    int ne = e ? PQntuples(e) : 0;
    div_entry **entries = xcalloc((size_t)ne + 1, sizeof(*entries)); /* each group's, read once */
    int *nentries = xcalloc((size_t)ne + 1, sizeof(int));
    for (int k = 0; k < ne; k++) {
        json_t *runs = json_loads(PQgetvalue(e, k, 1), 0, NULL);
        div_entries_read(runs, &entries[k], &nentries[k]);
        json_decref(runs);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        if (!groups[i])
            continue;
        int failed = 0, row = -1;
        for (int k = 0; f && k < PQntuples(f) && !failed; k++)
            failed = !strcmp(PQgetvalue(f, k, 0), run_ids[i]);
        for (int k = 0; k < ne && row < 0; k++)
            if (!strcmp(PQgetvalue(e, k, 0), groups[i]))
                row = k;
        out[i] = outcome_at(row >= 0 ? entries[row] : NULL, row >= 0 ? nentries[row] : 0,
                            row >= 0 && !PQgetisnull(e, row, 2) ? PQgetvalue(e, row, 2) : NULL, statuses[i], run_ids[i],
                            failed);
    }
    for (int k = 0; k < ne; k++)
        div_entries_free(entries[k], nentries[k]);
    free(entries);
    free(nentries);
    PQclear(e);
    PQclear(f);
    free(dj);
    free(ij);
    json_decref(div);
    json_decref(inc);
    return rc;
}
