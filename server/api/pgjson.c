/* pgjson.c - PostgreSQL result cells as JSON values, the way every read endpoint spells them. */
#include "server/api/pgjson.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/site.h"
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

json_t *pg_hex64(PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return json_null();
    char h[17];
    snprintf(h, sizeof(h), "%016" PRIx64, (uint64_t)strtoll(PQgetvalue(r, row, col), NULL, 10));
    return json_string(h);
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

json_t *pg_hex_array(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : pg_int_array(PQgetvalue(r, row, col), 1);
}

json_t *pg_site(PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col) && PQgetisnull(r, row, col + 2) && PQgetisnull(r, row, col + 4))
        return json_null();
    rec_site s;
    memset(&s, 0, sizeof(s));
    s.module = PQgetvalue(r, row, col);
    s.module_len = (uint16_t)PQgetlength(r, row, col);
    s.offset = (uint64_t)strtoll(PQgetvalue(r, row, col + 1), NULL, 10);
    s.function = PQgetvalue(r, row, col + 2);
    s.function_len = (uint16_t)PQgetlength(r, row, col + 2);
    s.function_offset = (uint64_t)strtoll(PQgetvalue(r, row, col + 3), NULL, 10);
    s.caller = PQgetvalue(r, row, col + 4);
    s.caller_len = (uint16_t)PQgetlength(r, row, col + 4);
    char text[SITE_TEXT_MAX];
    site_format(&s, text, sizeof(text));
    return json_pack("{s:s, s:I, s:s, s:I, s:s, s:s}", "module", s.module, "offset", (json_int_t)s.offset, "function",
                     s.function, "function_offset", (json_int_t)s.function_offset, "caller", s.caller, "text", text);
}
