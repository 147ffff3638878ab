/* test_failover.c - lockstepd on PostgreSQL's own replication: a primary and a synchronous streaming standby on
 * loopback. The read API answers from the standby (--read-db) and says how far behind it is. Then lockstepd reaches
 * both through one multi-host connection string (target_session_attrs=read-write), the primary is killed -9 under
 * ingest and the standby promoted: no acknowledged batch is lost or stored twice, ingest resumes by itself, and the
 * twin comparison goes on (a divergence made after the failover is found at its step). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "tests/integration/common.h"

#define LOADERS 3

static h_pg primary, standby;

/* sql - one statement on `conninfo`; its first value (malloc'd, "" for none) or NULL on an error. */
static char *sql(const char *conninfo, const char *q)
{
    PGconn *c = PQconnectdb(conninfo);
    PGresult *r = PQexec(c, q);
    char *v = NULL;
    if (PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK)
        v = strdup(PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
    else
        fprintf(stderr, "failover: %s: %s", q, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return v;
}

/* wait_for - poll `q` on `conninfo` until its first value is `want`, for 20 s at most. 0 when it was. */
static int wait_for(const char *conninfo, const char *q, const char *want)
{
    for (int i = 0; i < 200; i++) {
        char *v = sql(conninfo, q);
        int ok = v && !strcmp(v, want);
        free(v);
        if (ok)
            return 0;
        usleep(100000);
    }
    return -1;
}

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&primary) != 0 || h_pg_standby(&primary, &standby, "lsstandby") != 0)
        return -1;
    char *v = sql(primary.conninfo, "ALTER SYSTEM SET synchronous_standby_names = 'lsstandby'");
    free(v);
    v = sql(primary.conninfo, "SELECT pg_reload_conf()");
    free(v);
    /* the standby streams and the primary waits for it at every commit */
    return wait_for(primary.conninfo, "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'lsstandby'",
                    "sync");
}

static int teardown(void **state)
{
    (void)state;
    h_pg_stop(&standby);
    h_pg_stop(&primary);
    return 0;
}

/* get_json - GET `path`; the answer (the caller decrefs), failing the test on a status other than `want`. */
static json_t *get_json(const h_srv *srv, const char *path, long want)
{
    json_t *o = NULL;
    long code = it_call(srv, "GET", path, NULL, NULL, &o);
    if (code != want)
        print_message("GET %s: %ld\n", path, code);
    assert_int_equal(code, want);
    return o;
}

/* diverged_twins - twin runs JOB and JOB+1 of group `group`, one rank each, 5 steps; the second's record 2 differs
 * from step 3 on; both ended, and the group said diverged. */
static void diverged_twins(const h_srv *srv, int job, const char *group, char *run_a, char *run_b)
{
    char ja[16], jb[16];
    snprintf(ja, sizeof(ja), "%d", job);
    snprintf(jb, sizeof(jb), "%d", job + 1);
    assert_int_equal(it_register(srv, ja, group, 1, 0, NULL, run_a), 0);
    assert_int_equal(it_register(srv, jb, group, 1, 0, NULL, run_b), 0);
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(srv, run_a, 0, 0, 0, 5, 4, -1, -1, -1, -1, &seq, NULL), 200);
    seq = 0;
    assert_int_equal(it_post_steps(srv, run_b, 0, 0, 0, 5, 4, 3, 2, -1, -1, &seq, NULL), 200);
    assert_int_equal(it_end(srv, run_a, 0, NULL), 200);
    assert_int_equal(it_end(srv, run_b, 0, NULL), 200);
}

/* Reads from the standby (--read-db): the read API's answers say they come from it and how far behind it is; every
 * route of reads runs there (none writes); a standby whose replay is paused shows its lag and not what the primary
 * committed since; a standby that is down leaves the reads to the primary. */
static void test_reads_from_standby(void **state)
{
    (void)state;
    h_srv srv;
    const char *args[] = {"--db", primary.conninfo, "--read-db", standby.conninfo, NULL};
    assert_int_equal(h_srv_start(&srv, args), 0);
    char run_a[40], run_b[40], path[300];
    diverged_twins(&srv, 690, "rd-g", run_a, run_b);
    json_t *o = it_wait_group(&srv, "rd-g", "diverged"); /* read from the standby, once it replayed the divergence */
    assert_string_equal(json_string_value(json_object_get(o, "status")) ?: "", "diverged");
    assert_string_equal(json_string_value(json_object_get(o, "read_from")) ?: "", "replica");
    assert_true(json_is_number(json_object_get(o, "read_lag_s")));
    json_decref(o);

    /* every route of reads answers from the standby */
    const char *reads[] = {"/api/v1/alerts",
                           "/api/v1/runs/%s/consensus",
                           "/api/v1/consensus",
                           "/api/v1/twins/rd-g/narrows",
                           "/api/v1/runs/%s/checkpoints",
                           "/api/v1/nodes",
                           "/api/v1/runs",
                           "/api/v1/runs/%s",
                           "/api/v1/runs/%s/records?rank=0&step=3",
                           "/api/v1/runs/%s/series?name=loss",
                           "/api/v1/fleet/timeline?days=14",
                           "/api/v1/twins/rd-g/deltas?rank=0&name=loss",
                           "/api/v1/twins/rd-g/records?rank=0&step=3",
                           "/api/v1/twins/rd-g/steps?rank=0",
                           "/api/v1/twins/rd-g",
                           "/api/v1/twins/rd-g/manifest-diff",
                           "/api/v1/twins"};
    for (size_t i = 0; i < sizeof(reads) / sizeof(*reads); i++) {
        snprintf(path, sizeof(path), reads[i], run_b);
        o = get_json(&srv, path, 200);
        if (json_is_object(o))
            assert_string_equal(json_string_value(json_object_get(o, "read_from")) ?: "", "replica");
        json_decref(o);
    }
    assert_int_equal(it_count_lines(srv.log, "cannot run on the read replica"), 0);
    o = get_json(&srv, "/api/v1/health", 200);
    assert_true(json_is_true(json_object_get(json_object_get(o, "read_replica"), "reachable")));
    json_decref(o);

    /* the standby's replay paused: what the primary commits meanwhile is not read, and the lag says so */
    char *v = sql(standby.conninfo, "SELECT pg_wal_replay_pause()");
    free(v);
    sleep(1);
    char run_c[40];
    assert_int_equal(it_register(&srv, "692", "rd-h", 1, 0, NULL, run_c), 0);
    sleep(2);
    snprintf(path, sizeof(path), "/api/v1/runs/%s", run_c);
    o = get_json(&srv, path, 404); /* not on the standby yet */
    json_decref(o);
    o = get_json(&srv, "/api/v1/runs", 200);
    print_message("replica: replay paused, lag %.1f s\n", json_real_value(json_object_get(o, "read_lag_s")));
    assert_true(json_real_value(json_object_get(o, "read_lag_s")) >= 1.0);
    json_decref(o);
    v = sql(standby.conninfo, "SELECT pg_wal_replay_resume()");
    free(v);
    double t0 = h_now();
    long code = 0;
    while ((code = it_call(&srv, "GET", path, NULL, NULL, NULL)) != 200 && h_now() - t0 < 10)
        usleep(100000);
    assert_int_equal(code, 200);

    /* the standby down: the reads go to the primary, and say nothing of a replica */
    assert_int_equal(h_pg_ctl(&standby, "stop"), 0);
    o = get_json(&srv, path, 200);
    assert_null(json_object_get(o, "read_from"));
    json_decref(o);
    o = get_json(&srv, "/api/v1/health", 200);
    assert_true(json_is_false(json_object_get(json_object_get(o, "read_replica"), "reachable")));
    json_decref(o);
    assert_int_equal(h_pg_ctl(&standby, "start"), 0);
    assert_int_equal(wait_for(primary.conninfo,
                              "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'lsstandby'",
                              "sync"),
                     0);
    assert_int_equal(it_stop(&srv, NULL, NULL), 0);
}

/* A read replica that accepts connections and never answers (a host that hangs): the first read waits for the
 * connect timeout lockstepd gives a replica that names none (3 s), then the reads go to the primary at once. */
static void test_reads_replica_silent(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 64), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    char ci[200];
    snprintf(ci, sizeof(ci), "host=127.0.0.1 port=%d dbname=postgres user=lockstep", ntohs(a.sin_port));
    h_srv srv;
    const char *args[] = {"--db", primary.conninfo, "--read-db", ci, NULL};
    assert_int_equal(h_srv_start(&srv, args), 0);
    sleep(6); /* past the 5 s in which a replica that failed is not tried again (the start's health check) */
    double t0 = h_now();
    json_t *o = get_json(&srv, "/api/v1/runs", 200);
    double first = h_now() - t0;
    assert_null(json_object_get(o, "read_from"));
    json_decref(o);
    t0 = h_now();
    for (int i = 0; i < 5; i++) {
        o = get_json(&srv, "/api/v1/twins", 200);
        json_decref(o);
    }
    double then = h_now() - t0;
    print_message("silent replica: the first read %.1f s, five more %.2f s\n", first, then);
    assert_true(first > 2 && first < 8);
    assert_true(then < 2);
    assert_int_equal(it_stop(&srv, NULL, NULL), 0);
    close(fd);
}

static uint64_t acked_total(const it_loader *ls, int n)
{
    uint64_t t = 0;
    for (int r = 0; r < n; r++)
        t += atomic_load(&ls[r].acked);
    return t;
}

static void test_failover_under_ingest(void **state)
{
    (void)state;
    char ci[700];
    snprintf(ci, sizeof(ci),
             "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=postgres user=lockstep target_session_attrs=read-write "
             "connect_timeout=2",
             primary.port, standby.port);
    h_srv srv;
    const char *args[] = {"--db", ci, NULL};
    assert_int_equal(h_srv_start(&srv, args), 0);
    char run_a[40], run_b[40];
    assert_int_equal(it_register(&srv, "700", "fo-g", LOADERS, 0, NULL, run_a), 0);
    assert_int_equal(it_register(&srv, "701", "fo-g", LOADERS, 0, NULL, run_b), 0);
    it_loader la[LOADERS], lb[LOADERS];
    pthread_t ta[LOADERS], tb[LOADERS];
    atomic_int stop = 0;
    it_load_start(la, LOADERS, ta, &srv, run_a, &stop);
    it_load_start(lb, LOADERS, tb, &srv, run_b, &stop);
    usleep(1500000);
    json_t *o = NULL; /* running, and the same so far */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/fo-g", NULL, NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "pending");
    json_decref(o);

    uint64_t before = acked_total(la, LOADERS) + acked_total(lb, LOADERS);
    double t_kill = h_now();
    assert_int_equal(h_pg_crash(&primary), 0);
    usleep(500000); /* the batches in flight meet no primary */
    assert_int_equal(h_pg_ctl(&standby, "promote"), 0);
    /* ingest resumes on the promoted standby by itself */
    double t_back = 0;
    while (h_now() - t_kill < 30) {
        if (acked_total(la, LOADERS) + acked_total(lb, LOADERS) > before + 10) {
            t_back = h_now();
            break;
        }
        usleep(50000);
    }
    assert_true(t_back > 0);
    print_message("failover: ingest back %.1f s after the kill (%llu batches acknowledged before)\n", t_back - t_kill,
                  (unsigned long long)before);

    /* run B's rank 1 now differs from a step past every step stored so far */
    uint64_t flip = atomic_load(&lb[1].acked) + 5;
    atomic_store(&lb[1].flip_step, (long long)flip);
    while (atomic_load(&lb[1].acked) < flip + 10 && h_now() - t_back < 20)
        usleep(50000);
    o = it_wait_group(&srv, "fo-g", "diverged");
    assert_string_equal(json_string_value(json_object_get(o, "status")) ?: "", "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), (json_int_t)flip);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 1);
    json_decref(o);

    atomic_store(&stop, 1);
    for (int r = 0; r < LOADERS; r++) {
        pthread_join(ta[r], NULL);
        pthread_join(tb[r], NULL);
    }
    /* every acknowledged batch is on the promoted standby, once */
    it_check_exactly_once(standby.conninfo, run_a, la, LOADERS);
    it_check_exactly_once(standby.conninfo, run_b, lb, LOADERS);
    assert_int_equal(it_stop(&srv, NULL, NULL), 0);
}

/* A comparison lost with its database: lockstepd commits its comparisons without waiting for the disk or the
 * standby, so a crash or a failover may take the last ones back. Here one is taken back by hand, as if it were
 * lost, with the ranks' progress an hour old (an outage longer than the 15 s the periodic sweep looks back): when
 * lockstepd reconnects after PostgreSQL came back, it looks at its whole backlog again and finds the divergence. */
static void test_comeback_compares_again(void **state)
{
    (void)state;
    h_pg *pg = standby.dir[0] ? &standby : &primary; /* the promoted standby when the test before ran */
    h_srv srv;
    const char *args[] = {"--db", pg->conninfo, NULL};
    assert_int_equal(h_srv_start(&srv, args), 0);
    char run_a[40], run_b[40];
    diverged_twins(&srv, 710, "cb-g", run_a, run_b);
    json_t *o = it_wait_group(&srv, "cb-g", "diverged");
    assert_string_equal(json_string_value(json_object_get(o, "status")) ?: "", "diverged");
    json_decref(o);

    /* the looks the ends asked for are over (a look in flight would write its mark over the deletion below) */
    assert_int_equal(wait_for(pg->conninfo,
                              "SELECT count(*) FROM rank_ends e JOIN runs r USING (run_key) LEFT JOIN group_checks g "
                              "ON g.twin_group = r.twin_group AND g.rank = e.rank WHERE r.twin_group = 'cb-g' "
                              "AND (g.rank IS NULL OR g.checked_at < e.ended_at)",
                              "0"),
                     0);
    sleep(1);
    /* taken back under the ranks' comparison locks, as a lost commit is: no look reads before it and writes after */
    char *v = sql(pg->conninfo, "BEGIN; SELECT pg_advisory_xact_lock(lockstep_check_key('cb-g', 0)), "
                                "pg_advisory_xact_lock(lockstep_check_key('cb-g', -1)); "
                                "DELETE FROM divergences WHERE twin_group = 'cb-g'; "
                                "DELETE FROM group_checks WHERE twin_group = 'cb-g'; "
                                "UPDATE rank_progress SET updated_at = updated_at - interval '1 hour' WHERE run_key IN "
                                "(SELECT run_key FROM runs WHERE twin_group = 'cb-g'); "
                                "UPDATE rank_ends SET ended_at = ended_at - interval '1 hour' WHERE run_key IN "
                                "(SELECT run_key FROM runs WHERE twin_group = 'cb-g'); COMMIT");
    assert_non_null(v);
    free(v);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/cb-g", NULL, NULL, &o), 200);
    assert_string_not_equal(json_string_value(json_object_get(o, "status")) ?: "", "diverged");
    json_decref(o);

    assert_int_equal(h_pg_ctl(pg, "restart"), 0);
    double t0 = h_now();
    o = NULL;
    while (h_now() - t0 < 20) {
        json_decref(o);
        o = NULL;
        if (it_call(&srv, "GET", "/api/v1/twins/cb-g", NULL, NULL, &o) == 200 &&
            !strcmp(json_string_value(json_object_get(o, "status")) ?: "", "diverged"))
            break;
        usleep(200000);
    }
    print_message("comeback: compared again %.1f s after the restart\n", h_now() - t0);
    assert_string_equal(json_string_value(json_object_get(o, "status")) ?: "", "diverged");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "first_divergence"), "step")), 3);
    json_decref(o);
    assert_int_equal(it_stop(&srv, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_from_standby),
        cmocka_unit_test(test_reads_replica_silent),
        cmocka_unit_test(test_failover_under_ingest),
        cmocka_unit_test(test_comeback_compares_again),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
