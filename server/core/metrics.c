/* metrics.c - lockstepd's counters and latency histograms, served as Prometheus text at /metrics. */
#include "server/core/metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "server/core/xalloc.h"

static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define N_BOUNDS (sizeof(bounds) / sizeof(bounds[0]))

typedef struct histogram {
    atomic_ulong buckets[N_BOUNDS + 1];
    atomic_ulong count;
    atomic_ulong sum_us;
} histogram;

static const char *const route_names[MR_COUNT] = {"runs_create", "manifest", "records", "end",   "read",
                                                  "health",      "metrics",  "static",  "admin", "other"};
static atomic_ulong requests[MR_COUNT][6]; /* by status class 1xx..5xx, [0] unused */
static histogram request_seconds[MR_COUNT];
static atomic_ulong abandoned[MR_COUNT];
static atomic_ulong conn_timeouts[MT_COUNT];
static histogram detect_seconds;
static atomic_ulong records_total, batches_stored, batches_duplicate, divergences_total, db_errors, bundles, bundled;
static atomic_ulong held_refused[MH_COUNT];
static atomic_ulong cons_windows, cons_digests, cons_unheld;
static atomic_ulong mem_cells, mem_marked, mem_handed[MHAND_COUNT], mem_put_off[2], mem_read;
static atomic_ulong end_looks[2]; /* ranks' ends: looked at before the reply, vouched for by memory */
static const char *const handed_reasons[MHAND_COUNT] = {"one_run", "look_only", "no_step", "apart",
                                                        "uneven",  "differ",    "refused"};
static atomic_ulong db_groups, db_grouped; /* the database workers' groups, and the requests in them */
static atomic_ulong sweep_took_us, sweep_period_ms;
static atomic_ulong leases_held, lease_takeovers, fwd_sent, fwd_received, fwd_dropped;

static void observe(histogram *h, double s)
{
    size_t i = 0;
    while (i < N_BOUNDS && s > bounds[i])
        i++;
    atomic_fetch_add(&h->buckets[i], 1);
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_us, (unsigned long)(s * 1e6));
}

void metrics_request(int route, int status, double seconds)
{
    if (route < 0 || route >= MR_COUNT)
        route = MR_OTHER;
    int cls = status / 100;
    if (cls < 1 || cls > 5)
        cls = 5;
    atomic_fetch_add(&requests[route][cls], 1);
    observe(&request_seconds[route], seconds);
}

void metrics_abandoned(int route)
{
    if (route < 0 || route >= MR_COUNT)
        route = MR_OTHER;
    atomic_fetch_add(&abandoned[route], 1);
}

void metrics_conn_timeout(int phase, unsigned long n)
{
    if (phase >= 0 && phase < MT_COUNT)
        atomic_fetch_add(&conn_timeouts[phase], n);
}

void metrics_bundle(size_t batches)
{
    atomic_fetch_add(&bundles, 1);
    atomic_fetch_add(&bundled, batches);
}

void metrics_batch(uint64_t records, int duplicate)
{
    if (duplicate) {
        atomic_fetch_add(&batches_duplicate, 1);
        return;
    }
    atomic_fetch_add(&batches_stored, 1);
    atomic_fetch_add(&records_total, records);
}

static atomic_int pg_up = -1; /* -1: no embedded cluster watched */
static atomic_ulong pg_restarts;

void metrics_pg_up(int up)
{
    atomic_store(&pg_up, up ? 1 : 0);
}

void metrics_pg_restart(void)
{
    atomic_fetch_add(&pg_restarts, 1);
}

static atomic_ulong alert_deliveries[MA_COUNT];
static const char *const alert_outcomes[MA_COUNT] = {"delivered", "retried", "given_up"};

void metrics_alert_delivery(int outcome)
{
    if (outcome >= 0 && outcome < MA_COUNT)
        atomic_fetch_add(&alert_deliveries[outcome], 1);
}

static atomic_ulong alert_resends[2]; /* [0] failed, [1] sent */

void metrics_alert_resends(int ok, unsigned long n)
{
    atomic_fetch_add(&alert_resends[ok ? 1 : 0], n);
}

void metrics_held_refused(int where)
{
    if (where >= 0 && where < MH_COUNT)
        atomic_fetch_add(&held_refused[where], 1);
}

void metrics_db_error(void)
{
    atomic_fetch_add(&db_errors, 1);
}

void metrics_db_group(size_t n)
{
    atomic_fetch_add(&db_groups, 1);
    atomic_fetch_add(&db_grouped, n);
}

void metrics_divergence(double seconds)
{
    atomic_fetch_add(&divergences_total, 1);
    observe(&detect_seconds, seconds);
}

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

__attribute__((format(printf, 2, 3))) static void put(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap * 2 + (size_t)(n > 0 ? n : 0);
        b->p = xrealloc(b->p, b->cap);
    }
}

static void put_histogram(sbuf *b, const char *name, const char *labels, histogram *h)
{
    unsigned long cum = 0;
    const char *sep = *labels ? "," : "";
    for (size_t i = 0; i <= N_BOUNDS; i++) {
        cum += atomic_load(&h->buckets[i]);
        if (i < N_BOUNDS)
            put(b, "%s_bucket{%s%sle=\"%g\"} %lu\n", name, labels, sep, bounds[i], cum);
        else
            put(b, "%s_bucket{%s%sle=\"+Inf\"} %lu\n", name, labels, sep, cum);
    }
    put(b, "%s_sum{%s} %.6f\n", name, labels, atomic_load(&h->sum_us) / 1e6);
    put(b, "%s_count{%s} %lu\n", name, labels, atomic_load(&h->count));
}

void metrics_consensus_held(size_t windows, size_t digests, uint64_t unheld)
{
    atomic_store(&cons_windows, windows);
    atomic_store(&cons_digests, digests);
    atomic_store(&cons_unheld, unheld);
}

void metrics_compare_memory(size_t run_ranks, unsigned long marked, const unsigned long handed[MHAND_COUNT],
                            const unsigned long put_off[2], unsigned long twin_steps_read)
{
    atomic_store(&mem_cells, run_ranks);
    atomic_fetch_add(&mem_marked, marked);
    atomic_fetch_add(&mem_put_off[0], put_off[0]);
    atomic_fetch_add(&mem_put_off[1], put_off[1]);
    atomic_fetch_add(&mem_read, twin_steps_read);
    for (int i = 0; i < MHAND_COUNT; i++)
        atomic_fetch_add(&mem_handed[i], handed[i]);
}

void metrics_compare_end(int vouched)
{
    atomic_fetch_add(&end_looks[vouched ? 1 : 0], 1);
}

/* put_compare_memory - the comparison's memory (metrics_compare_memory, metrics_compare_end). */
static void put_compare_memory(sbuf *b)
{
    put(b,
        "# HELP lockstepd_compare_memory_run_ranks Run-ranks whose recent step digests the comparison holds in "
        "memory.\n"
        "# TYPE lockstepd_compare_memory_run_ranks gauge\n"
        "lockstepd_compare_memory_run_ranks %lu\n"
        "# HELP lockstepd_compare_memory_marked_total Ranks whose steps were found equal in memory and marked.\n"
        "# TYPE lockstepd_compare_memory_marked_total counter\n"
        "lockstepd_compare_memory_marked_total %lu\n"
        "# HELP lockstepd_compare_memory_read_total Steps of ended twins the comparison's memory read from "
        "PostgreSQL to compare a run that streams alone with them.\n"
        "# TYPE lockstepd_compare_memory_read_total counter\n"
        "lockstepd_compare_memory_read_total %lu\n"
        "# HELP lockstepd_compare_memory_put_off_total Marks the database put off to memory's next flush, by why: "
        "the rank's lock was busy (a batch committed on it, or a look compared it), or a member's count was not "
        "settled (a batch committed that memory had not counted yet). After 4 flushes in a row, the look.\n"
        "# TYPE lockstepd_compare_memory_put_off_total counter\n"
        "lockstepd_compare_memory_put_off_total{reason=\"busy\"} %lu\n"
        "lockstepd_compare_memory_put_off_total{reason=\"count\"} %lu\n"
        "# HELP lockstepd_compare_memory_handed_total Ranks memory handed to the database's look, by why: one run "
        "so far, state or a full memory (look_only), a run with no step yet, no step every run completed in memory "
        "(apart), a step some runs lack (uneven), a step that differs, a mark the database refused.\n"
        "# TYPE lockstepd_compare_memory_handed_total counter\n",
        atomic_load(&mem_cells), atomic_load(&mem_marked), atomic_load(&mem_read), atomic_load(&mem_put_off[0]),
        atomic_load(&mem_put_off[1]));
    for (int i = 0; i < MHAND_COUNT; i++)
        put(b, "lockstepd_compare_memory_handed_total{reason=\"%s\"} %lu\n", handed_reasons[i],
            atomic_load(&mem_handed[i]));
    put(b,
        "# HELP lockstepd_compare_ends_total Ranks' ends, by how the steps they complete were compared: looked at in "
        "the database before the end's reply (look), or vouched for by the comparison's memory, the look queued to "
        "take with other ranks (memory).\n"
        "# TYPE lockstepd_compare_ends_total counter\n"
        "lockstepd_compare_ends_total{way=\"look\"} %lu\n"
        "lockstepd_compare_ends_total{way=\"memory\"} %lu\n",
        atomic_load(&end_looks[0]), atomic_load(&end_looks[1]));
}

void metrics_compare_sweep(double took_s, double period_s)
{
    atomic_store(&sweep_took_us, (unsigned long)(took_s * 1e6));
    atomic_store(&sweep_period_ms, (unsigned long)(period_s * 1e3));
}

/* put_sweep - the comparison's sweep (metrics_compare_sweep). */
static void put_sweep(sbuf *b)
{
    put(b,
        "# HELP lockstepd_compare_sweep_seconds What the comparison's last sweep for ranks no notice brought took "
        "(it reads every rank with recent progress).\n"
        "# TYPE lockstepd_compare_sweep_seconds gauge\n"
        "lockstepd_compare_sweep_seconds %.6f\n"
        "# HELP lockstepd_compare_sweep_period_seconds The period of that sweep: 5 s, or 20 times what the last one "
        "took (60 s at most).\n"
        "# TYPE lockstepd_compare_sweep_period_seconds gauge\n"
        "lockstepd_compare_sweep_period_seconds %.3f\n",
        (double)atomic_load(&sweep_took_us) / 1e6, (double)atomic_load(&sweep_period_ms) / 1e3);
}

void metrics_leases(size_t held)
{
    atomic_store(&leases_held, held);
}

void metrics_lease_takeover(void)
{
    atomic_fetch_add(&lease_takeovers, 1);
}

void metrics_forwarded(unsigned long sent, unsigned long received, unsigned long dropped)
{
    atomic_fetch_add(&fwd_sent, sent);
    atomic_fetch_add(&fwd_received, received);
    atomic_fetch_add(&fwd_dropped, dropped);
}

/* put_leases - the comparison's leases and what the instances forward to their holders (metrics_leases,
 * metrics_forwarded). */
static void put_leases(sbuf *b)
{
    put(b,
        "# HELP lockstepd_compare_leases Twin groups whose comparison lease this lockstepd holds.\n"
        "# TYPE lockstepd_compare_leases gauge\n"
        "lockstepd_compare_leases %lu\n"
        "# HELP lockstepd_compare_lease_takeovers_total Leases this lockstepd took over after another instance let "
        "them expire.\n"
        "# TYPE lockstepd_compare_lease_takeovers_total counter\n"
        "lockstepd_compare_lease_takeovers_total %lu\n"
        "# HELP lockstepd_compare_forwarded_total Batches' step digests and rank notices this lockstepd forwarded "
        "to the holder of their group's lease.\n"
        "# TYPE lockstepd_compare_forwarded_total counter\n"
        "lockstepd_compare_forwarded_total %lu\n"
        "# HELP lockstepd_compare_forward_received_total Forwarded step digests and rank notices this lockstepd "
        "received for groups it compares.\n"
        "# TYPE lockstepd_compare_forward_received_total counter\n"
        "lockstepd_compare_forward_received_total %lu\n"
        "# HELP lockstepd_compare_forward_dropped_total Forwards not sent (the queue was full or the database "
        "failed): their ranks are compared by the holder's sweep.\n"
        "# TYPE lockstepd_compare_forward_dropped_total counter\n"
        "lockstepd_compare_forward_dropped_total %lu\n",
        atomic_load(&leases_held), atomic_load(&lease_takeovers), atomic_load(&fwd_sent), atomic_load(&fwd_received),
        atomic_load(&fwd_dropped));
}

/* put_db_groups - the database workers' groups (metrics_db_group). */
static void put_db_groups(sbuf *b)
{
    put(b,
        "# HELP lockstepd_db_groups_total Transactions the database workers ran for deferred requests (record "
        "batches), each storing one or more.\n"
        "# TYPE lockstepd_db_groups_total counter\n"
        "lockstepd_db_groups_total %lu\n"
        "# HELP lockstepd_db_group_requests_total Requests those transactions stored: divided by the groups, the "
        "batches one commit carries.\n"
        "# TYPE lockstepd_db_group_requests_total counter\n"
        "lockstepd_db_group_requests_total %lu\n",
        atomic_load(&db_groups), atomic_load(&db_grouped));
}

/* put_consensus_held - the consensus windows held in memory (metrics_consensus_held). */
static void put_consensus_held(sbuf *b)
{
    put(b,
        "# HELP lockstepd_consensus_windows_held Consensus windows held in memory until every member of their "
        "group reports.\n"
        "# TYPE lockstepd_consensus_windows_held gauge\n"
        "lockstepd_consensus_windows_held %lu\n"
        "# HELP lockstepd_consensus_digests_held Member digests those windows hold.\n"
        "# TYPE lockstepd_consensus_digests_held gauge\n"
        "lockstepd_consensus_digests_held %lu\n"
        "# HELP lockstepd_consensus_digests_unheld_total Consensus digests a full table did not hold: their windows "
        "are judged from the database, every 10 s.\n"
        "# TYPE lockstepd_consensus_digests_unheld_total counter\n"
        "lockstepd_consensus_digests_unheld_total %lu\n",
        atomic_load(&cons_windows), atomic_load(&cons_digests), atomic_load(&cons_unheld));
}

char *metrics_render(void)
{
    sbuf b = {xmalloc(8192), 0, 8192};
    put(&b,
        "# HELP lockstep_build_info The release and commit this lockstepd was built from (always 1).\n"
        "# TYPE lockstep_build_info gauge\n"
        "lockstep_build_info{version=\"%s\",commit=\"%s\"} 1\n",
        version_release(), version_commit());
    put(&b, "# HELP lockstepd_http_requests_total HTTP requests by route and status class.\n"
            "# TYPE lockstepd_http_requests_total counter\n");
    for (int r = 0; r < MR_COUNT; r++)
        for (int c = 1; c <= 5; c++) {
            unsigned long v = atomic_load(&requests[r][c]);
            if (v)
                put(&b, "lockstepd_http_requests_total{route=\"%s\",code=\"%dxx\"} %lu\n", route_names[r], c, v);
        }
    put(&b, "# HELP lockstepd_http_requests_abandoned_total Requests that ended before an answer: the client went "
            "away or its connection timed out (not counted in lockstepd_http_requests_total).\n"
            "# TYPE lockstepd_http_requests_abandoned_total counter\n");
    for (int r = 0; r < MR_COUNT; r++) {
        unsigned long v = atomic_load(&abandoned[r]);
        if (v)
            put(&b, "lockstepd_http_requests_abandoned_total{route=\"%s\"} %lu\n", route_names[r], v);
    }
    put(&b,
        "# HELP lockstepd_http_connection_timeouts_total Connections closed for sending their headers or body "
        "too slowly (header_timeout, body_timeout).\n"
        "# TYPE lockstepd_http_connection_timeouts_total counter\n"
        "lockstepd_http_connection_timeouts_total{phase=\"headers\"} %lu\n"
        "lockstepd_http_connection_timeouts_total{phase=\"body\"} %lu\n",
        atomic_load(&conn_timeouts[MT_HEADERS]), atomic_load(&conn_timeouts[MT_BODY]));
    put(&b, "# HELP lockstepd_http_request_seconds Time from a request's arrival to its response.\n"
            "# TYPE lockstepd_http_request_seconds histogram\n");
    for (int r = 0; r < MR_COUNT; r++) {
        if (!atomic_load(&request_seconds[r].count))
            continue;
        char labels[64];
        snprintf(labels, sizeof(labels), "route=\"%s\"", route_names[r]);
        put_histogram(&b, "lockstepd_http_request_seconds", labels, &request_seconds[r]);
    }
    put(&b,
        "# HELP lockstepd_records_ingested_total Records stored.\n"
        "# TYPE lockstepd_records_ingested_total counter\n"
        "lockstepd_records_ingested_total %lu\n"
        "# HELP lockstepd_batches_total Batches acknowledged: stored, or duplicates of stored ones.\n"
        "# TYPE lockstepd_batches_total counter\n"
        "lockstepd_batches_total{result=\"stored\"} %lu\n"
        "lockstepd_batches_total{result=\"duplicate\"} %lu\n"
        "# HELP lockstepd_bundles_total Bundles taken (application/x-lockstep-bundle: several ranks' batches in one "
        "request, as a node relay posts them).\n"
        "# TYPE lockstepd_bundles_total counter\n"
        "lockstepd_bundles_total %lu\n"
        "# HELP lockstepd_bundled_batches_total Batches those bundles carried.\n"
        "# TYPE lockstepd_bundled_batches_total counter\n"
        "lockstepd_bundled_batches_total %lu\n"
        "# HELP lockstepd_divergences_total Divergences stored (first per group and rank, or an earlier one).\n"
        "# TYPE lockstepd_divergences_total counter\n"
        "lockstepd_divergences_total %lu\n"
        "# HELP lockstepd_db_errors_total Failed database calls and connection attempts.\n"
        "# TYPE lockstepd_db_errors_total counter\n"
        "lockstepd_db_errors_total %lu\n"
        "# HELP lockstepd_detection_seconds From the commit of the batch that shows a divergence to its storage.\n"
        "# TYPE lockstepd_detection_seconds histogram\n",
        atomic_load(&records_total), atomic_load(&batches_stored), atomic_load(&batches_duplicate),
        atomic_load(&bundles), atomic_load(&bundled), atomic_load(&divergences_total), atomic_load(&db_errors));
    put_histogram(&b, "lockstepd_detection_seconds", "", &detect_seconds);
    put(&b,
        "# HELP lockstepd_held_records_refused_total Held records (digest streaming) that did not answer their "
        "step digest: batches refused at ingest, and steps the comparison would not take as agreeing.\n"
        "# TYPE lockstepd_held_records_refused_total counter\n"
        "lockstepd_held_records_refused_total{at=\"ingest\"} %lu\n"
        "lockstepd_held_records_refused_total{at=\"compare\"} %lu\n",
        atomic_load(&held_refused[MH_INGEST]), atomic_load(&held_refused[MH_COMPARE]));
    put_consensus_held(&b);
    put_compare_memory(&b);
    put_db_groups(&b);
    put_leases(&b);
    put_sweep(&b);
    put(&b, "# HELP lockstepd_alert_deliveries_total Attempts to deliver an alert to a sink, by outcome (given_up: "
            "still failing alert_give_up_s after the alert was raised, no more attempts).\n"
            "# TYPE lockstepd_alert_deliveries_total counter\n");
    for (int o = 0; o < MA_COUNT; o++)
        put(&b, "lockstepd_alert_deliveries_total{outcome=\"%s\"} %lu\n", alert_outcomes[o],
            atomic_load(&alert_deliveries[o]));
    put(&b,
        "# HELP lockstepd_alert_resends_total Open alerts re-sent to Alertmanager (every alert_resend_s), by outcome.\n"
        "# TYPE lockstepd_alert_resends_total counter\n"
        "lockstepd_alert_resends_total{outcome=\"sent\"} %lu\n"
        "lockstepd_alert_resends_total{outcome=\"failed\"} %lu\n",
        atomic_load(&alert_resends[1]), atomic_load(&alert_resends[0]));
    if (atomic_load(&pg_up) >= 0)
        put(&b,
            "# HELP lockstepd_embedded_postgres_up Whether the embedded PostgreSQL runs (1) or not (0).\n"
            "# TYPE lockstepd_embedded_postgres_up gauge\n"
            "lockstepd_embedded_postgres_up %d\n"
            "# HELP lockstepd_embedded_postgres_restarts_total Restarts of the embedded PostgreSQL after it died.\n"
            "# TYPE lockstepd_embedded_postgres_restarts_total counter\n"
            "lockstepd_embedded_postgres_restarts_total %lu\n",
            atomic_load(&pg_up), atomic_load(&pg_restarts));
    return b.p;
}
