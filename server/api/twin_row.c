/* twin_row.c - a group's classification and summary, suspected hardware, odd runs and ULP distances, as both twin reads
 * say them (server/api/twin_row.h). */
#include "server/api/twin_row.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "server/rules/class_summary.h"
#include "server/api/pgjson.h"
#include "server/store/batch.h"
#include "server/fleet/exposures.h"

json_t *twin_row_classification(PGresult *r, int i)
{
    if (i < 0)
        return json_null();
    char summary[CLASS_SUMMARY_MAX];
    class_summary(PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 4), summary, sizeof(summary));
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "class", PQgetvalue(r, i, 0), "code", PQgetvalue(r, i, 1), "reason",
                     PQgetvalue(r, i, 2), "summary", summary, "evaluated_at", PQgetvalue(r, i, 3));
}

int twin_row_suspected(const char *names_json, json_t *items, char *err, size_t cap)
{
    const char *key;
    json_t *it;
    json_object_foreach(items, key, it) json_object_set_new(it, "suspected", json_array());
    PGresult *r = exposures_of_groups(names_json, err, cap);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *list = json_object_get(json_object_get(items, PQgetvalue(r, i, 0)), "suspected");
        if (list && json_array_size(list) < TWIN_SUSPECTED_MAX)
            json_array_append_new(list,
                                  json_pack("{s:s, s:o, s:f, s:s}", "node", PQgetvalue(r, i, 1), "gpu", pg_str(r, i, 2),
                                            "weight", atof(PQgetvalue(r, i, 3)), "node_state", PQgetvalue(r, i, 4)));
    }
    PQclear(r);
    return 0;
}

json_t *twin_row_odd_runs(json_t *runs)
{
    json_t *odd = json_array(), *r;
    size_t i;
    json_array_foreach(runs, i, r)
    {
        const char *o = json_string_value(json_object_get(r, "outcome")) ?: "";
        if (!strcmp(o, "odd-one-out") || !strcmp(o, "outside-majority"))
            json_array_append(odd, json_object_get(r, "run_id"));
    }
    return odd;
}

/* ulp_of - the ULP distance between two scalars given as value_bits hex strings of `dtype` (a name), as JSON:
 * null when it does not apply (no value on one side, a NaN, an unknown dtype). */
static json_t *ulp_of(const char *a, const char *b, const char *dtype)
{
    uint64_t x, y;
    int dt = dtype ? dtype_parse(dtype) : -1;
    if (!a || !b || dt < 0 || dt == LS_BYTES || batch_parse_hex64(a, &x) < 0 || batch_parse_hex64(b, &y) < 0)
        return json_null();
    uint64_t d = dtype_ulp_distance((unsigned)dt, x, y);
    return d == UINT64_MAX ? json_null() : json_integer((json_int_t)d);
}

void twin_row_ulps(json_t *runs)
{
    json_t *ref = NULL, *e;
    size_t i;
    json_array_foreach(runs, i, e) if (!ref && json_is_true(json_object_get(e, "majority")) &&
                                       json_is_true(json_object_get(e, "present"))) ref = e;
    json_array_foreach(runs, i, e) if (!ref && json_is_true(json_object_get(e, "present"))) ref = e;
    const char *rb = ref ? json_string_value(json_object_get(ref, "value_bits")) : NULL;
    json_array_foreach(runs, i, e)
    {
        const char *vb = json_string_value(json_object_get(e, "value_bits"));
        json_object_set_new(e, "ulp",
                            e == ref ? json_null() : ulp_of(rb, vb, json_string_value(json_object_get(e, "dtype"))));
    }
}
