/* consensus.c - a run's consensus check (GET /api/v1/runs/{id}/consensus, or the run's "consensus") as one line. */
#include "cli/consensus.h"

#include <stdio.h>
#include <string.h>

/* rank_list - a JSON array of ranks as "0,1,2" (the first 16, then "..."). */
static void rank_list(const json_t *a, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i < json_array_size(a) && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, i == 16 ? ",..." : "%s%" JSON_INTEGER_FORMAT, i ? "," : "",
                              json_integer_value(json_array_get(a, i)));
    if (n >= cap && cap > 4)
        snprintf(out + cap - 4, 4, "...");
}

void consensus_format_line(const json_t *c, char *out, size_t cap)
{
    const char *st = json_string_value(json_object_get(c, "status"));
    json_int_t checked = json_integer_value(json_object_get(c, "checked"));
    const json_t *f = json_object_get(c, "first");
    if (!st || !strcmp(st, "none")) {
        const char *why = json_string_value(json_object_get(c, "why"));
        snprintf(out, cap, "consensus: none checked%s%s", why ? ": " : "", why ? why : "");
        return;
    }
    if (!json_is_object(f)) {
        snprintf(out, cap, "consensus: %s (%" JSON_INTEGER_FORMAT " windows checked)", st, checked);
        return;
    }
    char ranks[128], odd[128], what[300], where[300] = "", hw[300] = "";
    const json_t *cr = json_object_get(f, "comm_ranks");
    if (json_array_size(cr))
        rank_list(cr, ranks, sizeof(ranks));
    else
        snprintf(ranks, sizeof(ranks), "%" JSON_INTEGER_FORMAT " ranks",
                 json_integer_value(json_object_get(f, "comm_size")));
    rank_list(json_object_get(f, "odd_ranks"), odd, sizeof(odd));
    const char *name = json_string_value(json_object_get(f, "name"));
    if (name && name[0])
        snprintf(what, sizeof(what), "%s #%" JSON_INTEGER_FORMAT, name,
                 json_integer_value(json_object_get(f, "occurrence")));
    else
        snprintf(what, sizeof(what),
                 "(its records awaited; a job that ended left them: lockstep replay --steps asked)");
    const json_t *site = json_object_get(f, "site");
    const char *fn = json_string_value(json_object_get(site, "function")),
               *mod = json_string_value(json_object_get(site, "module"));
    if (json_is_object(site))
        snprintf(where, sizeof(where), " at site %s (%s+0x%llx)", fn && fn[0] ? fn : "?", mod && mod[0] ? mod : "?",
                 (unsigned long long)json_integer_value(json_object_get(site, "offset")));
    const char *node = json_string_value(json_object_get(f, "node")),
               *gpu = json_string_value(json_object_get(f, "gpu"));
    if (node)
        snprintf(hw, sizeof(hw), " (node %s%s%s)", node, gpu ? ", gpu " : "", gpu ? gpu : "");
    int clear = json_is_true(json_object_get(f, "clear"));
    snprintf(out, cap,
             "consensus: DISAGREE at step %" JSON_INTEGER_FORMAT
             ", %s on ranks {%s}: %s %s %s%s%s (%" JSON_INTEGER_FORMAT " windows checked)",
             json_integer_value(json_object_get(f, "step")), what, ranks,
             clear ? (strchr(odd, ',') ? "ranks" : "rank") : "one of ranks", odd,
             clear ? (strchr(odd, ',') ? "are odd" : "is odd") : "differs (no majority)", hw, where, checked);
}
