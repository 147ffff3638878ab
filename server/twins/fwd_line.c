/* fwd_line.c - forwards to a lease holder as JSON lines (fwd_line.h). */
#include "server/twins/fwd_line.h"

#include <string.h>

json_t *fwd_line_sums(const char *group, int64_t run_key, int rank, const store_step *steps, size_t n, int64_t counted,
                      int flags)
{
    if (n > FWD_STEPS_PER_LINE)
        return NULL;
    json_t *s = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(s, json_pack("[I, I, I, I, i]", (json_int_t)steps[i].step, (json_int_t)steps[i].n,
                                           (json_int_t)(int64_t)steps[i].digest, (json_int_t)(int64_t)steps[i].inputs,
                                           steps[i].inputs_unknown != 0));
    return json_pack("{s:s, s:I, s:i, s:I, s:i, s:o}", "g", group, "k", (json_int_t)run_key, "r", rank, "c",
                     (json_int_t)counted, "f", flags, "s", s);
}

json_t *fwd_line_look(const char *group, int rank)
{
    return json_pack("{s:s, s:i, s:b}", "g", group, "r", rank, "l", 1);
}

int fwd_line_parse(const char *line, cmp_fwd_sums_fn sums, cmp_fwd_look_fn look)
{
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    const char *g = json_string_value(json_object_get(o, "g"));
    json_t *r = json_object_get(o, "r");
    int rc = -1;
    if (!g || !*g || strlen(g) > 255 || !json_is_integer(r) || json_integer_value(r) < 0 ||
        json_integer_value(r) > (1 << 24))
        goto out;
    int rank = (int)json_integer_value(r);
    if (json_is_true(json_object_get(o, "l"))) {
        look(g, rank);
        rc = 0;
        goto out;
    }
    json_t *k = json_object_get(o, "k"), *c = json_object_get(o, "c"), *f = json_object_get(o, "f"),
           *s = json_object_get(o, "s");
    if (!json_is_integer(k) || !json_is_integer(c) || !json_is_integer(f) || !json_is_array(s) ||
        json_array_size(s) > FWD_STEPS_PER_LINE)
        goto out;
    store_step st[FWD_STEPS_PER_LINE];
    size_t n = json_array_size(s);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(s, i);
        if (!json_is_array(e) || json_array_size(e) != 5)
            goto out;
        for (size_t j = 0; j < 5; j++)
            if (!json_is_integer(json_array_get(e, j)))
                goto out;
        st[i] = (store_step){.step = json_integer_value(json_array_get(e, 0)),
                             .n = json_integer_value(json_array_get(e, 1)),
                             .digest = (uint64_t)json_integer_value(json_array_get(e, 2)),
                             .inputs = (uint64_t)json_integer_value(json_array_get(e, 3)),
                             .inputs_unknown = json_integer_value(json_array_get(e, 4)) != 0};
    }
    sums(g, json_integer_value(k), rank, st, n, json_integer_value(c), (int)json_integer_value(f));
    rc = 0;
out:
    json_decref(o);
    return rc;
}
