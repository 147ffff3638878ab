/* recjson.c - records as JSON objects, in the field names of the JSON ingest format. */
#include "cli/recjson.h"

#include <math.h>
#include <stdio.h>

#include "common/dtype.h"
#include "common/site.h"

void rec_fp_hex(uint64_t fp, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)fp);
}

static json_t *hex_array(const uint64_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        char h[17];
        rec_fp_hex(v[i], h);
        json_array_append_new(a, json_string(h));
    }
    return a;
}

json_t *rec_site_json(const rec_site *s)
{
    char text[SITE_TEXT_MAX];
    site_format(s, text, sizeof(text));
    json_t *o = json_pack("{s:s%, s:I, s:s%, s:I, s:s%, s:s}", "module", s->module ? s->module : "",
                          (size_t)s->module_len, "offset", (json_int_t)s->offset, "function",
                          s->function ? s->function : "", (size_t)s->function_len, "function_offset",
                          (json_int_t)s->function_offset, "caller", s->caller ? s->caller : "",
                          (size_t)s->caller_len, "text", text);
    return o;
}

json_t *rec_to_json(const rec_record *r)
{
    char fp[17];
    json_t *shape = json_array();
    for (unsigned i = 0; shape && i < r->ndim; i++)
        json_array_append_new(shape, json_integer(r->shape[i]));
    rec_fp_hex(r->fp, fp);
    json_t *o = json_pack("{s:I, s:I, s:I, s:s%, s:I, s:s, s:s, s:o, s:I, s:s, s:I}", "rank", (json_int_t)r->rank,
                          "seq", (json_int_t)r->seq, "step", (json_int_t)r->step, "name", r->name,
                          (size_t)r->name_len, "occurrence", (json_int_t)r->occurrence, "level", level_name(r->level),
                          "dtype", dtype_name(r->dtype), "shape", shape, "nbytes", (json_int_t)r->nbytes, "fp", fp,
                          "t_ns", (json_int_t)r->t_ns);
    if (!o)
        return NULL;
    if (r->flags & REC_HAS_VALUE) {
        double v = dtype_value_to_double(r->dtype, r->value);
        char bits[19];
        snprintf(bits, sizeof(bits), "0x%llx", (unsigned long long)r->value);
        /* JSON has no NaN or infinity: those travel in value_bits alone. */
        json_object_set_new(o, "value", isfinite(v) ? json_real(v) : json_null());
        json_object_set_new(o, "value_bits", json_string(bits));
    }
    if (r->n_inputs)
        json_object_set_new(o, "inputs", hex_array(r->inputs, r->n_inputs));
    if (r->n_chunks)
        json_object_set_new(o, "chunks", hex_array(r->chunks, r->n_chunks));
    if (rec_has_site(r))
        json_object_set_new(o, "site", rec_site_json(&r->site));
    return o;
}
