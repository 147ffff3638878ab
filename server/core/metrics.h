/* metrics.h - lockstepd's counters and latency histograms, served as Prometheus text at /metrics. */
#ifndef SERVER_CORE_METRICS_H
#define SERVER_CORE_METRICS_H

#include <stddef.h>
#include <stdint.h>

enum metric_route {
    MR_RUNS_CREATE,
    MR_MANIFEST,
    MR_RECORDS,
    MR_END,
    MR_READ,
    MR_HEALTH,
    MR_METRICS,
    MR_STATIC,
    MR_ADMIN,
    MR_OTHER,
    MR_COUNT
};

/* metrics_request - count one finished request on `route` with HTTP
 * `status`, which took `seconds`. Thread-safe, lock-free. */
void metrics_request(int route, int status, double seconds);

/* metrics_abandoned - count one request on `route` that ended before any
 * answer was queued: the client went away, or its connection timed out. */
void metrics_abandoned(int route);

/* metrics_conn_timeout - count `n` connections closed for sending their
 * headers (MT_HEADERS) or their body (MT_BODY) too slowly. */
enum metric_timeout { MT_HEADERS, MT_BODY, MT_COUNT };
void metrics_conn_timeout(int phase, unsigned long n);

/* metrics_batch - count one ingested batch of `records` records
 * (`duplicate`: acknowledged, not stored again). */
void metrics_batch(uint64_t records, int duplicate);

/* metrics_bundle - count one bundle taken, of `batches` batches. */
void metrics_bundle(size_t batches);

/* metrics_divergence - count one stored divergence found `seconds` after
 * the commit of the batch that showed it. */
void metrics_divergence(double seconds);

/* metrics_alert_delivery - count one attempt to deliver an alert to a sink, by its outcome. */
enum metric_alert { MA_DELIVERED, MA_RETRIED, MA_GIVEN_UP, MA_COUNT };
void metrics_alert_delivery(int outcome);

/* metrics_alert_resends - count `n` open alerts re-sent to Alertmanager in one request, sent (`ok`) or not. */
void metrics_alert_resends(int ok, unsigned long n);

/* metrics_held_refused - count held records (digest streaming) that do not answer their step digest: a batch
 * refused at ingest (MH_INGEST), or a step the comparison would not take as agreeing (MH_COMPARE). */
enum metric_held { MH_INGEST, MH_COMPARE, MH_COUNT };
void metrics_held_refused(int where);

/* metrics_compare_sweep - the comparison's last sweep for ranks no notice brought (cmp_active): what it took, and the
 * period to the next one that follows from it (server/twins/compare.c). */
void metrics_compare_sweep(double took_s, double period_s);

/* metrics_consensus_held - the consensus windows lockstepd holds in memory until their groups report
 * (server/consensus/cons_mem.h): windows and member digests held, and digests a full table did not take. */
void metrics_consensus_held(size_t windows, size_t digests, uint64_t unheld);

/* Why the comparison's memory handed a rank to the database's look (the label `reason` of
 * lockstepd_compare_memory_handed_total). */
enum metric_handed {
    MHAND_ONE_RUN,   /* "one_run": one run of the rank so far, nothing to compare it with */
    MHAND_LOOK_ONLY, /* "look_only": state blocks, more runs than memory compares, or memory full */
    MHAND_NO_STEP,   /* "no_step": a run with no step here yet */
    MHAND_APART,     /* "apart": no step every run completed is in memory (a run just began, or they are apart) */
    MHAND_UNEVEN,    /* "uneven": a step some runs hold and others do not */
    MHAND_DIFFER,    /* "differ": a step whose count, digest or inputs differ: the look says how */
    MHAND_REFUSED,   /* "refused": the database did not take the mark (lockstep_cmp_marks says when) */
    MHAND_COUNT
};

/* metrics_compare_end - a rank's end the comparison's memory vouched for (`vouched`: the look queued, to take with
 * other ranks), or one looked at before the reply. */
void metrics_compare_end(int vouched);

/* metrics_compare_memory - the comparison's memory (server/twins/cmp_mem.h): the run-ranks it holds, how many ranks a
 * flush marked, how many it handed to the look, by why, how many marks the database put off to the next flush (a
 * busy lock, a count not settled), and how many steps of ended twins it read from PostgreSQL (added to the
 * totals). */
void metrics_compare_memory(size_t run_ranks, unsigned long marked, const unsigned long handed[MHAND_COUNT],
                            const unsigned long put_off[2], unsigned long twin_steps_read);

/* metrics_leases - the twin groups whose comparison lease this instance holds now; metrics_lease_takeover - it took
 * over a lease another instance let expire; metrics_forwarded - forwards sent to lease holders, received from other
 * instances, and dropped (server/peers/forward.c). */
void metrics_leases(size_t held);
void metrics_lease_takeover(void);
void metrics_forwarded(unsigned long sent, unsigned long received, unsigned long dropped);

/* metrics_db_group - one transaction of the database workers, storing `n` deferred requests. */
void metrics_db_group(size_t n);

/* metrics_db_error - count one failed database call or connection attempt. */
void metrics_db_error(void);

/* metrics_pg_up, metrics_pg_restart - the embedded PostgreSQL: whether it
 * runs (the gauge appears once lockstepd watches one), and one restart that
 * brought it back. */
void metrics_pg_up(int up);
void metrics_pg_restart(void);

/* metrics_render - the Prometheus text exposition of every metric, as a new
 * malloc'd string (caller frees). */
char *metrics_render(void);

#endif /* SERVER_CORE_METRICS_H */
