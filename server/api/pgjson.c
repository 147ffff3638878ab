/* pgjson.c - PostgreSQL result cells as JSON values, the way every read endpoint spells them. */
#include "server/api/pgjson.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/lsfp1.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"

json_t *pg_str(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : json_string(PQgetvalue(r, row, col));
}

json_t *pg_int(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : json_integer(strtoll(PQgetvalue(r, row, col), NULL, 10));
}

json_t *pg_real(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : json_real(atof(PQgetvalue(r, row, col)));
}

json_t *pg_int_array(const char *s, int hex)
{
    int cap = (int)strlen(s) / 2 + 1; /* "{1,2}": at most one value per two characters */
    int64_t *v = xmalloc((size_t)cap * sizeof(*v));
    int n = db_int_array_parse(s, v, cap);
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        if (hex) {
            char h[17];
            snprintf(h, sizeof(h), "%016" PRIx64, (uint64_t)v[i]);
            json_array_append_new(a, json_string(h));
        } else {
            json_array_append_new(a, json_integer(v[i]));
        }
    }
    free(v);
    return a;
}

void pg_rec_extras(json_t *o, const rec_record *rec)
{
    if (rec->flags & REC_STATE_MASK)
        json_object_set_new(o, "state", json_string((rec->flags & REC_STATE_SAVED) ? "saved" : "restored"));
    if (!rec->ext_len)
        return;
    rec_ext x;
    char h[17];
    rec_ext_of(rec, &x);
    if (x.chunk_bytes && x.chunk_bytes != FP_CHUNK_BYTES)
        json_object_set_new(o, "chunk_bytes", json_integer((json_int_t)x.chunk_bytes));
    if (x.has_shard) {
        snprintf(h, sizeof(h), "%016" PRIx64, x.shard_acc);
        json_object_set_new(o, "shard",
                            json_pack("{s:I, s:I, s:s}", "offset", (json_int_t)x.shard_offset, "total",
                                      (json_int_t)x.shard_total, "acc", h));
    }
    if (x.has_scales) {
        json_t *shape = json_array();
        for (unsigned i = 0; i < x.scales_ndim; i++)
            json_array_append_new(shape, json_integer(x.scales_shape[i]));
        snprintf(h, sizeof(h), "%016" PRIx64, x.scales_fp);
        json_object_set_new(o, "scales",
                            json_pack("{s:s, s:o, s:I, s:s}", "dtype", dtype_name(x.scales_dtype), "shape", shape,
                                      "nbytes", (json_int_t)x.scales_nbytes, "fp", h));
    }
    if (x.has_comm) { /* as lockstep dump spells it (cli/recjson.c) */
        snprintf(h, sizeof(h), "%016" PRIx64, x.comm_id);
        json_t *c = json_pack("{s:i, s:s}", "size", (int)x.comm_size, "id", h);
        if (x.comm_nlisted) {
            json_t *w = json_array();
            for (uint32_t i = 0; i < x.comm_nlisted; i++)
                json_array_append_new(w, json_integer(x.comm_ranks[i]));
            json_object_set_new(c, "ranks", w);
        }
        json_object_set_new(o, "comm", c);
    }
}
