/* outcome.c - one run's outcome in its twin group (server/compare/outcome.h): pure, tested from a table of cases. */
#include "server/compare/outcome.h"

#include <string.h>

const char *const RUN_OUTCOMES[] = {"pending", "matched", "odd", "diverged", "not-compared", "failed", "incomplete",
                                    NULL};

const char *twin_outcome(const run_place *p)
{
    const char *st = p->status ? p->status : "pending";
    if (!strcmp(st, "match"))
        return "matched";
    if (!strcmp(st, "incomplete"))
        return p->failed ? "failed" : "incomplete";
    if (strcmp(st, "diverged"))
        return "pending";
    if (!p->at_first)
        return "not-compared";
    if (p->is_named)
        return "odd";
    if (p->majority)
        return p->in_majority ? "matched" : "odd";
    return p->named ? "matched" : "diverged";
}
