/* outcome.c - one run's outcome in its twin group (server/compare/outcome.h): pure, tested from a table of cases. */
#include "server/compare/outcome.h"

#include <string.h>

const char *const RUN_OUTCOMES[] = {"matched",     "pending",          "failed",   "incomplete",
                                    "odd-one-out", "outside-majority", "majority", "diverged",
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
    if (p->is_named)
        return "odd-one-out";
    if (p->at_first && p->majority)
        return p->in_majority ? "majority" : "outside-majority";
    return "diverged";
}
