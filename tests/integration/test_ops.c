/* test_ops.c - lockstepd integration: TLS, retention by partition, SIGHUP log reopening, metrics and run filters (the
 * Grafana boards: test_observe.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crypto/token.h"
#include "common/fsutil.h"
#include "tests/integration/common.h"

static h_pg pg;
static char dir[] = "/tmp/lsops.XXXXXX";

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    chmod(dir, 0711);
    return h_pg_start(&pg);
}

static int teardown(void **state)
{
    (void)state;
    h_pg_stop(&pg);
    char cmd[100];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_tls(void **state)
{
    (void)state;
    char cmd[1024], cert[200], key[200];
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s -out %s -days 1 -subj /CN=127.0.0.1 "
             "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
             key, cert);
    if (system(cmd) != 0)
        skip(); /* no openssl CLI */
    h_http_cainfo(cert);
    const char *args[] = {"--db", pg.conninfo, "--tls-cert", cert, "--tls-key", key, NULL};
    h_srv s;
    assert_int_equal(h_srv_start(&s, args), 0);
    assert_non_null(strstr(s.base, "https://"));
    char run[40];
    assert_int_equal(it_register(&s, "500", "tls-g", 1, 0, NULL, run), 0);
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&s, run, 0, 0, 0, 2, 3, -1, -1, -1, -1, &seq, NULL), 200);
    /* plain HTTP to the TLS port gets no answer; HTTPS without the CA is refused by the client */
    char url[200];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/health", s.port);
    assert_int_not_equal(h_http("GET", url, NULL, NULL, 0, NULL, NULL), 200);
    h_http_cainfo("/nonexistent-ca.pem");
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/api/v1/health", s.port);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, NULL, NULL), 0);
    h_http_cainfo(NULL);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
}

static void test_retention(void **state)
{
    (void)state;
    char adm[200];
    snprintf(adm, sizeof(adm), "%s/admin", dir);
    FILE *f = fopen(adm, "w");
    fputs("root-token\n", f);
    fclose(f);
    const char *args[] = {"--db", pg.conninfo, "--admin-token", adm, "--retain-days", "30", NULL};
    h_srv s;
    assert_int_equal(h_srv_start(&s, args), 0);
    char run[40];
    assert_int_equal(it_register(&s, "600", NULL, 1, 0, NULL, run), 0);
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&s, run, 0, 0, 0, 2, 3, -1, -1, -1, -1, &seq, NULL), 200);
    /* an old day's partition with one record of this run */
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PGresult *r = PQexec(c, "CREATE TABLE record_frames_20200101 PARTITION OF record_frames FOR VALUES FROM "
                            "('2020-01-01') TO ('2020-01-02')");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    char q[600];
    snprintf(q, sizeof(q),
             "INSERT INTO record_frames (run_key, rank, step, seq_lo, n, kind, frames, received_on) "
             "SELECT run_key, 0, 99, 999, 1, 0, '\\x00', '2020-01-01' FROM runs WHERE run_id = '%s'",
             run);
    r = PQexec(c, q);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    json_t *o = NULL;
    assert_int_equal(it_call(&s, "POST", "/api/v1/admin/retention", NULL, "root-token", &o), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "dropped_partitions")), 1);
    assert_int_equal(json_integer_value(json_object_get(o, "retain_days")), 30);
    json_decref(o);
    snprintf(q, sizeof(q),
             "SELECT to_regclass('record_frames_20200101') IS NULL, (SELECT sum(n) FROM record_frames d JOIN runs u "
             "USING (run_key) WHERE u.run_id = '%s'), to_regclass('record_frames_' || to_char(current_date, "
             "'YYYYMMDD')) IS NOT NULL",
             run);
    r = PQexec(c, q);
    assert_string_equal(PQgetvalue(r, 0, 0), "t");
    assert_string_equal(PQgetvalue(r, 0, 1), "6"); /* today's records stay */
    assert_string_equal(PQgetvalue(r, 0, 2), "t");
    PQclear(r);
    PQfinish(c);
    /* the run itself stays */
    char path[200];
    snprintf(path, sizeof(path), "/api/v1/runs/%s", run);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, NULL), 200);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
}

/* retained_run - run `job` of `group` (1 rank, 6 steps of 3 records; `flip`: step 3's record 1 differs), ended. */
static void retained_run(const h_srv *s, const char *job, const char *group, int flip, char *run)
{
    assert_int_equal(it_register(s, job, group, 1, 0, NULL, run), 0);
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(s, run, 0, 0, 0, 6, 3, flip ? 3 : -1, flip ? 1 : -1, -1, -1, &seq, NULL), 200);
    assert_int_equal(it_end(s, run, 0, NULL), 200);
}

/* age_records - move every record of `run` into the partition of day `day` (created), as if received then. */
static void age_records(PGconn *c, const char *run, const char *day)
{
    char q[700];
    snprintf(q, sizeof(q),
             "CREATE TABLE record_frames_%.4s%.2s%.2s PARTITION OF record_frames FOR VALUES FROM ('%s') TO "
             "(date '%s' + 1)",
             day, day + 5, day + 8, day, day);
    PGresult *r = PQexec(c, q);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    snprintf(q, sizeof(q),
             "UPDATE record_frames SET received_on = '%s' WHERE run_key = (SELECT run_key FROM runs WHERE run_id = "
             "'%s')",
             day, run);
    r = PQexec(c, q);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
}

/* A twin joins a group after retention removed its first run's records. Where their step digests agree the group
 * still matches (digests stay); where they differ, the records that would say where are gone: the group says
 * exactly that, `incomplete`, and asks no agent for them (before: `pending` for ever, "waits for records its agents
 * held back ... lockstep replay", which no spool could answer). */
static void test_retention_then_twin(void **state)
{
    (void)state;
    char adm[200];
    snprintf(adm, sizeof(adm), "%s/admin2", dir);
    it_write_file(adm, "root-token\n", 0600);
    const char *args[] = {"--db", pg.conninfo, "--admin-token", adm, NULL};
    h_srv s;
    assert_int_equal(h_srv_start(&s, args), 0);
    char a1[40], a2[40], b1[40], b2[40];
    retained_run(&s, "610", "kept-same", 0, a1);
    retained_run(&s, "611", "kept-diff", 0, a2);
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    age_records(c, a1, "2020-02-01");
    age_records(c, a2, "2020-02-02");
    json_t *o = NULL;
    assert_int_equal(it_call(&s, "POST", "/api/v1/admin/retention", "{\"retain_days\": 30}", "root-token", &o), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "dropped_partitions")), 2);
    json_decref(o);
    PQfinish(c);
    retained_run(&s, "612", "kept-same", 0, b1);
    retained_run(&s, "613", "kept-diff", 1, b2);
    o = it_wait_group(&s, "kept-same", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);
    o = it_wait_group(&s, "kept-diff", "incomplete");
    const char *why = json_string_value(json_object_get(o, "status_reason"));
    print_message("kept-diff: %s (%s)\n", json_string_value(json_object_get(o, "status")), why);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "incomplete");
    assert_non_null(strstr(why, "retention removed"));
    assert_null(strstr(why, "held back"));
    assert_null(json_object_get(o, "awaiting_records"));
    json_t *rm = json_array_get(json_object_get(o, "records_removed"), 0);
    assert_string_equal(json_string_value(json_object_get(rm, "run_id")), a2);
    assert_int_equal(json_integer_value(json_object_get(rm, "step")), 3);
    json_decref(o);
    /* nobody is asked for them */
    char path[200];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/wanted?rank=0", a2);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "steps")), 0);
    json_decref(o);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
}

static void test_sighup_and_metrics(void **state)
{
    (void)state;
    char log[200], rotated[220];
    snprintf(log, sizeof(log), "%s/lockstepd.log", dir);
    snprintf(rotated, sizeof(rotated), "%s.1", log);
    const char *args[] = {"--db", pg.conninfo, "--log-file", log, NULL};
    h_srv s;
    assert_int_equal(h_srv_start(&s, args), 0);
    assert_int_equal(rename(log, rotated), 0);
    kill(s.pid, SIGHUP);
    for (int i = 0; i < 100 && access(log, F_OK) != 0; i++)
        usleep(20000);
    char run[40];
    assert_int_equal(it_register(&s, "700", NULL, 2, 0, NULL, run), 0);
    fs_blob b;
    assert_int_equal(fs_blob_load(&b, log), 0);
    char *text = strndup(b.data, b.len);
    fs_blob_release(&b);
    assert_non_null(strstr(text, run)); /* the registration was logged to the new file */
    free(text);

    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&s, run, 1, 0, 0, 4, 5, -1, -1, -1, -1, &seq, NULL), 200);
    seq = 0;
    assert_int_equal(it_post_steps(&s, run, 1, 0, 0, 4, 5, -1, -1, -1, -1, &seq, NULL), 200);
    char url[200], *m = NULL;
    snprintf(url, sizeof(url), "%s/metrics", s.base);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, NULL, &m), 200);
    assert_non_null(strstr(m, "lockstepd_records_ingested_total 20\n"));
    assert_non_null(strstr(m, "lockstepd_batches_total{result=\"stored\"} 1\n"));
    assert_non_null(strstr(m, "lockstepd_batches_total{result=\"duplicate\"} 1\n"));
    assert_non_null(strstr(m, "lockstepd_http_request_seconds_bucket{route=\"records\",le=\"+Inf\"} 2\n"));
    free(m);
    json_t *o = NULL;
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs?job=700&step=", NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 1);
    json_decref(o);
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs?job=700&step=9", NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 0);
    json_decref(o);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
}

static void test_config_file(void **state)
{
    (void)state;
    char conf[200], adm[200], bad[200], secret[200];
    snprintf(conf, sizeof(conf), "%s/lockstepd.conf", dir);
    snprintf(adm, sizeof(adm), "%s/admin2", dir);
    snprintf(bad, sizeof(bad), "%s/bad.conf", dir);
    snprintf(secret, sizeof(secret), "%s/secret", dir);
    FILE *f = fopen(secret, "w");
    fputs("s3cret\n", f);
    fclose(f);
    f = fopen(adm, "w");
    fputs("reader\n", f);
    fclose(f);
    f = fopen(conf, "w");
    fprintf(f,
            "# lockstepd.conf for the test\nread_access = admin\nadmin_token = %s\nsecret = %s\n"
            "connection_timeout = 1   # seconds\nlog_level = debug\nthreads = 3\n",
            adm, secret);
    fclose(f);
    const char *args[] = {"--config", conf, "--db", pg.conninfo, NULL};
    h_srv s;
    assert_int_equal(h_srv_start(&s, args), 0);
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs", NULL, NULL, NULL), 401);
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs", NULL, "not-it", NULL), 403);
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs", NULL, "reader", NULL), 200);
    /* a job's own token may list that job's runs (how agents find their run), nothing more */
    char tok[TOKEN_HEX_LEN + 1], run[40];
    assert_int_equal(token_compute("s3cret", 6, "900", tok), 0);
    assert_int_equal(it_register(&s, "900", NULL, 1, 0, tok, run), 0);
    json_t *o = NULL;
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs?job=900&step=", NULL, tok, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 1);
    json_decref(o);
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs?job=901", NULL, tok, NULL), 403);
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs", NULL, tok, NULL), 403);
    char path[200];
    snprintf(path, sizeof(path), "/api/v1/runs/%s", run);
    assert_int_equal(it_call(&s, "GET", path, NULL, tok, NULL), 403);
    /* an idle connection is closed after connection_timeout */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char c;
    double t0 = h_now();
    assert_int_equal(recv(fd, &c, 1, 0), 0);
    assert_true(h_now() - t0 < 4.5);
    close(fd);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);

    /* an unknown key stops lockstepd at start with exit status 2 */
    f = fopen(bad, "w");
    fputs("listen = 127.0.0.1:0\nno_such_key = 1\n", f);
    fclose(f);
    const char *bad_args[] = {"--config", bad, "--db", pg.conninfo, NULL};
    assert_int_equal(h_srv_start(&s, bad_args), -1);
    fs_blob b;
    assert_int_equal(fs_blob_load(&b, s.log), 0);
    char *text = strndup(b.data, b.len);
    fs_blob_release(&b);
    assert_non_null(strstr(text, "unknown setting \"no_such_key\""));
    free(text);
    h_srv_cleanup(&s);
}

static void test_sigterm_finishes_inflight(void **state)
{
    (void)state;
    const char *args[] = {"--db", pg.conninfo, NULL};
    h_srv s;
    assert_int_equal(h_srv_start(&s, args), 0);
    char run[40];
    assert_int_equal(it_register(&s, "800", NULL, 1, 0, NULL, run), 0);
    const char *body = "{\"rank\": 0, \"batch_seq\": 0, \"records\": [{\"seq\": 0, \"step\": 0, \"name\": "
                       "\"loss\", \"fp\": \"0000000000000001\"}]}";
    char head[512];
    int hl = snprintf(head, sizeof(head),
                      "POST /api/v1/runs/%s/records HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      run, strlen(body));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    size_t half = strlen(body) / 2;
    assert_int_equal(send(fd, head, (size_t)hl, 0), hl);
    assert_int_equal(send(fd, body, half, 0), (ssize_t)half);
    usleep(200000);
    kill(s.pid, SIGTERM); /* the request is in flight: it must still be answered */
    usleep(300000);
    assert_int_equal(send(fd, body + half, strlen(body) - half, 0), (ssize_t)(strlen(body) - half));
    char reply[2048] = "";
    size_t got = 0;
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    for (ssize_t n; got < sizeof(reply) - 1 && (n = recv(fd, reply + got, sizeof(reply) - 1 - got, 0)) > 0;)
        got += (size_t)n;
    reply[got] = 0;
    close(fd);
    assert_non_null(strstr(reply, "HTTP/1.1 200"));
    assert_non_null(strstr(reply, "\"stored\":1"));
    assert_int_equal(h_srv_kill(&s, 0), 0); /* reap: it exits 0 by itself */
    h_srv_cleanup(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_retention_then_twin),
        cmocka_unit_test(test_sighup_and_metrics),
        cmocka_unit_test(test_config_file),
        cmocka_unit_test(test_sigterm_finishes_inflight),
    };
    return cmocka_run_group_tests_name("lockstepd operations", tests, setup, teardown);
}
