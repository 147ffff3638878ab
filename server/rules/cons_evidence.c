/* cons_evidence.c - whether a consensus disagreement is hardware evidence (server/rules/cons_evidence.h): pure. */
#include "server/rules/cons_evidence.h"

#include <stdio.h>
#include <string.h>

static void decide(cons_ev_verdict *v, const char *cls, const char *code, cons_ev_weight w)
{
    v->cls = cls;
    v->code = code;
    v->weight = w;
}

/* hardware - the evidence the disagreement itself gives, before the fleet's history is weighed. */
static void hardware(const cons_ev_facts *f, cons_ev_verdict *v)
{
    const char *node = f->node && *f->node ? f->node : "?";
    if (f->comm_size <= 1) {
        decide(v, "software", "single", CONS_EV_NONE);
        snprintf(v->reason, sizeof(v->reason),
                 "a communicator of one process holds the only copy: there is nothing for it to disagree with");
    } else if (!f->clear && f->comm_size == 2) {
        if (f->unattested >= f->n_odd) {
            decide(v, "software", "no_hardware", CONS_EV_NONE);
            snprintf(v->reason, sizeof(v->reason),
                     "the two copies of a communicator of 2 processes differ, and no attested node ran either rank");
            return;
        }
        decide(v, "hardware", "pair", CONS_EV_WEAK);
        snprintf(v->reason, sizeof(v->reason),
                 "weak evidence: the two copies of a communicator of 2 processes differ and no majority names the "
                 "odd one: one of these is at fault, each attested node takes a share");
    } else if (!f->clear) {
        decide(v, "inconclusive", "no_majority", CONS_EV_NONE);
        snprintf(v->reason, sizeof(v->reason),
                 "no majority of the %d copies agrees: several copies differ at once, which one fault does not "
                 "explain; no node is named",
                 f->comm_size);
    } else if (f->unattested) {
        decide(v, "software", "no_hardware", CONS_EV_NONE);
        snprintf(v->reason, sizeof(v->reason),
                 "no attested hardware ran odd rank %d (a manifest's own host counts only where slurmstepd attested "
                 "the same node, or with trust_reported_hosts)",
                 f->odd_rank);
    } else if (f->n_odd > 1 && f->odd_nodes != 1) {
        decide(v, "software", "several", CONS_EV_NONE);
        snprintf(v->reason, sizeof(v->reason),
                 "%d odd ranks of %d on %d different nodes: a software or library bug is more likely than as many "
                 "simultaneous faults",
                 f->n_odd, f->comm_size, f->odd_nodes);
    } else if (f->n_odd > 1) {
        decide(v, "hardware", "odd_node", CONS_EV_STRONG);
        snprintf(v->reason, sizeof(v->reason),
                 "strong evidence against %.200s: the %d odd ranks of %d, all on that node, hold copies the majority "
                 "does not",
                 node, f->n_odd, f->comm_size);
    } else {
        decide(v, "hardware", "odd_rank", CONS_EV_STRONG);
        snprintf(v->reason, sizeof(v->reason),
                 "strong evidence against %.200s%s%.200s: rank %d's copy differs from the %d others of its "
                 "communicator, which agree",
                 node, f->gpu && *f->gpu ? " " : "", f->gpu ? f->gpu : "", f->odd_rank, f->comm_size - 1);
    }
}

void cons_ev_judge(const cons_ev_facts *f, cons_ev_verdict *v)
{
    memset(v, 0, sizeof(*v));
    hardware(f, v);
    if (v->weight == CONS_EV_NONE || f->repeat_runs < 1 || f->repeat_nodes < 2)
        return;
    /* The same disagreement in the program's other runs, on other nodes: one faulty node does not explain it. */
    int every = f->repeat_runs + 1 >= f->program_runs;
    if (!every && f->repeat_nodes < f->spread)
        return;
    decide(v, "software", "repeats", CONS_EV_NONE);
    if (every)
        snprintf(v->reason, sizeof(v->reason),
                 "the same record disagrees in every run of the program (%d runs, %d different nodes): software, not "
                 "a faulty node",
                 f->repeat_runs + 1, f->repeat_nodes);
    else
        snprintf(v->reason, sizeof(v->reason),
                 "the same record disagrees in %d runs of the program on %d different nodes (software_spread = %d): "
                 "software, not a faulty node",
                 f->repeat_runs + 1, f->repeat_nodes, f->spread);
}
