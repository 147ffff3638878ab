/* test_api.c - lockstepd integration: every endpoint, auth, replayed batches, the data-driven bad inputs, limits,
 * static files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crypto/token.h"
#include "common/fsutil.h"
#include <libpq-fe.h>
#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;
static char tok7[TOKEN_HEX_LEN + 1], tok8[TOKEN_HEX_LEN + 1];
static const char *admin = "adm1n-t0ken";
static char webdir[300];
static char tmpdir[] = "/tmp/lsapi.XXXXXX";

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    if (!mkdtemp(tmpdir))
        return -1;
    char secret[300], adm[300];
    snprintf(secret, sizeof(secret), "%s/secret", tmpdir);
    snprintf(adm, sizeof(adm), "%s/admin", tmpdir);
    snprintf(webdir, sizeof(webdir), "%s/web", tmpdir);
    it_write_file(secret, "site-secret\n\n", 0);
    it_write_file(adm, "adm1n-t0ken\n", 0);
    fs_mkdir_p(webdir);
    char p[400];
    snprintf(p, sizeof(p), "%s/index.html", webdir);
    it_write_file(p, "<!doctype html><title>lockstep</title>", 0);
    snprintf(p, sizeof(p), "%s/js", webdir);
    fs_mkdir_p(p);
    snprintf(p, sizeof(p), "%s/js/app.js", webdir);
    it_write_file(p, "console.log(1);", 0);
    snprintf(p, sizeof(p), "%s/outside.txt", tmpdir);
    it_write_file(p, "secret outside", 0);
    char link[400];
    snprintf(link, sizeof(link), "%s/leak.txt", webdir);
    if (symlink(p, link) < 0)
        return -1;
    /* the token is HMAC over the secret without its trailing newlines */
    if (token_compute("site-secret", 11, "7", tok7) < 0 || token_compute("site-secret", 11, "8", tok8) < 0)
        return -1;
    const char *args[] = {"--db", pg.conninfo,     "--secret", secret, "--admin-token", adm, "--web-dir",
                          webdir, "--max-body-mb", "1",        NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    return it_stop(&srv, &pg, tmpdir);
}

static void test_health_and_metrics(void **state)
{
    (void)state;
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/health", NULL, NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "database")), "ok");
    /* the release of the tree's VERSION file, and the same release and commit in lockstep_build_info */
    char release[64] = "", build_info[200];
    snprintf(build_info, sizeof(build_info), "%s/VERSION", getenv("LOCKSTEP_SRC") ?: ".");
    FILE *vf = fopen(build_info, "r");
    assert_non_null(vf);
    assert_non_null(fgets(release, sizeof(release), vf));
    fclose(vf);
    release[strcspn(release, "\n")] = 0;
    assert_string_equal(json_string_value(json_object_get(o, "version")), release);
    const char *commit = json_string_value(json_object_get(o, "commit"));
    assert_non_null(commit);
    snprintf(build_info, sizeof(build_info), "lockstep_build_info{version=\"%s\",commit=\"%s\"} 1\n", release, commit);
    json_decref(o);
    char url[200], *text = NULL;
    snprintf(url, sizeof(url), "%s/metrics", srv.base);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, NULL, &text), 200);
    assert_non_null(strstr(text, build_info));
    assert_non_null(strstr(text, "# TYPE lockstepd_records_ingested_total counter"));
    assert_non_null(strstr(text, "lockstepd_http_requests_total{route=\"health\",code=\"2xx\"}"));
    assert_non_null(strstr(text, "lockstepd_db_errors_total"));
    free(text);
}

static void test_auth(void **state)
{
    (void)state;
    const char *body = "{\"job_id\": \"7\", \"ranks\": 1}";
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", body, NULL, &o), 401);
    assert_string_equal(json_string_value(json_object_get(o, "error")), "authentication required");
    assert_non_null(json_object_get(o, "hint"));
    json_decref(o);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", body, tok8, &o), 403);
    assert_string_equal(json_string_value(json_object_get(o, "error")), "token does not match the job");
    json_decref(o);
    char run[40];
    assert_int_equal(it_register(&srv, "7", NULL, 1, 0, tok7, run), 0);
    assert_int_equal(it_register(&srv, "7", NULL, 1, 0, admin, run), 0);
    /* the run is bound to job 7: job 8's token may not write it */
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&srv, run, 0, 0, 0, 1, 3, -1, -1, -1, -1, &seq, tok8), 403);
    assert_int_equal(it_post_steps(&srv, run, 0, 0, 0, 1, 3, -1, -1, -1, -1, &seq, NULL), 401);
    seq = 0;
    assert_int_equal(it_post_steps(&srv, run, 0, 0, 0, 1, 3, -1, -1, -1, -1, &seq, tok7), 200);
    /* admin endpoints */
    assert_int_equal(it_call(&srv, "POST", "/api/v1/admin/retention", "{\"retain_days\": 30}", tok7, NULL), 403);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/admin/retention", "{\"retain_days\": 30}", NULL, NULL), 401);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/admin/retention", "{\"retain_days\": 30}", admin, &o), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "dropped_partitions")), 0);
    json_decref(o);
}

/* A registration repeated with its client_id (an agent whose first answer was lost, or a replay) returns the
 * run it made; another client id, or the same one under another job, is another run. */
static void test_register_idempotent(void **state)
{
    (void)state;
    const char *body7 = "{\"job_id\": \"7\", \"step_id\": \"3\", \"twin_group\": \"idem-g\", \"ranks\": 2, "
                        "\"client_id\": \"c-1\"}";
    json_t *o = NULL;
    char first[40], again[40], path[200];
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", body7, tok7, &o), 201);
    snprintf(first, sizeof(first), "%s", json_string_value(json_object_get(o, "run_id")));
    json_decref(o);
    /* the repeat's other fields do not rewrite the run */
    const char *repeat = "{\"job_id\": \"7\", \"step_id\": \"3\", \"ranks\": 9, \"client_id\": \"c-1\"}";
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", repeat, tok7, &o), 200);
    snprintf(again, sizeof(again), "%s", json_string_value(json_object_get(o, "run_id")));
    json_decref(o);
    assert_string_equal(first, again);
    snprintf(path, sizeof(path), "/api/v1/runs/%s", first);
    assert_int_equal(it_call(&srv, "GET", path, NULL, admin, &o), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "ranks")), 2);
    assert_string_equal(json_string_value(json_object_get(o, "twin_group")), "idem-g");
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/runs?job=7&step=3", NULL, admin, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 1);
    json_decref(o);

    const char *other = "{\"job_id\": \"7\", \"step_id\": \"3\", \"client_id\": \"c-2\"}";
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", other, tok7, &o), 201);
    assert_string_not_equal(json_string_value(json_object_get(o, "run_id")), first);
    json_decref(o);
    const char *job8 = "{\"job_id\": \"8\", \"step_id\": \"3\", \"client_id\": \"c-1\"}";
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", job8, tok8, &o), 201);
    assert_string_not_equal(json_string_value(json_object_get(o, "run_id")), first);
    json_decref(o);
    /* without a client id every registration is a new run, as before */
    const char *plain = "{\"job_id\": \"7\", \"step_id\": \"4\"}";
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", plain, tok7, &o), 201);
    snprintf(first, sizeof(first), "%s", json_string_value(json_object_get(o, "run_id")));
    json_decref(o);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", plain, tok7, &o), 201);
    assert_string_not_equal(json_string_value(json_object_get(o, "run_id")), first);
    json_decref(o);
    const char *bad = "{\"job_id\": \"7\", \"client_id\": 12}";
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", bad, tok7, &o), 400);
    assert_non_null(strstr(json_string_value(json_object_get(o, "detail")), "client_id"));
    json_decref(o);
}

static void test_endpoints(void **state)
{
    (void)state;
    char run[40], path[300];
    assert_int_equal(it_register(&srv, "7", "api-g", 2, 0, tok7, run), 0);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", run);
    assert_int_equal(it_call(&srv, "POST", path,
                             "{\"rank\": 1, \"host\": \"n2\", \"gpu\": {\"name\": \"H100\"}, \"env\": "
                             "{\"NCCL_ALGO\": \"Ring\"}}",
                             tok7, NULL),
                     200);
    /* JSON ingest with every field */
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records", run);
    const char *batch =
        "{\"rank\": 1, \"batch_seq\": 0, \"records\": ["
        "{\"seq\": 0, \"step\": 1, \"name\": \"loss\", \"occ\": 0, \"level\": \"metric\", \"dtype\": \"f64\", "
        "\"shape\": [], \"fp\": \"3ff4000000000000\", \"value\": 2.5},"
        "{\"seq\": 1, \"step\": 1, \"name\": \"h\", \"dtype\": \"bf16\", \"value\": -1.5, \"fp\": "
        "\"00000000000000ff\"},"
        "{\"seq\": 5, \"step\": 1, \"name\": \"layer3.out\", \"occ\": 2, \"level\": \"module\", \"dtype\": \"f32\", "
        "\"shape\": [8, 16], \"nbytes\": 512, \"fp\": \"FFFFFFFFFFFFFFFF\", \"t_ns\": 123, "
        "\"inputs\": [\"0123456789abcdef\"], \"chunks\": [\"8000000000000000\", \"0000000000000001\"]}]}";
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", path, batch, tok7, &o), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "stored")), 3);
    assert_false(json_is_true(json_object_get(o, "duplicate")));
    json_decref(o);
    /* a replay is acknowledged and not stored twice */
    assert_int_equal(it_call(&srv, "POST", path, batch, tok7, &o), 200);
    assert_true(json_is_true(json_object_get(o, "duplicate")));
    assert_int_equal(json_integer_value(json_object_get(o, "stored")), 0);
    json_decref(o);

    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=1", run);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    json_t *recs = json_object_get(o, "items");
    assert_int_equal(json_array_size(recs), 3);
    json_t *r0 = json_array_get(recs, 0), *r1 = json_array_get(recs, 1), *r2 = json_array_get(recs, 2);
    assert_string_equal(json_string_value(json_object_get(r0, "value_bits")), "4004000000000000");
    assert_string_equal(json_string_value(json_object_get(r1, "value_bits")), "000000000000bfc0");
    assert_string_equal(json_string_value(json_object_get(r2, "fp")), "ffffffffffffffff");
    assert_int_equal(json_integer_value(json_object_get(r2, "occurrence")), 2);
    assert_int_equal(json_integer_value(json_object_get(r2, "t_ns")), 123);
    assert_int_equal(json_integer_value(json_object_get(r2, "nbytes")), 512);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(r2, "shape"), 1)), 16);
    assert_string_equal(json_string_value(json_array_get(json_object_get(r2, "inputs"), 0)), "0123456789abcdef");
    assert_string_equal(json_string_value(json_array_get(json_object_get(r2, "chunks"), 0)), "8000000000000000");
    assert_string_equal(json_string_value(json_object_get(r2, "level")), "module");
    json_decref(o);

    /* binary ingest, then a replay of it */
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&srv, run, 0, 3, 0, 2, 4, -1, -1, -1, -1, &seq, tok7), 200);
    seq = 0;
    assert_int_equal(it_post_steps(&srv, run, 0, 3, 0, 2, 4, -1, -1, -1, -1, &seq, tok7), 200);
    assert_int_equal(it_end(&srv, run, 0, tok7), 200);
    assert_int_equal(it_end(&srv, run, 1, tok7), 200);

    snprintf(path, sizeof(path), "/api/v1/runs/%s", run);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "ended");
    assert_string_equal(json_string_value(json_object_get(o, "twin_group")), "api-g");
    json_t *m = json_array_get(json_object_get(o, "manifests"), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(m, "manifest"), "gpu"), "name")), "H100");
    json_t *rs = json_object_get(o, "rank_status");
    assert_int_equal(json_array_size(rs), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rs, 0), "records")), 8);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rs, 1), "records")), 3);
    json_decref(o);

    assert_int_equal(it_call(&srv, "GET", "/api/v1/runs?group=api-g&user=alice&status=ended", NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 1);
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 1);
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/runs?job=7&limit=1", NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 1);
    assert_string_equal(json_string_value(json_object_get(o, "next_cursor")), "1");
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/api-g", NULL, NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "pending"); /* one run only */
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/api-g/steps", NULL, NULL, &o), 200);
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/api-g/manifest-diff", NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "diffs")), 0);
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/no-such-group", NULL, NULL, &o), 404);
    assert_string_equal(json_string_value(json_object_get(o, "error")), "unknown twin group");
    json_decref(o);
}

static void test_body_cap(void **state)
{
    (void)state;
    char run[40], url[300];
    assert_int_equal(it_register(&srv, "7", NULL, 1, 0, tok7, run), 0);
    size_t n = (1u << 20) + 10;
    char *big = malloc(n);
    memset(big, ' ', n);
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", srv.base, run);
    char *resp = NULL;
    assert_int_equal(h_http("POST", url, NULL, big, n, tok7, &resp), 413);
    assert_non_null(strstr(resp, "request body too large"));
    free(resp);
    free(big);
}

static void test_static_files(void **state)
{
    (void)state;
    char url[300], *body = NULL;
    static const struct {
        const char *path;
        long code;
        const char *has;
    } cases[] = {
        {"/", 200, "<title>lockstep</title>"},
        {"/index.html", 200, "<!doctype html>"},
        {"/js/app.js", 200, "console.log"},
        {"/leak.txt", 404, "not found"}, /* symlink out of the web dir */
        {"/../outside.txt", 404, NULL},  /* curl may normalize; the server must refuse either way */
        {"/%2e%2e/outside.txt", 404, "not found"},
        {"/.hidden", 404, "not found"},
        {"/nope.css", 404, "not found"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(url, sizeof(url), "%s%s", srv.base, cases[i].path);
        long code = h_http("GET", url, NULL, NULL, 0, NULL, &body);
        if (code != cases[i].code || (cases[i].has && !strstr(body, cases[i].has)))
            fail_msg("GET %s: %ld %s", cases[i].path, code, body);
        assert_null(strstr(body, "secret outside"));
        free(body);
    }
}

/* One data-driven case: cases/NAME.case (see cases/README). */
static int run_case(const char *path, const char *run, char *why, size_t cap)
{
    fs_blob f;
    if (fs_blob_load(&f, path) < 0) {
        snprintf(why, cap, "cannot read");
        return -1;
    }
    char *text = strndup(f.data, f.len);
    fs_blob_release(&f);
    char method[16] = "", target[512] = "", ctype[128] = "application/json", expect_err[128] = "", binary[128] = "";
    long expect = 0;
    char *body = strstr(text, "\n\n");
    if (body)
        *body = 0, body += 2;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        if (!strncmp(line, "request: ", 9))
            sscanf(line + 9, "%15s %511s", method, target);
        else if (!strncmp(line, "content-type: ", 14))
            snprintf(ctype, sizeof(ctype), "%s", line + 14);
        else if (!strncmp(line, "expect: ", 8)) {
            char *sp;
            expect = strtol(line + 8, &sp, 10);
            snprintf(expect_err, sizeof(expect_err), "%s", sp + (*sp == ' '));
        } else if (!strncmp(line, "binary: ", 8))
            snprintf(binary, sizeof(binary), "%s", line + 8);
    }
    char url[1024], resolved[600];
    char *at = strstr(target, "{run}");
    if (at)
        snprintf(resolved, sizeof(resolved), "%.*s%s%s", (int)(at - target), target, run, at + 5);
    else
        snprintf(resolved, sizeof(resolved), "%s", target);
    snprintf(url, sizeof(url), "%s%s", srv.base, resolved);

    h_batch b = {0};
    const void *data = body;
    size_t len = body ? strlen(body) : 0;
    if (binary[0]) {
        /* a valid three-record batch, then the mutation the case names */
        h_batch_begin(&b, strncmp(binary, "run-id ", 7) ? run : binary + 7, 0, 99);
        for (int i = 0; i < 3; i++) {
            rec_record r = {.seq = (uint64_t)i, .step = 1, .fp = 42, .dtype = LS_F32, .name = "x", .name_len = 1};
            h_batch_add(&b, &r);
        }
        long arg = 0;
        char *sp = strchr(binary, ' ');
        if (sp)
            arg = strtol(sp + 1, NULL, 10);
        if (!strncmp(binary, "truncate ", 9))
            b.len -= (size_t)arg;
        else if (!strncmp(binary, "flip ", 5))
            b.buf[arg] ^= 0x40;
        else if (!strncmp(binary, "kind ", 5)) {
            rec_header h = {.kind = (uint16_t)arg, .rank = 0, .batch_seq = 99};
            snprintf(h.run_id, sizeof(h.run_id), "%s", run);
            snprintf(h.algo, sizeof(h.algo), "lsfp1");
            rec_header_encode(&h, b.buf); /* same size: only the kind (and CRC) change */
        } else if (!strcmp(binary, "garbage"))
            memcpy(b.buf, "NOTLOCKS", 8);
        data = b.buf;
        len = b.len;
    }
    char *resp = NULL;
    long code = h_http(method, url, ctype, data, len, admin, &resp);
    json_t *o = json_loads(resp, 0, NULL);
    const char *err = json_string_value(json_object_get(o, "error"));
    int rc = 0;
    if (code != expect || !err || strcmp(err, expect_err) != 0 || !json_is_string(json_object_get(o, "detail")) ||
        !json_is_string(json_object_get(o, "hint"))) {
        snprintf(why, cap, "want %ld \"%s\", got %ld %s", expect, expect_err, code, resp);
        rc = -1;
    }
    json_decref(o);
    free(resp);
    h_batch_free(&b);
    free(text);
    return rc;
}

static void test_bad_inputs(void **state)
{
    (void)state;
    char run[40], dir[600];
    assert_int_equal(it_register(&srv, "7", "bad-g", 2, 0, tok7, run), 0);
    const char *src = getenv("LOCKSTEP_SRC");
    snprintf(dir, sizeof(dir), "%s/tests/integration/cases", src ? src : ".");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0, failed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".case"))
            continue;
        char path[1200], why[1200];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        n++;
        if (run_case(path, run, why, sizeof(why)) < 0) {
            print_error("case %s: %s\n", e->d_name, why);
            failed++;
        }
    }
    closedir(d);
    assert_true(n >= 20);
    assert_int_equal(failed, 0);
    /* never half a batch: nothing of the bad batches is stored */
    char path[300];
    json_t *o = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s", run);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "rank_status")), 0);
    json_decref(o);
}

/* sql_text - whether an answer quotes what PostgreSQL or libpq said (SQL, its error markers, the socket). */
static int sql_text(const char *s)
{
    static const char *const marks[] = {"ERROR:",  "CONTEXT:", "SQL statement",        "PL/pgSQL",           "UPDATE ",
                                        "SELECT ", "INSERT ",  "connection to server", "Connection refused", ".s.PGSQL",
                                        NULL};
    for (int i = 0; s && marks[i]; i++)
        if (strstr(s, marks[i]))
            return 1;
    return 0;
}

/* A record at an absurd step in a group whose steps were compared: the mark moved back before it overflowed in
 * SQL, answered 503 "retry later" (agents retry for ever) quoting the SQL. Now 400 at the door. And a 503 never
 * quotes the database: PostgreSQL stopped, every answer names what failed and points at the log. */
static void test_out_of_range_step(void **state)
{
    (void)state;
    char a[40], b[40], path[200], body[600];
    assert_int_equal(it_register(&srv, "7", "far-steps", 1, 0, admin, a), 0);
    assert_int_equal(it_register(&srv, "8", "far-steps", 1, 0, admin, b), 0);
    uint64_t sa = 0, sb = 0;
    assert_int_equal(it_post_steps(&srv, a, 0, 1, 0, 4, 3, -1, -1, -1, -1, &sa, admin), 200);
    assert_int_equal(it_post_steps(&srv, b, 0, 1, 0, 4, 3, -1, -1, -1, -1, &sb, admin), 200);
    for (int i = 0; i < 100; i++) { /* the first steps compared */
        json_t *g = NULL;
        assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/far-steps/steps?compact=1", NULL, admin, &g), 200);
        char *t = json_dumps(g, 0);
        int done = t && strstr(t, "\"match\"") != NULL;
        free(t);
        json_decref(g);
        if (done)
            break;
        usleep(50000);
    }
    const char *steps[] = {"-9223372036854775808", "-9223372036854775807", "9223372036854775807", "4611686018427387905",
                           "-4611686018427387905"};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records", a);
        snprintf(body, sizeof(body),
                 "{\"rank\": 0, \"batch_seq\": %zu, \"records\": [{\"seq\": %zu, \"step\": %s, \"name\": "
                 "\"loss\", \"fp\": \"3ff4000000000000\", \"dtype\": \"f64\", \"value\": 1.25}]}",
                 100 + i, 1000 + i, steps[i]);
        json_t *o = NULL;
        assert_int_equal(it_call(&srv, "POST", path, body, admin, &o), 400);
        assert_string_equal(json_string_value(json_object_get(o, "error")), "record step out of range");
        assert_false(sql_text(json_string_value(json_object_get(o, "detail"))));
        json_decref(o);
    }
    /* the edges of the range are stored */
    snprintf(body, sizeof(body),
             "{\"rank\": 0, \"batch_seq\": 200, \"records\": [{\"seq\": 2000, \"step\": 4611686018427387904, "
             "\"name\": \"loss\", \"fp\": \"3ff4000000000000\", \"dtype\": \"f64\", \"value\": 1.25}]}");
    assert_int_equal(it_call(&srv, "POST", path, body, admin, NULL), 200);

    /* PostgreSQL away: 503s, none quoting it */
    assert_int_equal(h_pg_ctl(&pg, "stop"), 0);
    char run_path[200], rec_path[200];
    snprintf(run_path, sizeof(run_path), "/api/v1/runs/%s", b);
    snprintf(rec_path, sizeof(rec_path), "/api/v1/runs/%s/records?rank=0&step=1", b);
    const char *gets[] = {"/api/v1/health",          "/api/v1/runs",   run_path,       rec_path, "/api/v1/twins",
                          "/api/v1/twins/far-steps", "/api/v1/alerts", "/api/v1/nodes"};
    for (size_t i = 0; i < sizeof(gets) / sizeof(gets[0]); i++) {
        json_t *o = NULL;
        long st = it_call(&srv, "GET", gets[i], NULL, admin, &o);
        char *t = o ? json_dumps(o, 0) : NULL;
        if (st >= 500 && sql_text(t))
            fail_msg("GET %s answered %ld quoting the database: %s", gets[i], st, t);
        free(t);
        json_decref(o);
    }
    assert_int_equal(h_pg_ctl(&pg, "start"), 0);
    for (int i = 0; i < 100 && it_call(&srv, "GET", "/api/v1/health", NULL, NULL, NULL) != 200; i++)
        usleep(100000);

    /* A statement that fails inside PostgreSQL (a trigger that raises, as the overflow did): 503, its
     * message and SQL in the log only */
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PGresult *r = PQexec(c, "CREATE FUNCTION test_boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                            "RAISE EXCEPTION 'boom in the batches table'; END $$; CREATE TRIGGER test_boom BEFORE "
                            "INSERT ON batches FOR EACH ROW EXECUTE FUNCTION test_boom()");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records", b);
    snprintf(body, sizeof(body),
             "{\"rank\": 0, \"batch_seq\": 300, \"records\": [{\"seq\": 3000, \"step\": 9, \"name\": "
             "\"loss\", \"fp\": \"3ff4000000000000\", \"dtype\": \"f64\", \"value\": 1.25}]}");
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", path, body, admin, &o), 503);
    char *t = json_dumps(o, 0);
    if (sql_text(t) || strstr(t, "boom"))
        fail_msg("a batch answered 503 quoting the database: %s", t);
    free(t);
    json_decref(o);
    r = PQexec(c, "DROP TRIGGER test_boom ON batches; DROP FUNCTION test_boom()");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(c);
    assert_int_equal(it_call(&srv, "POST", path, body, admin, NULL), 200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_and_metrics),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_register_idempotent),
        cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_body_cap),
        cmocka_unit_test(test_static_files),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_out_of_range_step),
    };
    return cmocka_run_group_tests_name("lockstepd api", tests, setup, teardown);
}
