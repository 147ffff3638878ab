/* glance.c - each run's outcome in its twin group, from the verdict's facts (server/compare/glance.h). */
#include "server/compare/glance.h"

#include <string.h>

#include "server/compare/outcome.h"

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
