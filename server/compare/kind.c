/* kind.c - what a twin group is for (server/compare/kind.h): pure, tested from a table of cases. */
#include "server/compare/kind.h"

#include <string.h>

const char *const TWIN_KINDS[] = {"twins", "replay", "noise", "experiment", NULL};

/* ends_with - 1 when `s` is longer than `suffix` and ends with it. */
static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

twin_kind_id twin_kind(const kind_facts *f)
{
    const char *name = f->name ? f->name : "";
    if (f->narrow)
        return KIND_REPLAY;
    if (ends_with(name, ".noise"))
        return KIND_NOISE;
    if (ends_with(name, ".change") || f->has_change || f->has_noise)
        return KIND_EXPERIMENT;
    return KIND_TWINS;
}

int twin_kind_parse(const char *s)
{
    for (int i = 0; s && TWIN_KINDS[i]; i++)
        if (!strcmp(TWIN_KINDS[i], s))
            return i;
    return -1;
}
