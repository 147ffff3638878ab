/* outcome.h - one run's outcome in its twin group, one pure rule: what that run did, not what its group did (the
 * healthy runs of a group with an odd run matched the majority).
 *
 * From the group's status (server/rules/status.h) and the run's place at the group's earliest divergence (the first
 * diverging step, its smallest seq, its lowest rank: the cause rule's earliest point, common/cause.h; read by
 * server/twins/glance.h), in order:
 *   matched           the group matched
 *   pending           the group is pending
 *   failed            the group is incomplete and the run failed (a rank's non-zero exit)
 *   incomplete        the group is incomplete and the run did not fail
 *   odd-one-out       the group diverged and the divergence names the run odd (the one run outside the majority, or
 *                     the resumed run of a restore difference)
 *   outside-majority  the group diverged and the run is outside the majority (with others: no one run is odd)
 *   majority          the group diverged and the run holds the majority's content
 *   diverged          the group diverged and nothing places the run (a pair, no content that more than half share,
 *                     or no entry there): it differs from a twin, and nothing says whose fault it is
 * The words are those of `lockstep job` (cli/outcome.h), which says the same per job. Tested from a table of cases
 * in tests/unit/test_run_outcome.c.
 */
#ifndef SERVER_RULES_OUTCOME_H
#define SERVER_RULES_OUTCOME_H

/* What a run's outcome rests on ("the divergence": the group's earliest one). */
typedef struct run_place {
    const char *status; /* the group's status (twin_status) */
    int failed;         /* the run failed: a rank's non-zero exit, or its status `failed` */
    int at_first;       /* the run has an entry at the divergence */
    int majority;       /* the divergence has a majority */
    int in_majority;    /* ... and the run holds its content */
    int named;          /* the divergence names an odd run */
    int is_named;       /* ... and it is this run */
} run_place;

/* Every value twin_outcome returns, NULL-terminated. */
extern const char *const RUN_OUTCOMES[];

/* twin_outcome - the outcome of the run `p` describes. Never fails. */
const char *twin_outcome(const run_place *p);

/* twin_outcome_why - what outcome `outcome` (one of RUN_OUTCOMES) means, in a few words for people (the
 * dashboard shows it on hover); "" for any other word. */
const char *twin_outcome_why(const char *outcome);

#endif /* SERVER_RULES_OUTCOME_H */
