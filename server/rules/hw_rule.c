/* hw_rule.c - whether hardware is the better explanation of a first divergence (server/rules/hw_rule.h): pure. */
#include "server/rules/hw_rule.h"

#include <stdio.h>
#include <string.h>

#include "common/text.h"

static void decide(hw_verdict *v, const char *cls, const char *code)
{
    v->cls = cls;
    v->code = code;
}

/* by_nature - rule 1: the causes that are software whatever ran them. 1 when it decided. */
static int by_nature(const hw_facts *f, hw_verdict *v)
{
    const char *why = f->cause_why ? f->cause_why : "";
    switch (f->cause) {
    case CAUSE_CONFIGURATION: {
        static const char lead[] = "the twins' configurations differ: ";
        decide(v, "software", "configuration");
        memcpy(v->reason, lead, sizeof(lead)); /* the summary after it, cut at a character's start */
        text_one_line(f->config_summary ? f->config_summary : "(see the manifest diff)", v->reason + sizeof(lead) - 1,
                      sizeof(v->reason) - sizeof(lead) + 1);
        return 1;
    }
    case CAUSE_EVERY_RANK: decide(v, "software", "every_rank"); break;
    case CAUSE_OPERATION: decide(v, "software", "operation"); break;
    case CAUSE_RESTORE: decide(v, "software", "restore"); break;
    case CAUSE_LAYOUT: decide(v, "software", "layout"); break;
    default: return 0;
    }
    snprintf(v->reason, sizeof(v->reason), "%.1000s", why);
    return 1;
}

void hw_judge(const hw_facts *f, hw_verdict *v)
{
    memset(v, 0, sizeof(*v));
    const char *why = f->cause_why ? f->cause_why : "";
    if (by_nature(f, v))
        return;
    if (f->cause == CAUSE_ORIGIN && f->local) {
        decide(v, "software", "local");
        snprintf(v->reason, sizeof(v->reason),
                 "no hardware evidence: the difference never left the process that holds it (%.800s); leave the "
                 "call out if the program never uses that buffer",
                 why);
        return;
    }
    if (f->cause == CAUSE_ORIGIN && f->root_input) {
        decide(v, "software", "root_input");
        snprintf(v->reason, sizeof(v->reason),
                 "no hardware evidence: %.700s; compare what the runs read (input files, the clock, the "
                 "environment); if the program never uses the differing bytes (a buffer it only partly set), leave "
                 "the call out with --lockstep-ignore",
                 why);
        return;
    }
    if (f->cause == CAUSE_CONTENT && f->nranks >= 2 && !f->strong) {
        decide(v, "inconclusive", "content");
        snprintf(v->reason, sizeof(v->reason),
                 "every rank diverged at once and the records cannot tell where the change began: evidence on "
                 "every node that ran it would name none; record the collective's inputs, or narrow it "
                 "(lockstep narrow %.200s)",
                 f->group ? f->group : "GROUP");
        return;
    }
    if (f->same_hw) {
        decide(v, "inconclusive", "same_hardware");
        snprintf(v->reason, sizeof(v->reason),
                 "twins ran rank %d on the same hardware (%.200s%s%.200s) and still diverged: a transient fault "
                 "does exactly that, and so does nondeterminism; narrow it to tell (lockstep narrow %.200s)",
                 f->same_hw_rank, f->same_hw_node ? f->same_hw_node : "", f->same_hw_gpu && *f->same_hw_gpu ? " " : "",
                 f->same_hw_gpu ? f->same_hw_gpu : "", f->group ? f->group : "GROUP");
        return;
    }
    if (!f->attested) {
        decide(v, "software", "no_hardware");
        snprintf(v->reason, sizeof(v->reason),
                 "no attested hardware ran rank %d (a manifest's own host counts only where slurmstepd attested "
                 "the same node, or with trust_reported_hosts)",
                 f->origin_rank);
        return;
    }
    decide(v, "hardware", f->strong ? "minority" : "pair");
    snprintf(v->reason, sizeof(v->reason), "%s evidence against %.300s: %s (%s: %.560s)", f->strong ? "strong" : "weak",
             f->implicated ? f->implicated : "",
             f->strong ? "the minority run of the group diverged" : "two runs diverged; either may be at fault",
             cause_name(f->cause), why);
}

int hw_is_evidence(const hw_verdict *v)
{
    return v->cls && !strcmp(v->cls, "hardware");
}
