/* outcome.h - one run's outcome in its twin group, one pure rule: what that run did, not what its group did (the healthy runs of a group with an odd run matched).
 *
 * From the group's status (server/compare/status.h) and the run's place at the group's earliest divergence (the first
 * diverging step, its smallest seq, its lowest rank: the cause rule's earliest point, common/cause.h; read by
 * server/compare/glance.h), in order:
 *   pending       the group is pending
 *   matched       the group matched; or it diverged and the run holds the majority's content at the first
 *                 divergence (more than half of the runs compared there share it), or another run is named the odd
 *                 one there (a restore difference names the resumed run) and this one is not
 *   odd           the group diverged and the run is outside the majority at the first divergence, or is the run
 *                 the divergence names (the odd one out)
 *   diverged      the group diverged and nothing says which run is at fault (a pair, or no content that more than
 *                 half share, and no run named)
 *   not-compared  the group diverged and the run has no entry at the first divergence (it was left out there)
 *   failed        the group is incomplete and the run failed (a rank's non-zero exit)
 *   incomplete    the group is incomplete and the run did not fail
 * Tested from a table of cases in tests/unit/test_outcome.c.
 */
#ifndef SERVER_COMPARE_OUTCOME_H
#define SERVER_COMPARE_OUTCOME_H

/* What a run's outcome rests on ("first divergence": the group's earliest one). */
typedef struct run_place {
    const char *status; /* the group's status (twin_status) */
    int failed;         /* the run failed: a rank's non-zero exit, or its status `failed` */
    int at_first;       /* the run has an entry at the first divergence */
    int majority;       /* the first divergence has a majority */
    int in_majority;    /* ... and the run holds its content */
    int named;          /* the first divergence names an odd run */
    int is_named;       /* ... and it is this run */
} run_place;

/* Every value twin_outcome returns, NULL-terminated. */
extern const char *const RUN_OUTCOMES[];

/* twin_outcome - the outcome of the run `p` describes. Never fails. */
const char *twin_outcome(const run_place *p);

#endif /* SERVER_COMPARE_OUTCOME_H */
