/* test_http.c - lockstepd integration: the HTTP door under bad clients: auth before any body, slow and trickling
 * connections, framing, bad bytes in targets and headers, abandoned requests, libmicrohttpd's own errors as JSON, the
 * dashboard's headers and files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crypto/token.h"
#include "common/fsutil.h"
#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;
static char tok7[TOKEN_HEX_LEN + 1];
static const char *ADMIN = "http-admin-token";
static char dir[] = "/tmp/lshttp.XXXXXX";
static char run7[40];

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0 || !mkdtemp(dir))
        return -1;
    chmod(dir, 0711);
    char secret[300], adm[300], web[300], conf[300], p[400];
    snprintf(secret, sizeof(secret), "%s/secret", dir);
    snprintf(adm, sizeof(adm), "%s/admin", dir);
    snprintf(web, sizeof(web), "%s/web", dir);
    snprintf(conf, sizeof(conf), "%s/lockstepd.conf", dir);
    it_write_file(secret, "http-secret\n", 0);
    it_write_file(adm, ADMIN, 0);
    /* a web directory as the repository's is: the dashboard's files, and others that are not to be served */
    static const char *const files[] = {"index.html",
                                        "js/app.js",
                                        "js/pages/run.js",
                                        "css/app.css",
                                        "vendor/uPlot.min.css",
                                        "package.json",
                                        "package-lock.json",
                                        "web.mk",
                                        "node_modules/uplot/package.json",
                                        "node_modules/x/evil.js",
                                        "notes.txt"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", web, files[i]);
        char d[400];
        snprintf(d, sizeof(d), "%s", p);
        *strrchr(d, '/') = 0;
        fs_mkdir_p(d);
        it_write_file(p, !strcmp(files[i], "index.html") ? "<!doctype html><title>lockstep</title>" : "x", 0);
    }
    it_write_file(conf, "read_access = admin\nheader_timeout = 2\nbody_timeout = 4\nmax_connections = 40\n", 0);
    if (token_compute("http-secret", 11, "7", tok7) < 0)
        return -1;
    const char *args[] = {"--db",      pg.conninfo, "--secret", secret, "--admin-token", adm,
                          "--web-dir", web,         "--config", conf,   "--max-body-mb", "64",
                          NULL};
    if (h_srv_start(&srv, args) < 0)
        return -1;
    return it_register(&srv, "7", "http-g", 1, 0, tok7, run7);
}

static int teardown(void **state)
{
    (void)state;
    return it_stop(&srv, &pg, dir);
}

/* body_json - the JSON body of a raw answer (after the blank line of the *last* head libmicrohttpd sent). */
static json_t *body_json(const char *resp)
{
    const char *b = resp ? strstr(resp, "\r\n\r\n") : NULL;
    const char *next;
    while (b && (next = strstr(b + 4, "\r\n\r\n")) && !strncmp(b + 4, "HTTP/1.", 7))
        b = next; /* libmicrohttpd 0.9.75 repeats the head of some of its own errors */
    return b ? json_loads(b + 4, 0, NULL) : NULL;
}

/* expect_json_error - a raw request answered `status` with a JSON error object (and JSON content type). */
static void expect_json_error(const char *what, const char *req, size_t len, int status, double within_s)
{
    char *resp = NULL;
    double t0 = h_now();
    int got = it_raw(srv.port, req, len, within_s + 2, &resp);
    double took = h_now() - t0;
    json_t *o = body_json(resp);
    if (got != status || !json_is_string(json_object_get(o, "error")) || !json_is_string(json_object_get(o, "hint")) ||
        !strstr(resp, "Content-Type: application/json") || took > within_s)
        fail_msg("%s: want %d with a JSON error within %.1f s, got %d after %.2f s: %s", what, status, within_s, got,
                 took, resp ? resp : "(nothing)");
    json_decref(o);
    free(resp);
}

/* A body is never read before the request is authenticated: the answer comes while the client still holds
 * its body back. (Before, lockstepd read and parsed the whole body first: 62 MiB took it to 1.3 GB.) */
static void test_auth_before_body(void **state)
{
    (void)state;
    char req[1024];
    snprintf(
        req, sizeof(req),
        "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 65011712\r\n\r\n");
    expect_json_error("registration without a token, body held back", req, strlen(req), 401, 2.0);
    snprintf(req, sizeof(req),
             "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
             "Content-Length: 65011712\r\n\r\n",
             tok7);
    expect_json_error("registration body over its limit, body held back", req, strlen(req), 413, 2.0);
    snprintf(req, sizeof(req),
             "POST /api/v1/runs/%s/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %064d\r\n"
             "Content-Type: application/x-lockstep\r\nContent-Length: 60000000\r\n\r\n",
             run7, 0);
    expect_json_error("a batch with another job's token, body held back", req, strlen(req), 403, 2.0);
    snprintf(req, sizeof(req),
             "POST /api/v1/runs/%s/manifest HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: 300000\r\n\r\n",
             run7, tok7);
    expect_json_error("a manifest over 256 KiB, body held back", req, strlen(req), 413, 2.0);
    snprintf(req, sizeof(req), "POST /api/v1/attest HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n");
    expect_json_error("an attestation without a token, body held back", req, strlen(req), 401, 2.0);
    snprintf(req, sizeof(req), "POST /api/v1/admin/retention HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n");
    expect_json_error("an admin call without a token, body held back", req, strlen(req), 401, 2.0);
    snprintf(req, sizeof(req), "GET /api/v1/runs/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n", run7);
    expect_json_error("a read without the admin token (read_access = admin), body held back", req, strlen(req), 401,
                      2.0);
}

typedef struct flood {
    int port;
    size_t bytes;
    int status;
} flood;

static void *flood_main(void *arg)
{
    flood *f = arg;
    char head[256];
    int n = snprintf(
        head, sizeof(head),
        "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
        f->bytes);
    char *buf = malloc(f->bytes + (size_t)n);
    memcpy(buf, head, (size_t)n);
    memset(buf + n, ' ', f->bytes);
    buf[n] = '[';
    char *resp = NULL;
    f->status = it_raw(f->port, buf, f->bytes + (size_t)n, 20, &resp);
    free(resp);
    free(buf);
    return NULL;
}

/* Four unauthenticated 62 MiB bodies at once cost lockstepd no memory to speak of, and health answers. */
static void test_unauthenticated_bodies_cost_nothing(void **state)
{
    (void)state;
    long before = it_rss_kb(srv.pid);
    assert_true(before > 0);
    flood f[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        f[i] = (flood){srv.port, (size_t)62 << 20, 0};
        pthread_create(&t[i], NULL, flood_main, &f[i]);
    }
    double worst = 0;
    long peak = before;
    for (int i = 0; i < 20; i++) {
        char url[200];
        snprintf(url, sizeof(url), "%s/api/v1/health", srv.base);
        double t0 = h_now();
        assert_int_equal(h_http("GET", url, NULL, NULL, 0, NULL, NULL), 200);
        if (h_now() - t0 > worst)
            worst = h_now() - t0;
        long rss = it_rss_kb(srv.pid);
        if (rss > peak)
            peak = rss;
        usleep(50000);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(f[i].status, 401);
        long rss = it_rss_kb(srv.pid);
        if (rss > peak)
            peak = rss;
    }
    print_message("unauthenticated 4 x 62 MiB: lockstepd RSS %ld -> peak %ld KiB, health worst %.3f s\n", before, peak,
                  worst);
    assert_true(peak - before < 64 * 1024);
    assert_true(worst < 1.0);
}

/* trickler - a connection that sends a header line every 300 ms and never finishes its headers. */
typedef struct trickle {
    int fd;
    double closed_after; /* seconds until the server closed it, 0 while open */
} trickle;

typedef struct health_probe {
    double ok_after; /* seconds until GET /api/v1/health first answered 200, 0: never */
    double t0;
    volatile int stop;
} health_probe;

static void *probe_main(void *arg)
{
    health_probe *p = arg;
    char url[200];
    snprintf(url, sizeof(url), "%s/api/v1/health", srv.base);
    while (!p->stop && !p->ok_after) {
        if (h_http("GET", url, NULL, NULL, 0, NULL, NULL) == 200)
            p->ok_after = h_now() - p->t0;
        else
            usleep(100000);
    }
    return NULL;
}

/* Connections that trickle header lines are closed after header_timeout (2 s here), so they cannot hold
 * every connection slot (max_connections = 40 here, 45 tricklers): health answers within a few seconds.
 * (Before, libmicrohttpd's idle timeout never fired on them and health timed out.) */
static void test_trickling_headers_time_out(void **state)
{
    (void)state;
    enum { N = 45 };
    trickle t[N];
    double t0 = h_now();
    int opened = 0;
    for (int i = 0; i < N; i++) {
        t[i].fd = it_connect(srv.port, 1.0);
        t[i].closed_after = 0;
        if (t[i].fd >= 0) {
            static const char line[] = "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n";
            if (send(t[i].fd, line, sizeof(line) - 1, MSG_NOSIGNAL) > 0)
                opened++;
        }
    }
    health_probe p = {0, h_now(), 0};
    pthread_t pt;
    pthread_create(&pt, NULL, probe_main, &p);
    int open_left = opened;
    while (h_now() - t0 < 12 && open_left > 0) {
        usleep(300000);
        for (int i = 0; i < N; i++) {
            if (t[i].fd < 0 || t[i].closed_after)
                continue;
            char c;
            ssize_t r = recv(t[i].fd, &c, 1, MSG_DONTWAIT);
            if (r == 0 || send(t[i].fd, "X-Trickle: 1\r\n", 14, MSG_NOSIGNAL) < 0 || r > 0) {
                t[i].closed_after = h_now() - t0;
                open_left--;
            }
        }
    }
    p.stop = 1;
    pthread_join(pt, NULL);
    double last = 0;
    int closed = 0;
    for (int i = 0; i < N; i++) {
        if (t[i].fd >= 0)
            close(t[i].fd);
        if (t[i].closed_after) {
            closed++;
            if (t[i].closed_after > last)
                last = t[i].closed_after;
        }
    }
    print_message("tricklers: %d of %d closed by the server, the last after %.1f s; health answered after %.1f s\n",
                  closed, opened, last, p.ok_after);
    assert_int_equal(closed, opened);
    assert_true(last < 6.0);
    assert_true(p.ok_after > 0 && p.ok_after < 6.0);
    assert_true(it_metric(&srv, "lockstepd_http_connection_timeouts_total{phase=\"headers\"}", ADMIN) >= 1);
}

/* A body that trickles is closed after body_timeout (4 s here). */
static void test_trickling_body_times_out(void **state)
{
    (void)state;
    int fd = it_connect(srv.port, 1.0);
    assert_true(fd >= 0);
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "POST /api/v1/runs/%s/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/x-lockstep\r\nContent-Length: 100000\r\n\r\n",
                     run7, tok7);
    assert_true(send(fd, head, (size_t)n, MSG_NOSIGNAL) == n);
    double t0 = h_now(), closed = 0;
    while (!closed && h_now() - t0 < 12) {
        usleep(300000);
        char c;
        ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
        if (r == 0 || send(fd, "x", 1, MSG_NOSIGNAL) < 0)
            closed = h_now() - t0;
    }
    close(fd);
    print_message("a trickled body was closed after %.1f s\n", closed);
    assert_true(closed > 3.0 && closed < 7.0);
}

/* Bytes that are not UTF-8, and NUL or control bytes, in a path, a query or a header are a 400 with a JSON
 * error, and never reach PostgreSQL (before: 500 "out of memory" as text/plain, or 503 "database error"). */
static void test_bad_bytes(void **state)
{
    (void)state;
    double db_errors = it_metric(&srv, "lockstepd_db_errors_total", ADMIN);
    static const char *const bad[] = {
        "GET /api/v1/twins/%ff%fe HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer http-admin-token\r\n\r\n",
        "GET /api/v1/twins/%ff%fe/steps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer http-admin-token\r\n\r\n",
        "GET /api/v1/runs?user=%c3%28 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer http-admin-token\r\n\r\n",
        "GET /api/v1/runs?group=a%00b HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer http-admin-token\r\n\r\n",
        "GET /api/v1/nodes/n%0a1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer http-admin-token\r\n\r\n",
        "GET /index.html%00.js HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Bad: \xff\xfe\r\n\r\n",
        "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Bad: a\x1b[2Jb\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_json_error(bad[i], bad[i], strlen(bad[i]), 400, 2.0);
    /* A binary batch whose stream header names a run id that is not text. */
    h_batch b = {0};
    h_batch_begin(&b, "\xff\xfe\xfd-not-a-run-id", 0, 5);
    rec_record r = {.seq = 0, .step = 1, .fp = 42, .dtype = LS_F32, .name = "x", .name_len = 1};
    h_batch_add(&b, &r);
    char url[300], *resp = NULL;
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", srv.base, run7);
    assert_int_equal(h_http("POST", url, "application/x-lockstep", b.buf, b.len, tok7, &resp), 400);
    json_t *o = json_loads(resp, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "error")), "run id mismatch");
    json_decref(o);
    free(resp);
    h_batch_free(&b);
    assert_true(it_metric(&srv, "lockstepd_db_errors_total", ADMIN) == db_errors);
}

/* A request whose client goes away before the answer is counted as abandoned, not as a 5xx. */
static void test_abandoned_requests(void **state)
{
    (void)state;
    double before = it_metric(&srv, "lockstepd_http_requests_abandoned_total{route=\"records\"}", ADMIN);
    double errors = it_metric(&srv, "lockstepd_http_requests_total{route=\"records\",code=\"5xx\"}", ADMIN);
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "POST /api/v1/runs/%s/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/x-lockstep\r\nContent-Length: 1000\r\n\r\n0123456789",
                     run7, tok7);
    for (int i = 0; i < 3; i++) {
        int fd = it_connect(srv.port, 1.0);
        assert_true(fd >= 0);
        assert_true(send(fd, head, (size_t)n, MSG_NOSIGNAL) == n);
        usleep(200000);
        close(fd);
    }
    double after = -1;
    for (int i = 0; i < 50 && after < (before < 0 ? 0 : before) + 3; i++) {
        usleep(100000);
        after = it_metric(&srv, "lockstepd_http_requests_abandoned_total{route=\"records\"}", ADMIN);
    }
    assert_true(after >= (before < 0 ? 0 : before) + 3);
    assert_true(it_metric(&srv, "lockstepd_http_requests_total{route=\"records\",code=\"5xx\"}", ADMIN) == errors);
}

/* Framing is strict, and libmicrohttpd's own refusals are JSON too. */
static void test_strict_framing(void **state)
{
    (void)state;
    static const struct {
        const char *what, *req;
        int status;
    } cases[] = {
        {"Content-Length and Transfer-Encoding",
         "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
         400},
        {"two Content-Lengths",
         "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400},
        {"an unknown Transfer-Encoding (it hung before)",
         "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nhello", 501},
        {"a header line without a colon", "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400},
        {"HTTP/1.1 without Host", "GET /api/v1/health HTTP/1.1\r\n\r\n", 400},
        {"a Content-Length that is no number", "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
         400},
        {"an unknown HTTP version", "GET /api/v1/health HTTP/2.0\r\nHost: x\r\n\r\n", 505},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_json_error(cases[i].what, cases[i].req, strlen(cases[i].req), cases[i].status, 2.0);
    /* headers larger than the server takes: 431, JSON */
    size_t n = 100000;
    char *big = malloc(n + 100);
    int h = snprintf(big, 100, "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(big + h, 'a', n);
    memcpy(big + h + n, "\r\n\r\n", 4);
    expect_json_error("headers too large", big, (size_t)h + n + 4, 431, 2.0);
    free(big);
}

static int has_header(const char *resp, const char *line)
{
    return resp && strstr(resp, line) != NULL;
}

/* The dashboard says it may not be framed, every 405 says what is allowed, /metrics follows read_access. */
static void test_headers_405_and_metrics_access(void **state)
{
    (void)state;
    char *resp = NULL;
    static const char get_root[] = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(it_raw(srv.port, get_root, sizeof(get_root) - 1, 3, &resp), 200);
    assert_true(has_header(resp, "frame-ancestors 'none'"));
    assert_true(has_header(resp, "Content-Security-Policy: default-src 'self'"));
    assert_true(has_header(resp, "X-Frame-Options: DENY"));
    free(resp);
    static const char del[] = "DELETE /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(it_raw(srv.port, del, sizeof(del) - 1, 3, &resp), 405);
    assert_true(has_header(resp, "Allow: GET, HEAD"));
    free(resp);
    static const char post_static[] =
        "POST /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    assert_int_equal(it_raw(srv.port, post_static, sizeof(post_static) - 1, 3, &resp), 405);
    assert_true(has_header(resp, "Allow: GET, HEAD"));
    free(resp);
    static const char get_records[] = "GET /api/v1/runs/%s/end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char req[300];
    int n = snprintf(req, sizeof(req), get_records, run7);
    assert_int_equal(it_raw(srv.port, req, (size_t)n, 3, &resp), 405);
    assert_true(has_header(resp, "Allow: POST"));
    free(resp);
    /* read_access = admin: /metrics too */
    char url[200];
    snprintf(url, sizeof(url), "%s/metrics", srv.base);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, NULL, NULL), 401);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, tok7, NULL), 403);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, ADMIN, NULL), 200);
    snprintf(url, sizeof(url), "%s/api/v1/health", srv.base);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, NULL, NULL), 200);
}

/* Only the dashboard's own files are served from the web directory. */
static void test_only_dashboard_files(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        long code;
    } cases[] = {
        {"/", 200},
        {"/index.html", 200},
        {"/js/app.js", 200},
        {"/js/pages/run.js", 200},
        {"/css/app.css", 200},
        {"/vendor/uPlot.min.css", 200},
        {"/package.json", 404},
        {"/package-lock.json", 404},
        {"/web.mk", 404},
        {"/notes.txt", 404},
        {"/node_modules/x/evil.js", 404},
        {"/node_modules/uplot/package.json", 404},
        {"/js/", 404},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char url[300];
        snprintf(url, sizeof(url), "%s%s", srv.base, cases[i].path);
        long code = h_http("GET", url, NULL, NULL, 0, NULL, NULL);
        if (code != cases[i].code)
            fail_msg("GET %s: %ld, want %ld", cases[i].path, code, cases[i].code);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auth_before_body),
        cmocka_unit_test(test_unauthenticated_bodies_cost_nothing),
        cmocka_unit_test(test_trickling_headers_time_out),
        cmocka_unit_test(test_trickling_body_times_out),
        cmocka_unit_test(test_bad_bytes),
        cmocka_unit_test(test_abandoned_requests),
        cmocka_unit_test(test_strict_framing),
        cmocka_unit_test(test_headers_405_and_metrics_access),
        cmocka_unit_test(test_only_dashboard_files),
    };
    return cmocka_run_group_tests_name("lockstepd http door", tests, setup, teardown);
}
