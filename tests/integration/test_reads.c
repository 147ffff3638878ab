/* test_reads.c - lockstepd integration: every read path stays bounded in memory, size and time whatever is stored (data
 * written straight into PostgreSQL, as older versions or another writer could have left it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/common.h"

#define STEPS_WINDOW 4096 /* ranks of one step map answer (STEPS_MAX_RANKS) */

static h_pg pg;
static h_srv srv;
static PGconn *db;

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    const char *args[] = {"--db", pg.conninfo, NULL};
    if (h_srv_start(&srv, args) < 0)
        return -1;
    db = PQconnectdb(pg.conninfo);
    return PQstatus(db) == CONNECTION_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    PQfinish(db);
    int st = h_srv_kill(&srv, SIGTERM);
    h_srv_cleanup(&srv);
    h_pg_stop(&pg);
    return st == 0 ? 0 : -1;
}

static void sql(const char *q)
{
    PGresult *r = PQexec(db, q);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", q, PQresultErrorMessage(r));
    PQclear(r);
}

/* get - GET path: the status, the body's size in *bytes and its JSON (caller decrefs), and the time taken. */
static long get(const char *path, size_t *bytes, json_t **out, double *secs)
{
    char url[512], *body = NULL;
    snprintf(url, sizeof(url), "%s%s", srv.base, path);
    double t0 = h_now();
    long code = h_http("GET", url, NULL, NULL, 0, NULL, &body);
    if (secs)
        *secs = h_now() - t0;
    if (bytes)
        *bytes = body ? strlen(body) : 0;
    if (out)
        *out = json_loads(body ? body : "", 0, NULL);
    free(body);
    return code;
}

/* A group of 200 runs that say 10,000,000 ranks and one record at rank 9,999,999 (finding 1): its step map
 * answers, small, and lockstepd lives (before: one GET allocated runs x ranks cells, aborted lockstepd, and
 * again after each restart; compact=1 answered 10 million nulls a step). */
static void test_steps_absurd_ranks(void **state)
{
    (void)state;
    sql("INSERT INTO runs (run_id, job_id, twin_group, ranks, start_step) SELECT gen_random_uuid(), 'x' || i, "
        "'huge', 10000000, 0 FROM generate_series(1, 200) i");
    sql("INSERT INTO rank_progress (run_key, rank, min_step, max_step, max_seq, n_records) SELECT run_key, "
        "9999999, 0, 5, 5, 1 FROM runs WHERE twin_group = 'huge' AND job_id IN ('x1', 'x2')");
    sql("INSERT INTO step_digest_packs (run_key, rank, blk, bseq, steps, n, digest, inputs) SELECT run_key, 9999999, "
        "0, 0, '{0,1,2,3,4,5}', '{1,1,1,1,1,1}', '{42,42,42,42,42,42}', '{NULL,NULL,NULL,NULL,NULL,NULL}' FROM runs "
        "WHERE twin_group = 'huge' AND job_id IN ('x1', 'x2')");
    long rss0 = it_rss_kb(srv.pid);
    static const char *const paths[] = {
        "/api/v1/twins/huge/steps",
        "/api/v1/twins/huge/steps?compact=1",
        "/api/v1/twins/huge/steps?compact=1&rank_from=9999000",
        "/api/v1/twins/huge/steps?rank_from=9999999&rank_to=9999999",
        "/api/v1/twins/huge",
        "/api/v1/twins/huge/manifest-diff",
    };
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        size_t bytes = 0;
        double secs = 0;
        json_t *o = NULL;
        long code = get(paths[i], &bytes, &o, &secs);
        print_message("GET %s: %ld, %zu bytes, %.3f s\n", paths[i], code, bytes, secs);
        assert_int_equal(code, 200);
        assert_true(bytes < 256 * 1024);
        assert_true(secs < 5.0);
        json_decref(o);
    }
    json_t *o = NULL;
    assert_int_equal(get("/api/v1/twins/huge/steps?compact=1&rank_from=9999000", NULL, &o, NULL), 200);
    json_t *steps = json_object_get(o, "steps");
    assert_int_equal(json_array_size(steps), 6);
    json_t *ranks = json_object_get(json_array_get(steps, 0), "ranks");
    assert_int_equal(json_array_size(ranks), 1000); /* rank 9999999 is at 9999999 - rank_from */
    assert_non_null(json_string_value(json_array_get(ranks, 999)));
    json_decref(o);
    assert_int_equal(get("/api/v1/twins/huge/steps", NULL, &o, NULL), 200);
    assert_int_equal(json_array_size(json_object_get(o, "steps")), 0); /* ranks 0..4095 hold nothing */
    assert_int_equal(json_integer_value(json_object_get(o, "next_rank_from")), STEPS_WINDOW);
    json_decref(o);
    assert_int_equal(get("/api/v1/twins/huge", NULL, &o, NULL), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "runs_total")), 200);
    json_decref(o);
    long rss1 = it_rss_kb(srv.pid);
    print_message("lockstepd RSS %ld -> %ld KiB\n", rss0, rss1);
    assert_true(rss1 - rss0 < 100 * 1024);
    assert_int_equal(get("/api/v1/health", NULL, NULL, NULL), 200);
}

/* A window of many steps over many ranks is cut to a bounded number of cells; next_from says where to go on. */
static void test_steps_window_is_cut(void **state)
{
    (void)state;
    sql("INSERT INTO runs (run_id, job_id, twin_group, ranks, start_step, status) SELECT gen_random_uuid(), 'w' || i, "
        "'wide', 4096, 0, 'ended' FROM generate_series(1, 2) i");
    sql("INSERT INTO rank_progress (run_key, rank, min_step, max_step, max_seq, n_records) SELECT run_key, rk, 0, "
        "999, 999, 1000 FROM runs, generate_series(0, 4095) rk WHERE twin_group = 'wide'");
    sql("INSERT INTO step_digest_packs (run_key, rank, blk, bseq, steps, n, digest, inputs) SELECT run_key, rk, "
        "lockstep_step_block(s), 0, array_agg(s ORDER BY s), array_agg(1), array_agg(7::bigint), "
        "array_agg(NULL::bigint) FROM runs, generate_series(0, 4095) rk, generate_series(0, 39) s "
        "WHERE twin_group = 'wide' GROUP BY run_key, rk, lockstep_step_block(s)");
    json_t *o = NULL;
    size_t bytes = 0;
    double secs = 0;
    assert_int_equal(get("/api/v1/twins/wide/steps?compact=1&from=0&to=39", &bytes, &o, &secs), 200);
    long long to = json_integer_value(json_object_get(o, "to"));
    print_message("2 runs x 4096 ranks x 40 steps asked: steps 0..%lld answered (%zu bytes, %.2f s), next_from %lld\n",
                  to, bytes, secs, (long long)json_integer_value(json_object_get(o, "next_from")));
    assert_true(to < 39);
    assert_int_equal(json_integer_value(json_object_get(o, "next_from")), to + 1);
    assert_int_equal((long long)json_array_size(json_object_get(o, "steps")), to + 1);
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(json_array_get(json_object_get(o, "steps"), 0), "ranks"), 4095)),
                        "match");
    json_decref(o);
}

/* Long strings stored per run (finding 15: four 64 KiB strings made answers of 65 MB) and many runs (finding
 * 16: the exact count of every run took seconds at a million): the list stays small and its count bounded. */
static void test_runs_list_bounded(void **state)
{
    (void)state;
    sql("INSERT INTO runs (run_id, job_id, step_id, user_name, nodes, command, ranks) SELECT gen_random_uuid(), "
        "'long' || i, repeat('s', 65536), repeat('u', 65536), repeat('n', 65536), repeat('c', 65536), 1 "
        "FROM generate_series(1, 100) i");
    size_t bytes = 0;
    double secs = 0;
    json_t *o = NULL;
    assert_int_equal(get("/api/v1/runs?limit=1000&job=long7", &bytes, &o, &secs), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 1);
    assert_int_equal(
        strlen(json_string_value(json_object_get(json_array_get(json_object_get(o, "items"), 0), "command"))), 4096);
    json_decref(o);
    assert_int_equal(get("/api/v1/runs?limit=1000", &bytes, &o, &secs), 200);
    print_message("GET /api/v1/runs?limit=1000 over 100 runs of 4 x 64 KiB strings: %zu bytes, %.2f s\n", bytes, secs);
    assert_true(bytes < 6 * 1024 * 1024);
    json_decref(o);
    sql("INSERT INTO runs (run_id, job_id, ranks) SELECT gen_random_uuid(), 'many', 1 FROM generate_series(1, 20000)");
    assert_int_equal(get("/api/v1/runs?limit=50", &bytes, &o, &secs), 200);
    print_message("GET /api/v1/runs?limit=50 over 20,000 runs: %.3f s, total %s\n", secs,
                  json_is_null(json_object_get(o, "total")) ? "null (more than 10000)" : "exact");
    assert_true(json_is_null(json_object_get(o, "total")));
    assert_int_equal(json_integer_value(json_object_get(o, "total_at_least")), 10000);
    assert_non_null(json_string_value(json_object_get(o, "next_cursor")));
    json_decref(o);
    assert_int_equal(get("/api/v1/runs?job=long7", NULL, &o, NULL), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 1); /* small counts stay exact */
    json_decref(o);
}

/* A run's node list comes expanded (node_names), by the server's one node-list parser, so that no client parses
 * one: ranges keep their padding, each name once; a malformed list or one of more than 4096 nodes reads null. */
static void test_runs_node_names(void **state)
{
    (void)state;
    sql("INSERT INTO runs (run_id, job_id, ranks, nodes) VALUES (gen_random_uuid(), 'nn-1', 1, 'n[01-03],gpu7,n02'), "
        "(gen_random_uuid(), 'nn-2', 1, 'n[1-'), (gen_random_uuid(), 'nn-3', 1, 'n[1-100000]'), "
        "(gen_random_uuid(), 'nn-4', 1, '')");
    static const char *const want[][2] = {
        {"nn-1", "[\"n01\", \"n02\", \"n03\", \"gpu7\"]"}, {"nn-2", "null"}, {"nn-3", "null"}, {"nn-4", "[]"}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char path[64];
        json_t *o = NULL;
        snprintf(path, sizeof(path), "/api/v1/runs?job=%s", want[i][0]);
        assert_int_equal(get(path, NULL, &o, NULL), 200);
        json_t *run = json_array_get(json_object_get(o, "items"), 0);
        char *got = json_dumps(json_object_get(run, "node_names"), JSON_ENCODE_ANY | JSON_COMPACT);
        json_t *w = json_loads(want[i][1], JSON_DECODE_ANY, NULL);
        char *wants = json_dumps(w, JSON_ENCODE_ANY | JSON_COMPACT);
        assert_string_equal(got, wants);
        free(got);
        free(wants);
        json_decref(w);
        if (i == 0) { /* the run's own page says the same */
            char one[128];
            json_t *d = NULL;
            snprintf(one, sizeof(one), "/api/v1/runs/%s", json_string_value(json_object_get(run, "run_id")));
            assert_int_equal(get(one, NULL, &d, NULL), 200);
            assert_true(json_equal(json_object_get(d, "node_names"), json_object_get(run, "node_names")));
            json_decref(d);
        }
        json_decref(o);
    }
}

/* A run with 10,000 ranks of progress and 2000 manifests: its detail pages by rank. */
static void test_run_detail_pages(void **state)
{
    (void)state;
    sql("INSERT INTO runs (run_id, job_id, twin_group, ranks) VALUES ('11111111-2222-3333-4444-555555555555', "
        "'detail', 'detail-g', 10000), ('11111111-2222-3333-4444-666666666666', 'detail2', 'detail-g', 10000)");
    sql("INSERT INTO rank_progress (run_key, rank, min_step, max_step, max_seq, n_records) SELECT run_key, rk, 0, "
        "1, 1, 2 FROM runs, generate_series(0, 9999) rk WHERE job_id = 'detail'");
    sql("INSERT INTO manifests (run_key, rank, manifest) SELECT run_key, rk, jsonb_build_object('rank', rk, 'host', "
        "'h' || (rk % 7), 'pad', repeat('p', 2000)) FROM runs, generate_series(0, 1999) rk WHERE twin_group = "
        "'detail-g'");
    json_t *o = NULL;
    size_t bytes = 0;
    assert_int_equal(get("/api/v1/runs/11111111-2222-3333-4444-555555555555", &bytes, &o, NULL), 200);
    print_message("run detail of 10,000 ranks: %zu bytes, %zu manifests, %zu rank states, next_rank_from %lld\n", bytes,
                  json_array_size(json_object_get(o, "manifests")), json_array_size(json_object_get(o, "rank_status")),
                  (long long)json_integer_value(json_object_get(o, "next_rank_from")));
    assert_true(json_array_size(json_object_get(o, "rank_status")) <= 4096);
    assert_true(json_array_size(json_object_get(o, "manifests")) <= 256);
    long long next = json_integer_value(json_object_get(o, "next_rank_from"));
    assert_true(next > 0);
    json_decref(o);
    char path[200];
    snprintf(path, sizeof(path), "/api/v1/runs/11111111-2222-3333-4444-555555555555?rank_from=%lld", next);
    assert_int_equal(get(path, NULL, &o, NULL), 200);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(o, "rank_status"), 0), "rank")),
                     next);
    json_decref(o);
    /* the one manifest diff (common/json/mdiff.h), kept per group, reads the lowest ranks of both runs together up
     * to 512 manifests (ranks 0-255 of each) whatever was uploaded, and says so; a difference there still shows */
    sql("UPDATE manifests SET manifest = manifest || '{\"env\": {\"NCCL_ALGO\": \"Tree\"}}' WHERE rank = 3 AND run_key "
        "= "
        "(SELECT run_key FROM runs WHERE job_id = 'detail2')");
    double secs = 0;
    assert_int_equal(get("/api/v1/twins/detail-g/manifest-diff", &bytes, &o, &secs), 200);
    print_message("manifest diff of 2 x 2000 ranks: %zu bytes in %.3f s\n", bytes, secs);
    assert_true(json_is_boolean(json_object_get(o, "explains")));
    assert_int_equal(json_integer_value(json_object_get(o, "manifests_read")), 512);
    assert_int_equal(json_integer_value(json_object_get(o, "manifests_stored")), 4000);
    assert_int_equal(json_integer_value(json_object_get(o, "ranks_through")), 255);
    char *txt = json_dumps(o, JSON_COMPACT);
    assert_non_null(strstr(txt, "env.NCCL_ALGO"));
    free(txt);
    json_decref(o);
}

/* A fleet of 3000 nodes and 12,000 GPUs in the tables: the node list pages (before: every node with every
 * GPU in one answer, each GPU matched against each node). */
static void test_nodes_page(void **state)
{
    (void)state;
    sql("INSERT INTO hw_nodes (name, score) SELECT 'f' || i, i / 3000.0 FROM generate_series(1, 3000) i");
    sql("INSERT INTO hw_gpus (uuid, node) SELECT 'GPU-' || i || '-' || g, 'f' || i FROM generate_series(1, 3000) i, "
        "generate_series(0, 3) g");
    json_t *o = NULL;
    size_t bytes = 0;
    double secs = 0;
    assert_int_equal(get("/api/v1/nodes", &bytes, &o, &secs), 200);
    print_message("GET /api/v1/nodes over 3000 nodes and 12,000 GPUs: %zu nodes, %zu bytes, %.3f s\n",
                  json_array_size(json_object_get(o, "items")), bytes, secs);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 1000);
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 3000);
    assert_string_equal(json_string_value(json_object_get(o, "next_cursor")), "1000");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "items"), 0), "name")),
                        "f3000");
    assert_int_equal(json_array_size(json_object_get(json_array_get(json_object_get(o, "items"), 0), "gpus")), 4);
    json_decref(o);
    assert_int_equal(get("/api/v1/nodes?cursor=2990&limit=50", NULL, &o, NULL), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 10);
    assert_true(json_is_null(json_object_get(o, "next_cursor")));
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps_absurd_ranks), cmocka_unit_test(test_steps_window_is_cut),
        cmocka_unit_test(test_runs_list_bounded),  cmocka_unit_test(test_run_detail_pages),
        cmocka_unit_test(test_nodes_page),         cmocka_unit_test(test_runs_node_names),
    };
    return cmocka_run_group_tests_name("lockstepd bounded reads", tests, setup, teardown);
}
