/* divergence.c - a rank's first divergence, typed, and its run entries read once from the stored JSON
 * (server/twins/divergence.h). */
#include "server/twins/divergence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "server/core/xalloc.h"

/* str_dup - member `key` of `o` as a new string, or NULL when it is absent or no string. */
static char *str_dup(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? xstrdup(s) : NULL;
}

/* hex16 - `s` as the 64-bit word its 16 hex digits spell into *v: 0, or -1 when it is not 16 hex digits. */
static int hex16(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    int i;
    for (i = 0; s && i < 16; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        x = x << 4 | (uint64_t)d;
    }
    if (!s || s[i])
        return -1;
    *v = x;
    return 0;
}

/* read_inputs - the entry's "inputs" (an array of 16-hex strings) into e->inputs; none when any is not. */
static void read_inputs(const json_t *in, div_entry *e)
{
    size_t n = json_array_size(in);
    if (!n)
        return;
    e->inputs = xcalloc(n, sizeof(uint64_t));
    for (size_t i = 0; i < n; i++)
        if (hex16(json_string_value(json_array_get(in, i)), &e->inputs[i]) < 0) {
            free(e->inputs);
            e->inputs = NULL;
            return;
        }
    e->ninputs = (int)n;
}

/* read_comm - the entry's "comm" ({"size", "ranks": [world ranks]}) into e's comm members. */
static void read_comm(const json_t *cm, div_entry *e)
{
    const json_t *sz = json_object_get(cm, "size"), *w = json_object_get(cm, "ranks");
    if (!json_is_integer(sz) || json_integer_value(sz) <= 0 || json_integer_value(sz) > INT32_MAX)
        return;
    e->comm_size = (int)json_integer_value(sz);
    size_t n = json_array_size(w);
    if (!n || n != (size_t)e->comm_size || n > REC_COMM_LIST_MAX)
        return;
    e->comm_ranks = xcalloc(n, sizeof(uint32_t));
    for (size_t k = 0; k < n; k++) {
        const json_t *r = json_array_get(w, k);
        if (!json_is_integer(r) || json_integer_value(r) < 0 || json_integer_value(r) > UINT32_MAX) {
            free(e->comm_ranks);
            e->comm_ranks = NULL;
            return;
        }
        e->comm_ranks[k] = (uint32_t)json_integer_value(r);
    }
    e->comm_nranks = (int)n;
}

/* read_entry - one stored run entry `o` into `e` (zeroed). */
static void read_entry(const json_t *o, div_entry *e)
{
    e->run_id = str_dup(o, "run_id");
    if (!e->run_id)
        e->run_id = xstrdup("");
    e->present = json_is_true(json_object_get(o, "present"));
    e->fp = str_dup(o, "fp");
    e->value_bits = str_dup(o, "value_bits");
    e->role = str_dup(o, "role");
    e->restore_status = str_dup(o, "status");
    const json_t *nr = json_object_get(o, "not_restored"), *ns = json_object_get(o, "not_saved");
    e->not_restored = json_is_integer(nr) && json_integer_value(nr) > 0 ? (long)json_integer_value(nr) : 0;
    e->not_saved = json_is_integer(ns) && json_integer_value(ns) > 0 ? (long)json_integer_value(ns) : 0;
    json_t *m = json_object_get(o, "majority");
    e->majority = json_is_true(m) ? DIV_MAJORITY_IN : json_is_false(m) ? DIV_MAJORITY_OUT : DIV_MAJORITY_UNSAID;
    read_inputs(json_object_get(o, "inputs"), e);
    read_comm(json_object_get(o, "comm"), e);
    json_t *v = json_object_get(o, "value");
    if (json_is_integer(v)) {
        e->value_kind = DIV_VALUE_INT;
        e->value_int = (long long)json_integer_value(v);
    } else if (json_is_real(v)) {
        e->value_kind = DIV_VALUE_REAL;
        e->value = json_real_value(v);
    } else if (v) {
        e->value_kind = DIV_VALUE_NULL;
    }
}

void div_entries_read(const json_t *runs, div_entry **out, int *n)
{
    size_t k = json_is_array(runs) ? json_array_size(runs) : 0;
    *out = xcalloc(k + 1, sizeof(**out));
    *n = (int)k;
    for (size_t i = 0; i < k; i++)
        read_entry(json_array_get(runs, i), &(*out)[i]);
}

void div_entries_free(div_entry *e, int n)
{
    for (int i = 0; e && i < n; i++) {
        free(e[i].run_id);
        free(e[i].fp);
        free(e[i].value_bits);
        free(e[i].role);
        free(e[i].restore_status);
        free(e[i].inputs);
        free(e[i].comm_ranks);
    }
    free(e);
}

const div_entry *div_entry_of(const div_entry *e, int n, const char *run_id)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(e[i].run_id, run_id))
            return &e[i];
    return NULL;
}

int div_has_majority(const div_entry *e, int n)
{
    for (int i = 0; i < n; i++)
        if (e[i].majority != DIV_MAJORITY_UNSAID)
            return 1;
    return 0;
}

void div_content_key(const div_entry *e, char *out, size_t cap)
{
    if (!e || !e->present)
        snprintf(out, cap, "missing");
    else
        snprintf(out, cap, "%s/%s", e->fp ? e->fp : "", e->value_bits ? e->value_bits : "-");
}

cause_inputs div_inputs_state(const div_entry *e, int n)
{
    if (n < 2)
        return CAUSE_IN_UNKNOWN;
    const uint64_t **lists = xcalloc((size_t)n, sizeof(*lists));
    int *counts = xcalloc((size_t)n, sizeof(*counts));
    int absent = 0;
    for (int i = 0; i < n; i++) {
        absent |= !e[i].present;
        lists[i] = e[i].inputs;
        counts[i] = e[i].ninputs;
    }
    cause_inputs s = absent ? CAUSE_IN_UNKNOWN : cause_inputs_of(lists, counts, n);
    free(lists);
    free(counts);
    return s;
}

void divergences_free(divergence *divs, int n)
{
    for (int i = 0; divs && i < n; i++) {
        free(divs[i].name);
        free(divs[i].kind);
        free(divs[i].odd_run_id);
        json_decref(divs[i].runs);
        div_entries_free(divs[i].entries, divs[i].nentries);
    }
    free(divs);
}
