/* outcome.c - one run's outcome in its twin group (server/rules/outcome.h): pure, tested from a table of cases. */
#include "server/rules/outcome.h"

#include <string.h>

const char *const RUN_OUTCOMES[] = {"matched",          "pending",  "failed",   "incomplete", "odd-one-out",
                                    "outside-majority", "majority", "diverged", NULL};

const char *twin_outcome_why(const char *outcome)
{
    static const char *const why[][2] = {
        {"matched", "the group matched"},
        {"majority", "holds what the majority holds where the runs parted"},
        {"odd-one-out", "the odd one out: the one run outside the majority where the runs parted"},
        {"outside-majority", "outside the majority where the runs parted, with other runs"},
        {"diverged", "differs from a twin; nothing says which of them is at fault"},
        {"failed", "a rank exited non-zero"},
        {"incomplete", "the group could not be compared to the end"},
        {"pending", "the group is still being compared"},
    };
    for (size_t i = 0; outcome && i < sizeof(why) / sizeof(why[0]); i++)
        if (!strcmp(why[i][0], outcome))
            return why[i][1];
    return "";
}

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
