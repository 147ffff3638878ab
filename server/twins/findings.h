/* findings.h - what lockstepd finds of a twin group: its status, and for a diverged group the cause, origin ranks and
 * call site of its first divergence, with the manifest diff that may explain it.
 *
 * One function for every reader: the twin API (and through it the CLI and the dashboard), the group's
 * alert and the suspects rules all call findings_load, so they cannot tell different stories. The rules
 * themselves are pure and live apart: the status in server/rules/status.h, the cause in common/cause.h,
 * the manifest diff in common/json/mdiff.h; this module reads what they need from PostgreSQL.
 */
#ifndef SERVER_TWINS_FINDINGS_H
#define SERVER_TWINS_FINDINGS_H

#include <stddef.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "common/cause.h"
#include "common/json/mdiff.h"
#include "server/twins/divergence.h"
#include "server/rules/status.h"

typedef struct grp_findings {
    const char *status; /* twin_status: pending, diverged, incomplete, match */
    char status_why[512];
    json_t *runs;     /* [{"run_id", "job_id", "step_id", "user", "nodes", "command", "status", "start_step",
                         "ranks", "mode", "created_at", "ended_at", "attested_user", "exit_code",
                         "failed_ranks", "ended_ranks", "compared", "left_out", "outcome"}] in run order; exit_code: the
                         first failing rank's, 0 when every     ended rank exited 0, null while none ended; outcome:
                         server/rules/outcome.h */
    json_t *per_rank; /* every rank's first divergence, by step and rank: {"step", "rank", "name",
                         "occurrence", "seq", "kind", "odd_run_id", "runs", "committed_at", "detected_at",
                         "detection_ms", "site"}; kind "restore" for a restore difference (a resumed run's
                         state block, server/twins/restore.c), "logical": true and rank -1 for a logical
                         tensor of runs of different rank counts (server/twins/logical.c) */
    json_t *first;    /* the group's first divergence (the per_rank entry that stands for it) with "cause",
                         "cause_detail", "origin_ranks", "site", "suggest_ignore", "thin_evidence",
                         "configuration"; JSON null when nothing diverged */
    divergence *divs; /* per_rank's divergences, typed, in its order */
    int ndivs;
    const divergence *first_div; /* the one that stands for the group (first is its JSON), NULL when none */
    json_t *mdiff;               /* common/json/mdiff.h's diff of the group's runs */
    cause_kind cause;            /* CAUSE_NONE when nothing diverged */
    int origin[CAUSE_MAX_ORIGIN], norigin;
    int first_rank;    /* the rank standing for the group, -1 when none */
    int first_missing; /* its first divergence is a record some run lacks */
    int nranks;        /* ranks the runs recorded */
    long runs_total;   /* runs the group has (runs lists the first GROUP_MAX_RUNS) */
    int left_out;      /* runs the comparison leaves out (server/rules/members.h; each run's "left_out") */
    char suggest[300]; /* every-rank and local: the ignore pattern for the first divergence's call site, else "" */
    int local;         /* the cause's flags (common/cause.h): the difference stayed in one process */
    int root_input;    /* a broadcast's root held another value before it */
    char cause_why[768];
} grp_findings;

/* findings_register - prepare the statements findings_load runs. */
void findings_register(void);

/* findings_load - the findings of twin group `group` into `v` (the caller
 * releases it with findings_release). Runs on this thread's connection, so
 * inside a caller's transaction its reads are the transaction's. The
 * manifest diff is kept per group with the state it came from (the runs, the
 * manifests' count and newest arrival) and read again only when that changed. Returns 1
 * loaded, 0 when no run belongs to the group (v is then empty), -1 on a
 * database error (`err`). */
int findings_load(const char *group, grp_findings *v, char *err, size_t cap);

/* findings_facts - the facts twin_status decides from for `n` groups at once (names[i] into out[i]; a group
 * without runs gets zeros, hence "pending"): the statement findings_load reads its group's facts with (vd_facts:
 * facts only, at most GROUP_MAX_RUNS runs counted, in run order; a run with a failed rank counts as failed), and,
 * where the status turns on it (a diverged group with a failed run), `missing` by the cause rule itself
 * (common/cause.h) over the divergences at the group's first step; only where that answer turns on the manifest
 * diff does it ask findings_load for the group. For the twin-group list and its status filter, and the runs list's
 * group status. Returns 0, or -1 with the database's message in `err`. */
int findings_facts(const char *const *names, int n, twin_facts *out, char *err, size_t cap);

/* findings_md_runs - the first `max` runs of `runs` (run key, run id, job, step, user, nodes, command, ranks) with
 * their manifests from `man` (key, rank, manifest) into rs[0..n), as md_diff (common/json/mdiff.h) takes them; each
 * run's manifests array is new (the caller decrefs it). Returns n. */
int findings_md_runs(PGresult *runs, PGresult *man, md_run *rs, int max);

/* findings_release - drop what findings_load made; safe on empty findings. */
void findings_release(grp_findings *v);

#endif /* SERVER_TWINS_FINDINGS_H */
