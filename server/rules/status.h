/* status.h - a twin group's status, one pure rule: match only when the runs agree over the steps they share, recorded
 * something comparable and ended as expected.
 *
 * The statuses, in the order the rule decides them:
 *   pending     fewer than two runs (waiting for a twin), a run still running, or steps not compared yet
 *   diverged    a first divergence was found (whether or not a run also failed; but see incomplete)
 *   incomplete  nothing diverged (or, a run having failed, the first divergence is a record some run lacks:
 *               what the failure cut short), but a run failed (a rank's non-zero exit: its other ranks may never
 *               report, killed by the launcher) or, every run ended, they recorded nothing they share (said
 *               apart when a run made MPI calls Lockstep did not see), or the
 *               comparison reached steps whose records retention removed (their digests differ, the records that
 *               would say where are gone): nothing says they would have agreed. Its reason names the one that
 *               applies: runs that recorded nothing ("no records"), runs of different rank counts (compared on
 *               their tensor shards) of which some recorded no shard ("no shards"), or steps not in common.
 *   match       every run ended with exit 0, the runs share compared records, and every one agreed
 * Tested from a table of cases in tests/unit/test_status.c. The rule for runs that share no steps (inconclusive,
 * above) belongs here too: this is the one place a group's status is decided.
 */
#ifndef SERVER_RULES_STATUS_H
#define SERVER_RULES_STATUS_H

#include <stddef.h>

/* What the status rests on. */
typedef struct twin_facts {
    int nruns;
    int running;     /* runs not ended, none of whose ranks failed */
    int failed;      /* runs with a non-zero exit on some rank (ended or not) */
    int diverged;    /* a first divergence is stored */
    int missing;     /* the group's first divergence is a record some run lacks (cause missing) */
    long unchecked;  /* ranks whose shared, complete steps are not all compared yet */
    long comparable; /* ranks on which two runs or more recorded steps they share */
    long awaiting;   /* ranks whose comparison waits for records an agent held back (digest streaming): their
                        digests differ (step digests from a twin's, or a consensus window's within a run) */
    long removed;    /* ranks whose comparison stopped at a step whose records retention removed from a run */
    /* Why runs that ended share nothing to compare (only read when comparable is 0): */
    int silent;               /* runs that recorded nothing at all */
    int min_ranks, max_ranks; /* the runs' registered rank counts (0: not known) */
    int shardless;            /* when the rank counts differ: runs that recorded no tensor shard */
    /* runs with a rank that initialized MPI and recorded none of its calls (agent/mpiseen.h): without
     * liblockstep_mpi.so as their MPI (unloaded), or with it, the calls taking a way in it does not see (unseen) */
    int mpi_unloaded, mpi_unseen;
} twin_facts;

/* Every value twin_status returns, NULL-terminated (GET /api/v1/twins?status= accepts these). */
extern const char *const TWIN_STATUSES[];

/* twin_status - "pending", "diverged", "incomplete" or "match" for `f`, with
 * why in `why` (one sentence for people). Never fails. */
const char *twin_status(const twin_facts *f, char *why, size_t cap);

#endif /* SERVER_RULES_STATUS_H */
