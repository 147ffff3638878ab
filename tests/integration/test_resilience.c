/* test_resilience.c - lockstepd integration: kill -9 and orderly stops under concurrent ingest, PostgreSQL restarted
 * under load, two servers on one database, embedded PostgreSQL, TLS. */
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
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/common.h"

#define LOADERS 4
#define MAX_ACKS 100000

static h_pg pg;

static int setup(void **state)
{
    (void)state;
    return h_pg_start(&pg);
}

static int teardown(void **state)
{
    (void)state;
    h_pg_stop(&pg);
    return 0;
}

static void test_kill9_during_ingest(void **state)
{
    (void)state;
    h_srv srv;
    const char *args[] = {"--db", pg.conninfo, NULL};
    assert_int_equal(h_srv_start(&srv, args), 0);
    char run[40];
    assert_int_equal(it_register(&srv, "200", NULL, LOADERS, 0, NULL, run), 0);
    it_loader ls[LOADERS];
    pthread_t th[LOADERS];
    atomic_int stop = 0;
    it_load_start(ls, LOADERS, th, &srv, run, &stop);
    for (int round = 0; round < 3; round++) {
        usleep(400000);
        assert_int_equal(h_srv_kill(&srv, SIGKILL), 128 + SIGKILL);
        usleep(100000);
        assert_int_equal(h_srv_restart(&srv, args), 0);
    }
    usleep(400000);
    atomic_store(&stop, 1);
    uint64_t total = 0, retries = 0;
    for (int r = 0; r < LOADERS; r++) {
        pthread_join(th[r], NULL);
        total += ls[r].acked;
        retries += ls[r].retries;
    }
    assert_true(total > 20);
    assert_true(retries > 0); /* the kills were felt */
    it_check_exactly_once(pg.conninfo, run, ls, LOADERS);
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    h_srv_cleanup(&srv);
}

/* log_clean - 1 when lockstepd's log holds no sanitizer report (under SAN=1 the binary is built with ASan and
 * UBSan: a use after free at shutdown prints here). */
static int log_clean(const h_srv *srv)
{
    FILE *f = fopen(srv->log, "r");
    if (!f)
        return 0;
    char line[1024];
    int clean = 1;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "AddressSanitizer") || strstr(line, "runtime error:") || strstr(line, "LeakSanitizer") ||
            strstr(line, "ThreadSanitizer")) {
            fprintf(stderr, "lockstepd: %s", line);
            clean = 0;
        }
    fclose(f);
    return clean;
}

/* Shutdown in order (HTTP, then the database workers, then the threads) under ingest: SIGTERM at a random
 * moment of heavy ingest, many times; lockstepd exits 0, its log holds no sanitizer report, and every batch it
 * acknowledged is stored exactly once. */
static void test_stop_under_load(void **state)
{
    (void)state;
    h_srv srv;
    const char *args[] = {"--db", pg.conninfo, "--db-workers", "4", NULL};
    assert_int_equal(h_srv_start(&srv, args), 0);
    char run[40];
    assert_int_equal(it_register(&srv, "250", NULL, LOADERS, 0, NULL, run), 0);
    it_loader ls[LOADERS];
    pthread_t th[LOADERS];
    atomic_int stop = 0;
    it_load_start(ls, LOADERS, th, &srv, run, &stop);
    srand((unsigned)getpid());
    for (int round = 0; round < 8; round++) {
        usleep(150000 + (useconds_t)(rand() % 250000));
        assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
        assert_true(log_clean(&srv));
        assert_int_equal(h_srv_restart(&srv, args), 0);
    }
    usleep(200000);
    atomic_store(&stop, 1);
    uint64_t total = 0;
    for (int r = 0; r < LOADERS; r++) {
        pthread_join(th[r], NULL);
        total += ls[r].acked;
    }
    assert_true(total > 20);
    it_check_exactly_once(pg.conninfo, run, ls, LOADERS);
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    assert_true(log_clean(&srv));
    h_srv_cleanup(&srv);
}

static void test_pg_restart_under_load(void **state)
{
    (void)state;
    h_srv srv;
    const char *args[] = {"--db", pg.conninfo, NULL};
    assert_int_equal(h_srv_start(&srv, args), 0);
    char run[40];
    assert_int_equal(it_register(&srv, "201", NULL, LOADERS, 0, NULL, run), 0);
    it_loader ls[LOADERS];
    pthread_t th[LOADERS];
    atomic_int stop = 0;
    it_load_start(ls, LOADERS, th, &srv, run, &stop);
    usleep(500000);
    uint64_t before = 0;
    for (int r = 0; r < LOADERS; r++)
        before += ls[r].acked;
    assert_int_equal(h_pg_ctl(&pg, "restart"), 0);
    /* lockstepd reconnects by itself: batches are acknowledged again */
    double t0 = h_now();
    uint64_t after = before;
    while (h_now() - t0 < 10) {
        usleep(200000);
        after = 0;
        for (int r = 0; r < LOADERS; r++)
            after += ls[r].acked;
        if (after > before + 40)
            break;
    }
    atomic_store(&stop, 1);
    uint64_t retries = 0;
    for (int r = 0; r < LOADERS; r++) {
        pthread_join(th[r], NULL);
        retries += ls[r].retries;
    }
    print_message("pg restart: %llu batches before, %llu after, %llu retried\n", (unsigned long long)before,
                  (unsigned long long)after, (unsigned long long)retries);
    assert_true(after > before + 40);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/health", NULL, NULL, &o), 200);
    json_decref(o);
    it_check_exactly_once(pg.conninfo, run, ls, LOADERS);
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    h_srv_cleanup(&srv);
}

typedef struct starter {
    h_srv srv;
    const char *const *args;
    int rc;
} starter;

static void *start_main(void *arg)
{
    starter *s = arg;
    s->rc = h_srv_start(&s->srv, s->args);
    return NULL;
}

static void test_two_servers_one_database(void **state)
{
    (void)state;
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQclear(PQexec(c, "CREATE DATABASE twostart"));
    char ci[600];
    snprintf(ci, sizeof(ci), "host=127.0.0.1 port=%d dbname=twostart user=lockstep", pg.port);
    const char *args[] = {"--db", ci, NULL};
    starter a = {.args = args}, b = {.args = args};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, start_main, &a);
    pthread_create(&tb, NULL, start_main, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    /* starting together, neither met the other's migration or partitions as an error (a deadlock) */
    assert_int_equal(it_count_lines(a.srv.log, " error ") + it_count_lines(b.srv.log, " error "), 0);
    PGconn *t = PQconnectdb(ci);
    PGresult *r = PQexec(t, "SELECT count(*), count(DISTINCT version), min(version) FROM schema_migrations");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
    assert_string_equal(PQgetvalue(r, 0, 2), "1");
    PQclear(r);
    PQfinish(t);
    /* the same batch through both servers is stored once */
    char run[40];
    assert_int_equal(it_register(&a.srv, "300", "two-g", 1, 0, NULL, run), 0);
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&a.srv, run, 0, 0, 0, 3, 4, -1, -1, -1, -1, &seq, NULL), 200);
    seq = 0;
    char path[300];
    json_t *o = NULL;
    assert_int_equal(it_post_steps(&b.srv, run, 0, 0, 0, 3, 4, -1, -1, -1, -1, &seq, NULL), 200);
    snprintf(path, sizeof(path), "/api/v1/runs/%s", run);
    assert_int_equal(it_call(&b.srv, "GET", path, NULL, NULL, &o), 200);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(o, "rank_status"), 0), "records")), 12);
    json_decref(o);
    assert_int_equal(h_srv_kill(&a.srv, SIGTERM), 0);
    assert_int_equal(h_srv_kill(&b.srv, SIGTERM), 0);
    h_srv_cleanup(&a.srv);
    h_srv_cleanup(&b.srv);
    PQfinish(c);
}

static int pg_running(const char *state_dir)
{
    char pid[400];
    snprintf(pid, sizeof(pid), "%s/pgdata/postmaster.pid", state_dir);
    return access(pid, F_OK) == 0;
}

static void test_embedded_postgres(void **state)
{
    (void)state;
    char dir[] = "/tmp/lsemb.XXXXXX", sd[64];
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0711);
    snprintf(sd, sizeof(sd), "%s/s", dir);
    const char *args[] = {"--state-dir", sd, NULL};
    h_srv srv;
    assert_int_equal(h_srv_start(&srv, args), 0);
    assert_true(pg_running(sd));
    char run[40], path[300];
    assert_int_equal(it_register(&srv, "400", NULL, 1, 0, NULL, run), 0);
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&srv, run, 0, 0, 0, 2, 3, -1, -1, -1, -1, &seq, NULL), 200);
    /* SIGTERM: exit 0 and the cluster is stopped */
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    assert_false(pg_running(sd));
    /* the data outlives the restart; kill -9 leaves the cluster, which the next start adopts */
    assert_int_equal(h_srv_restart(&srv, args), 0);
    assert_int_equal(h_srv_kill(&srv, SIGKILL), 128 + SIGKILL);
    assert_true(pg_running(sd));
    assert_int_equal(h_srv_restart(&srv, args), 0);
    snprintf(path, sizeof(path), "/api/v1/runs/%s", run);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(o, "rank_status"), 0), "records")), 6);
    json_decref(o);
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    assert_false(pg_running(sd));
    h_srv_cleanup(&srv);
    char cmd[100];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The embedded PostgreSQL killed under load (finding 14: nothing restarted it; 503 until a manual pg_ctl
 * start, ~20k warning lines in 15 s): lockstepd starts it again, says so in /api/v1/health and /metrics, and
 * logs a line per period, not per failed batch. */
static void test_embedded_postgres_restarted(void **state)
{
    (void)state;
    char dir[] = "/tmp/lsemb.XXXXXX", sd[64], pidfile[128];
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0711);
    snprintf(sd, sizeof(sd), "%s/s", dir);
    snprintf(pidfile, sizeof(pidfile), "%s/pgdata/postmaster.pid", sd);
    const char *args[] = {"--state-dir", sd, NULL};
    h_srv srv;
    assert_int_equal(h_srv_start(&srv, args), 0);
    char run[40];
    assert_int_equal(it_register(&srv, "410", NULL, 1, 0, NULL, run), 0);
    FILE *f = fopen(pidfile, "r");
    assert_non_null(f);
    long pm = 0;
    assert_int_equal(fscanf(f, "%ld", &pm), 1);
    fclose(f);
    assert_int_equal(kill((pid_t)pm, SIGKILL), 0);
    double t0 = h_now(), back = 0;
    int attempts = 0, ok = 0;
    uint64_t seq = 0;
    while (h_now() - t0 < 40) {
        /* a client that keeps sending while the database is away */
        for (int i = 0; i < 20; i++, attempts++)
            ok += it_post_steps(&srv, run, 0, (uint64_t)attempts, attempts, 1, 3, -1, -1, -1, -1, &seq, NULL) == 200;
        /* back: health answers and says the cluster was started again (right after the kill, a backend
         * that has not noticed its postmaster's death may still answer) */
        json_t *h = NULL;
        if (it_call(&srv, "GET", "/api/v1/health", NULL, NULL, &h) == 200 &&
            json_integer_value(json_object_get(json_object_get(h, "embedded_postgres"), "restarts")) >= 1) {
            json_decref(h);
            back = h_now() - t0;
            break;
        }
        json_decref(h);
        usleep(100000);
    }
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/health", NULL, NULL, &o), 200);
    json_t *emb = json_object_get(o, "embedded_postgres");
    print_message("postmaster killed: health back after %.1f s; %d batches sent meanwhile (%d stored); restarts %lld\n",
                  back, attempts, ok, (long long)json_integer_value(json_object_get(emb, "restarts")));
    assert_true(back > 0 && back < 30);
    assert_string_equal(json_string_value(json_object_get(emb, "state")), "up");
    assert_true(json_integer_value(json_object_get(emb, "restarts")) >= 1);
    json_decref(o);
    assert_true(it_metric(&srv, "lockstepd_embedded_postgres_restarts_total", NULL) >= 1);
    assert_true(it_metric(&srv, "lockstepd_embedded_postgres_up", NULL) == 1);
    /* data written after the restart is stored */
    seq = 100000;
    assert_int_equal(it_post_steps(&srv, run, 0, 999999, 100000, 1, 3, -1, -1, -1, -1, &seq, NULL), 200);
    /* one database error line a period (10 s), not one per failed batch */
    int lines = it_count_lines(srv.log, "lockstepd: query") + it_count_lines(srv.log, "lockstepd: batch") +
                it_count_lines(srv.log, "lockstepd: cannot connect");
    print_message("database error lines in the log during the outage: %d (for %d requests)\n", lines, attempts);
    assert_true(lines <= 2 + (int)(back / 10));
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    assert_false(pg_running(sd));
    h_srv_cleanup(&srv);
    char cmd[100];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* lockstepd and its embedded PostgreSQL killed together (kill -9 of both, a node's OOM killer, a power cut of the
 * container), where nobody reaps the postmaster: its pid still answers kill(pid, 0), so pg_ctl status said the
 * cluster ran; the restarted lockstepd adopted it, could not connect, and exited instead of retrying as documented.
 * Here this test is the subreaper that does not reap it (a PID 1 that does not reap), so the dead postmaster stays
 * a zombie. The restarted lockstepd sees it is gone, removes its postmaster.pid once nothing works in the data
 * directory any more, starts the cluster and serves the data. */
static void test_embedded_killed_together(void **state)
{
    (void)state;
    char dir[] = "/tmp/lsemb.XXXXXX", sd[64], pidfile[128];
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0711);
    snprintf(sd, sizeof(sd), "%s/s", dir);
    snprintf(pidfile, sizeof(pidfile), "%s/pgdata/postmaster.pid", sd);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    const char *args[] = {"--state-dir", sd, NULL};
    h_srv srv;
    assert_int_equal(h_srv_start(&srv, args), 0);
    char run[40], path[300];
    assert_int_equal(it_register(&srv, "420", NULL, 1, 0, NULL, run), 0);
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&srv, run, 0, 0, 0, 2, 3, -1, -1, -1, -1, &seq, NULL), 200);
    FILE *f = fopen(pidfile, "r");
    assert_non_null(f);
    long pm = 0;
    assert_int_equal(fscanf(f, "%ld", &pm), 1);
    fclose(f);
    /* both at once; the postmaster is ours (its pg_ctl is gone) and left unreaped */
    assert_int_equal(kill((pid_t)pm, SIGKILL), 0);
    assert_int_equal(h_srv_kill(&srv, SIGKILL), 128 + SIGKILL);
    usleep(200000);
    char st[300], line[256];
    snprintf(st, sizeof(st), "/proc/%ld/stat", pm);
    f = fopen(st, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_non_null(strstr(line, ") Z ")); /* a zombie: kill(pid, 0) still succeeds */
    assert_int_equal(kill((pid_t)pm, 0), 0);
    /* the restart retries as documented and comes up on the same data */
    double t0 = h_now();
    assert_int_equal(h_srv_restart(&srv, args), 0);
    print_message("lockstepd up again %.1f s after the restart\n", h_now() - t0);
    snprintf(path, sizeof(path), "/api/v1/runs/%s", run);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(o, "rank_status"), 0), "records")), 6);
    json_decref(o);
    assert_int_equal(it_post_steps(&srv, run, 0, 1, 2, 2, 3, -1, -1, -1, -1, &seq, NULL), 200);
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    assert_false(pg_running(sd));
    h_srv_cleanup(&srv);
    /* reap what was left to us (the killed postmaster, its backends, the second cluster's processes) */
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    char cmd[100];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_during_ingest),      cmocka_unit_test(test_stop_under_load),
        cmocka_unit_test(test_pg_restart_under_load),    cmocka_unit_test(test_two_servers_one_database),
        cmocka_unit_test(test_embedded_postgres),        cmocka_unit_test(test_embedded_postgres_restarted),
        cmocka_unit_test(test_embedded_killed_together),
    };
    return cmocka_run_group_tests_name("lockstepd resilience", tests, setup, teardown);
}
