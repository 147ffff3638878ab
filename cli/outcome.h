/* outcome.h - one job's own outcome in a twin group (odd one out, matched the majority, diverged from its twin,
 * matched, pending, failed), as `lockstep job` prints it and the slurmctld epilog writes it into the job's
 * AdminComment: each job of a group gets its own, never another run's. Tested by tests/unit/test_outcome.c. */
#ifndef CLI_OUTCOME_H
#define CLI_OUTCOME_H

#include <jansson.h>
#include <stddef.h>

/* A job's outcome in one twin group. */
typedef struct job_outcome {
    const char *kind; /* matched, pending, odd-one-out, outside-majority, majority, diverged, failed, incomplete */
    char text[700];   /* "GROUP odd one out at step 6, rank 1 (linear.weight): origin, hardware" */
    int needs_look;   /* the group diverged or is incomplete: its dashboard link is worth printing */
} job_outcome;

/* outcome_of - the outcome of job `job`'s runs in twin group `name`, from `twin` (GET /api/v1/twins/NAME's
 * document, borrowed). `node` (NULL when unknown) is the node that ran the first divergence's rank in this job's
 * run: named when no majority can say which run is off. Never fails: an unknown status is printed as it is. */
void outcome_of(json_t *twin, const char *name, const char *job, const char *node, job_outcome *out);

/* outcome_run_to_place - the run of job `job` whose node for the first divergence's rank would tell its outcome
 * apart (the group diverged and no majority places its runs), or NULL; borrowed from `twin`. Its rank is
 * *rank. */
const char *outcome_run_to_place(json_t *twin, const char *job, int *rank);

#endif /* CLI_OUTCOME_H */
