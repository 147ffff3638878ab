/* fwd_line.c - forwards to a lease holder as JSON lines (fwd_line.h). */
#include "server/peers/fwd_line.h"

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

json_t *fwd_line_cons(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s)
{
    if (n > FWD_CONS_PER_LINE)
        return NULL;
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *ranks = json_array();
        for (uint32_t k = 0; k < d[i].n_listed && k < REC_COMM_LIST_MAX; k++)
            json_array_append_new(ranks, json_integer(d[i].ranks[k]));
        json_array_append_new(a, json_pack("[I, I, I, I, I, I, o]", (json_int_t)d[i].step,
                                           (json_int_t)(int64_t)d[i].key, (json_int_t)d[i].win, (json_int_t)d[i].n,
                                           (json_int_t)(int64_t)d[i].fold, (json_int_t)d[i].size, ranks));
    }
    return json_pack("{s:I, s:I, s:f, s:o}", "q", (json_int_t)run_key, "r", (json_int_t)rank, "t", commit_s, "d", a);
}

json_t *fwd_line_cons_look(int64_t run_key)
{
    return json_pack("{s:I, s:b}", "q", (json_int_t)run_key, "l", 1);
}

/* u32_of - an integer field 0..max of JSON array `e` at `i` into *out; 0, or -1. */
static int u32_of(const json_t *e, size_t i, json_int_t max, uint32_t *out)
{
    json_t *v = json_array_get(e, i);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return -1;
    *out = (uint32_t)json_integer_value(v);
    return 0;
}

/* parse_cons - a run's consensus line (`q` its key). */
static int parse_cons(const json_t *o, json_int_t q, const fwd_handlers *h)
{
    if (q <= 0)
        return -1;
    if (json_is_true(json_object_get(o, "l"))) {
        if (h->cons_look)
            h->cons_look(q);
        return 0;
    }
    json_t *r = json_object_get(o, "r"), *t = json_object_get(o, "t"), *a = json_object_get(o, "d");
    if (!json_is_integer(r) || json_integer_value(r) < 0 || json_integer_value(r) > (1 << 24) || !json_is_number(t) ||
        !json_is_array(a) || json_array_size(a) > FWD_CONS_PER_LINE)
        return -1;
    srv_cons_digest d[FWD_CONS_PER_LINE];
    memset(d, 0, sizeof(d));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *e = json_array_get(a, i), *ranks = json_array_get(e, 6);
        if (!json_is_array(e) || json_array_size(e) != 7 || !json_is_integer(json_array_get(e, 0)) ||
            !json_is_integer(json_array_get(e, 1)) || !json_is_integer(json_array_get(e, 4)) ||
            u32_of(e, 2, UINT32_MAX, &d[i].win) < 0 || u32_of(e, 3, UINT32_MAX, &d[i].n) < 0 ||
            u32_of(e, 5, 1 << 24, &d[i].size) < 0 || d[i].size == 0 || !json_is_array(ranks) ||
            json_array_size(ranks) > REC_COMM_LIST_MAX)
            return -1;
        d[i].step = json_integer_value(json_array_get(e, 0));
        d[i].key = (uint64_t)json_integer_value(json_array_get(e, 1));
        d[i].fold = (uint64_t)json_integer_value(json_array_get(e, 4));
        d[i].n_listed = (uint32_t)json_array_size(ranks);
        for (uint32_t k = 0; k < d[i].n_listed; k++)
            if (u32_of(ranks, k, 1 << 24, &d[i].ranks[k]) < 0)
                return -1;
    }
    if (h->cons)
        h->cons(q, (uint32_t)json_integer_value(r), d, json_array_size(a), json_number_value(t));
    return 0;
}

int fwd_line_parse(const char *line, const fwd_handlers *h)
{
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    json_t *q = json_object_get(o, "q");
    if (json_is_integer(q)) {
        int rc = parse_cons(o, json_integer_value(q), h);
        json_decref(o);
        return rc;
    }
    const char *g = json_string_value(json_object_get(o, "g"));
    json_t *r = json_object_get(o, "r");
    int rc = -1;
    if (!g || !*g || strlen(g) > 255 || !json_is_integer(r) || json_integer_value(r) < 0 ||
        json_integer_value(r) > (1 << 24))
        goto out;
    int rank = (int)json_integer_value(r);
    if (json_is_true(json_object_get(o, "l"))) {
        if (h->look)
            h->look(g, rank);
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
    if (h->sums)
        h->sums(g, json_integer_value(k), rank, st, n, json_integer_value(c), (int)json_integer_value(f));
    rc = 0;
out:
    json_decref(o);
    return rc;
}
