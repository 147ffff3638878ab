/* recview.c - a stored record (decoded from its frame) as the read API spells it. */
#include "server/api/recview.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "common/dtype.h"
#include "server/api/pgjson.h"
#include "server/http/reply.h"
#include "server/twins/first_json.h"
#include "server/store/frames.h"

json_t *rv_hex64(uint64_t v)
{
    char h[17];
    snprintf(h, sizeof(h), "%016" PRIx64, v);
    return json_string(h);
}

json_t *rv_hex_words(const uint64_t *w, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, rv_hex64(w[i]));
    return a;
}

json_t *rv_shape(const rec_record *r)
{
    json_t *a = json_array();
    for (unsigned i = 0; i < r->ndim; i++)
        json_array_append_new(a, json_integer(r->shape[i]));
    return a;
}

json_t *rv_record(const rec_record *r)
{
    json_t *o = json_pack("{s:i, s:I, s:I, s:s#, s:i, s:s, s:s, s:i, s:I, s:I, s:o, s:o}", "rank", (int)r->rank, "seq",
                          (json_int_t)r->seq, "step", (json_int_t)r->step, "name", r->name, (int)r->name_len,
                          "occurrence", (int)r->occurrence, "level", level_name(r->level), "dtype",
                          dtype_name(r->dtype), "flags", (int)r->flags, "t_ns", (json_int_t)r->t_ns, "nbytes",
                          (json_int_t)r->nbytes, "fp", rv_hex64(r->fp), "shape", rv_shape(r));
    if (r->flags & REC_HAS_VALUE) {
        double d = dtype_value_to_double(r->dtype, r->value);
        json_object_set_new(o, "value", isfinite(d) ? json_real(d) : json_null());
        json_object_set_new(o, "value_bits", rv_hex64(r->value));
    }
    if (r->n_inputs)
        json_object_set_new(o, "inputs", rv_hex_words(r->inputs, r->n_inputs));
    if (r->n_chunks)
        json_object_set_new(o, "chunks", rv_hex_words(r->chunks, r->n_chunks));
    if (rec_has_site(r))
        json_object_set_new(o, "site", first_json_site(&r->site));
    pg_rec_extras(o, r);
    return o;
}

enum MHD_Result rv_reply_read_error(http_req *req, int rc, const char *err)
{
    if (rc == FRAMES_DAMAGED)
        return http_reply_error(req, 500, "stored records are damaged", err,
                                "their frames fail their checksums: the rows were changed outside lockstepd or the "
                                "disk damaged them; restore them from a backup");
    return http_reply_db_down(req, err);
}
