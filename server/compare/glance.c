/* glance.c - a twin group's kind and each run's outcome, read from PostgreSQL and judged by the pure rules (server/compare/glance.h). */
#include "server/compare/glance.h"

#include <stdlib.h>
#include <string.h>

#include "server/compare/outcome.h"
#include "server/store/db.h"

void glance_register(void)
{
    /* Per group ($1: a JSON array of keys), in the order given: the name its owner registered (the key itself for a
     * group without an owner's row), whether a narrow made it (its replay group), and whether its owner holds a
     * group named NAME.change or NAME.noise (lockstep twin --change / --noise: the baseline of an experiment). */
    db_register("glance_kinds",
                "SELECT k.name, coalesce(g.name, k.name), EXISTS (SELECT 1 FROM narrows n WHERE n.narrow_group = "
                "k.name), g.name IS NOT NULL AND EXISTS (SELECT 1 FROM twin_groups c WHERE c.name = g.name || "
                "'.change' AND c.owner = g.owner), g.name IS NOT NULL AND EXISTS (SELECT 1 FROM twin_groups c WHERE "
                "c.name = g.name || '.noise' AND c.owner = g.owner) FROM jsonb_array_elements_text($1::jsonb) WITH "
                "ORDINALITY AS k(name, i) LEFT JOIN twin_groups g ON g.twin_group = k.name ORDER BY k.i");
}

int glance_kinds(const char *const *names, int n, twin_kind_id *out, char *err, size_t cap)
{
    for (int i = 0; i < n; i++)
        out[i] = KIND_TWINS;
    if (n <= 0)
        return 0;
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(names[i]));
    char *arr = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    const char *p[] = {arr};
    PGresult *r = db_exec("glance_kinds", 1, p, err, cap);
    free(arr);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r) && i < n; i++) {
        kind_facts f = {PQgetvalue(r, i, 1), PQgetvalue(r, i, 2)[0] == 't', PQgetvalue(r, i, 3)[0] == 't',
                        PQgetvalue(r, i, 4)[0] == 't'};
        out[i] = twin_kind(&f);
    }
    PQclear(r);
    return 0;
}

/* entry_of - the entry of run `id` among a divergence's run entries, or NULL. */
static json_t *entry_of(json_t *entries, const char *id)
{
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) if (!strcmp(json_string_value(json_object_get(e, "run_id")) ?: "", id)) return e;
    return NULL;
}

void glance_outcomes(json_t *runs, json_t *first, const char *status)
{
    json_t *entries = json_object_get(first, "runs");
    const char *odd = json_string_value(json_object_get(first, "odd_run_id"));
    int majority = 0;
    size_t i;
    json_t *e, *r;
    json_array_foreach(entries, i, e) majority |= json_object_get(e, "majority") != NULL;
    json_array_foreach(runs, i, r)
    {
        const char *id = json_string_value(json_object_get(r, "run_id")) ?: "";
        json_t *mine = entry_of(entries, id);
        run_place p = {.status = status,
                       .failed = !strcmp(json_string_value(json_object_get(r, "status")) ?: "", "failed") ||
                                 json_array_size(json_object_get(r, "failed_ranks")) > 0,
                       .at_first = mine != NULL,
                       .majority = majority,
                       .in_majority = json_is_true(json_object_get(mine, "majority")),
                       .named = odd != NULL,
                       .is_named = odd && !strcmp(odd, id)};
        json_object_set_new(r, "outcome", json_string(twin_outcome(&p)));
    }
}
