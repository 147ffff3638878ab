/* recjson.c - records as JSON objects, in the field names of the JSON ingest format. */
#include "cli/recjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/site.h"
#include "common/lsfp1.h"

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
    json_t *o = json_pack(
        "{s:s%, s:I, s:s%, s:I, s:s%, s:s}", "module", s->module ? s->module : "", (size_t)s->module_len, "offset",
        (json_int_t)s->offset, "function", s->function ? s->function : "", (size_t)s->function_len, "function_offset",
        (json_int_t)s->function_offset, "caller", s->caller ? s->caller : "", (size_t)s->caller_len, "text", text);
    return o;
}

json_t *rec_to_json(const rec_record *r)
{
    char fp[17];
    json_t *shape = json_array();
    for (unsigned i = 0; shape && i < r->ndim; i++)
        json_array_append_new(shape, json_integer(r->shape[i]));
    rec_fp_hex(r->fp, fp);
    json_t *o =
        json_pack("{s:I, s:I, s:I, s:s%, s:I, s:s, s:s, s:o, s:I, s:s, s:I}", "rank", (json_int_t)r->rank, "seq",
                  (json_int_t)r->seq, "step", (json_int_t)r->step, "name", r->name, (size_t)r->name_len, "occurrence",
                  (json_int_t)r->occurrence, "level", level_name(r->level), "dtype", dtype_name(r->dtype), "shape",
                  shape, "nbytes", (json_int_t)r->nbytes, "fp", fp, "t_ns", (json_int_t)r->t_ns);
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
    if (r->flags & REC_STATE_MASK)
        json_object_set_new(o, "state", json_string((r->flags & REC_STATE_SAVED) ? "saved" : "restored"));
    if (r->ext_len)
        rec_ext_to_json(r, o);
    return o;
}

void rec_ext_to_json(const rec_record *r, json_t *o)
{
    rec_ext x;
    char h[17];
    rec_ext_of(r, &x);
    if (x.chunk_bytes && x.chunk_bytes != FP_CHUNK_BYTES)
        json_object_set_new(o, "chunk_bytes", json_integer((json_int_t)x.chunk_bytes));
    if (x.has_shard) {
        rec_fp_hex(x.shard_acc, h);
        json_object_set_new(o, "shard",
                            json_pack("{s:I, s:I, s:s}", "offset", (json_int_t)x.shard_offset, "total",
                                      (json_int_t)x.shard_total, "acc", h));
    }
    if (x.has_scales) {
        json_t *shape = json_array();
        for (unsigned i = 0; shape && i < x.scales_ndim; i++)
            json_array_append_new(shape, json_integer(x.scales_shape[i]));
        rec_fp_hex(x.scales_fp, h);
        json_object_set_new(o, "scales",
                            json_pack("{s:s, s:o, s:I, s:s}", "dtype", dtype_name(x.scales_dtype), "shape", shape,
                                      "nbytes", (json_int_t)x.scales_nbytes, "fp", h));
    }
    if (x.has_comm) {
        rec_fp_hex(x.comm_id, h);
        json_t *c = json_pack("{s:i, s:s}", "size", (int)x.comm_size, "id", h);
        if (c && x.comm_nlisted) {
            json_t *w = json_array();
            for (uint32_t i = 0; w && i < x.comm_nlisted; i++)
                json_array_append_new(w, json_integer(x.comm_ranks[i]));
            json_object_set_new(c, "ranks", w);
        }
        json_object_set_new(o, "comm", c);
    }
}

static uint64_t hex_of(const json_t *v)
{
    const char *s = json_string_value(v);
    return s ? strtoull(s, NULL, 16) : 0;
}

int rec_ext_from_json(const json_t *o, uint8_t *flags, rec_ext *x)
{
    memset(x, 0, sizeof(*x));
    const char *state = json_string_value(json_object_get(o, "state"));
    if (state) {
        if (strcmp(state, "saved") == 0)
            *flags |= REC_STATE_SAVED;
        else if (strcmp(state, "restored") == 0)
            *flags |= REC_STATE_RESTORED;
        else
            return -1;
    }
    const json_t *cb = json_object_get(o, "chunk_bytes"), *sh = json_object_get(o, "shard"),
                 *sc = json_object_get(o, "scales");
    if (cb)
        x->chunk_bytes = (uint64_t)json_integer_value(cb);
    if (json_is_object(sh)) {
        x->has_shard = 1;
        x->shard_offset = (uint64_t)json_integer_value(json_object_get(sh, "offset"));
        x->shard_total = (uint64_t)json_integer_value(json_object_get(sh, "total"));
        x->shard_acc = hex_of(json_object_get(sh, "acc"));
    }
    if (json_is_object(sc)) {
        const char *dt = json_string_value(json_object_get(sc, "dtype"));
        const json_t *shape = json_object_get(sc, "shape");
        if (!dt || dtype_parse(dt) < 0 || json_array_size(shape) > LS_MAX_DIMS)
            return -1;
        x->has_scales = 1;
        x->scales_dtype = (uint8_t)dtype_parse(dt);
        x->scales_ndim = (uint8_t)json_array_size(shape);
        for (unsigned i = 0; i < x->scales_ndim; i++)
            x->scales_shape[i] = json_integer_value(json_array_get(shape, i));
        x->scales_nbytes = (uint64_t)json_integer_value(json_object_get(sc, "nbytes"));
        x->scales_fp = hex_of(json_object_get(sc, "fp"));
    }
    const json_t *cm = json_object_get(o, "comm");
    if (json_is_object(cm)) {
        const json_t *w = json_object_get(cm, "ranks");
        json_int_t size = json_integer_value(json_object_get(cm, "size"));
        size_t nw = json_array_size(w);
        if (size < 1 || size > INT32_MAX || nw > REC_COMM_LIST_MAX || (nw && (json_int_t)nw != size))
            return -1;
        x->has_comm = 1;
        x->comm_size = (uint32_t)size;
        x->comm_nlisted = (uint32_t)nw;
        for (size_t i = 0; i < nw; i++)
            x->comm_ranks[i] = (uint32_t)json_integer_value(json_array_get(w, i));
        x->comm_id = hex_of(json_object_get(cm, "id"));
    }
    return 0;
}
