/* consensus_alert.h - the alert a run's consensus disagreement raises (kind consensus): to the run's attested user and
 * the site; a new one when a re-evaluation changes what it reports, which supersedes the old. */
#ifndef SERVER_FLEET_CONSENSUS_ALERT_H
#define SERVER_FLEET_CONSENSUS_ALERT_H

#include <stddef.h>

/* What the alert reports; strings borrowed. */
typedef struct cons_report {
    const char *run_key, *run_id, *job;
    long long step;
    const char *name; /* the record, "" while awaited */
    int occ;
    const char *comm_ranks, *odd_ranks; /* PostgreSQL int[] text: "{0,1,2,3}" */
    int comm_size, clear;
    const char *site;                /* the consensus_divergences site (JSON text), or NULL */
    const char *nodes, *gpus;        /* the odd ranks' attested nodes and GPUs, ','-separated */
    const char *cls, *code, *reason; /* the rule's verdict (server/rules/cons_evidence.h) */
    int evidence;                    /* the verdict weighs on the nodes: they are blamed */
} cons_report;

/* consensus_alert_enqueue - raise the run's alert inside the caller's transaction, unless one already reports the
 * same facts (the class, the rule, the odd ranks and their hardware: a record name that arrives later changes none
 * of them); a new report supersedes the open one. 0, or -1 with the database's message in `err`. */
int consensus_alert_enqueue(const cons_report *r, char *err, size_t cap);

/* consensus_alert_register - prepare the statements this module runs (db_register). */
void consensus_alert_register(void);

#endif /* SERVER_FLEET_CONSENSUS_ALERT_H */
