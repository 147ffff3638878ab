/* class_summary.c - a twin group's classification in a dozen words (server/rules/class_summary.h): pure, tested from a
 * table. */
#include "server/rules/class_summary.h"

#include <stdio.h>
#include <string.h>

/* The software rules' codes and what each says (docs/suspects.md, "Hardware or software"). */
static const struct {
    const char *code, *text;
} SOFTWARE[] = {
    {"configuration", "Software: the twins' configurations differ"},
    {"every_rank", "Software: every rank's inputs differed at once"},
    {"operation", "Software: same inputs, another output (an order-dependent reduction)"},
    {"restore", "Software: the resumed run restored other state than was saved"},
    {"layout", "Software: other rank counts round differently"},
    {"same_hardware", "Software: the twins diverged on the same hardware"}, /* before inconclusive took it */
    {"local", "Software: the difference never left its process"},
    {"root_input", "Software: the broadcast's root read another value"},
    {"no_hardware", "Software: no attested hardware ran the diverging rank"},
    {"spread", "Software: the record diverges on too many unrelated nodes"},
    {"replay", "Software: so the replays of lockstep narrow say"},
    {"nondeterministic", "Software: noise replicas, declared nondeterministic"},
};

/* node_list - the first two names of the comma-separated `list` ("n3", "n3 <joiner> n4", "n3, n4 and 2 more") into
 * `out`; each name cut to 64 bytes, blanks in it turned into '_' so that a name stays one word. Returns how many
 * names the list holds. */
static int node_list(const char *list, const char *joiner, char *out, size_t cap)
{
    char names[2][65];
    int n = 0;
    for (const char *p = list ? list : ""; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len && n < 2) {
            snprintf(names[n], sizeof(names[n]), "%.*s", (int)(len < 64 ? len : 64), p);
            for (char *c = names[n]; *c; c++)
                if (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r')
                    *c = '_';
        }
        n += len > 0;
        p += len + (e ? 1 : 0);
    }
    if (n == 0)
        snprintf(out, cap, "%s", "");
    else if (n == 1)
        snprintf(out, cap, "%s", names[0]);
    else if (n == 2)
        snprintf(out, cap, "%s %s %s", names[0], joiner, names[1]);
    else
        snprintf(out, cap, "%s, %s and %d more", names[0], names[1], n - 2);
    return n;
}

/* hardware - the summary of a hardware classification. */
static void hardware(const char *code, const char *implicated, char *out, size_t cap)
{
    char nodes[160];
    int n;
    if (!strcmp(code, "minority")) {
        n = node_list(implicated, "and", nodes, sizeof(nodes));
        if (n)
            snprintf(out, cap, "Hardware: the odd run's node%s %s", n > 1 ? "s" : "", nodes);
        else
            snprintf(out, cap, "Hardware: the odd run's hardware");
    } else if (!strcmp(code, "pair")) {
        n = node_list(implicated, "or", nodes, sizeof(nodes));
        if (n == 2)
            snprintf(out, cap, "Hardware: %s, one of the pair", nodes);
        else if (n > 2)
            snprintf(out, cap, "Hardware: one of %s", nodes);
        else
            snprintf(out, cap, "Hardware: one of the pair%s%s", n ? " on " : "", nodes);
    } else if (!strcmp(code, "replay")) {
        n = node_list(implicated, "and", nodes, sizeof(nodes));
        snprintf(out, cap, "Hardware: the replays diverged again%s%s", n ? " on " : "", nodes);
    } else {
        n = node_list(implicated, "and", nodes, sizeof(nodes));
        snprintf(out, cap, "Hardware%s%s", n ? ": " : "", nodes);
    }
}

void class_summary(const char *cls, const char *code, const char *implicated, char *out, size_t cap)
{
    cls = cls ? cls : "";
    code = code ? code : "";
    if (!strcmp(cls, "hardware")) {
        hardware(code, implicated, out, cap);
        return;
    }
    if (!strcmp(cls, "software")) {
        for (size_t i = 0; i < sizeof(SOFTWARE) / sizeof(SOFTWARE[0]); i++)
            if (!strcmp(SOFTWARE[i].code, code)) {
                snprintf(out, cap, "%s", SOFTWARE[i].text);
                return;
            }
        snprintf(out, cap, "Software");
        return;
    }
    if (!strcmp(cls, "inconclusive")) {
        if (!strcmp(code, "same_hardware"))
            snprintf(out, cap, "Inconclusive: diverged on the same hardware, narrow it");
        else if (!strcmp(code, "content"))
            snprintf(out, cap, "Inconclusive: every rank diverged at once, narrow it");
        else
            snprintf(out, cap, "Inconclusive: narrow it");
        return;
    }
    if (!strcmp(code, "match"))
        snprintf(out, cap, "No divergence: nothing to classify");
    else if (!strcmp(code, "incomplete"))
        snprintf(out, cap, "Not classified: a run failed or nothing was compared");
    else if (!strcmp(code, "replay"))
        snprintf(out, cap, "No node blamed by the replays");
    else
        snprintf(out, cap, "Not classified");
}
