/* absorbed.c - a twin group's absorbed differences in one line (cli/absorbed.h). */
#include "cli/absorbed.h"

#include <stdio.h>

int absorbed_text(json_t *absorbed, char *out, size_t cap)
{
    out[0] = 0;
    if (!json_is_object(absorbed))
        return 0;
    long long n = json_integer_value(json_object_get(absorbed, "count"));
    json_t *f = json_object_get(absorbed, "first");
    const char *name = json_string_value(json_object_get(f, "name")),
               *site = json_string_value(json_object_get(f, "site"));
    size_t len = (size_t)snprintf(out, cap,
                                  "%lld collective%s inputs differed on some ranks while %s outputs matched; first at "
                                  "step %lld, rank %lld",
                                  n, n == 1 ? "'s" : "s'", n == 1 ? "its" : "their",
                                  (long long)json_integer_value(json_object_get(f, "step")),
                                  (long long)json_integer_value(json_object_get(f, "rank")));
    if (name && len < cap)
        len += (size_t)snprintf(out + len, cap - len, ": %s (occurrence %lld)", name,
                                (long long)json_integer_value(json_object_get(f, "occurrence")));
    if (site && len < cap)
        snprintf(out + len, cap - len, " at %s", site);
    return 1;
}
