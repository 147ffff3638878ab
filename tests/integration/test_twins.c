/* test_twins.c - lockstepd integration: twin groups that match, diverge at a chosen step and rank, vote 2 to 1, resume, and miss records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    const char *args[] = {"--db", pg.conninfo, NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    int st = h_srv_kill(&srv, SIGTERM);
    h_srv_cleanup(&srv);
    h_pg_stop(&pg);
    return st == 0 ? 0 : -1;
}

/* Post `steps` steps (in batches of `per_batch` steps) on every rank of run,
 * flipping record `flip` of step `flip_step` on rank `flip_rank`. */
static void feed(const char *run, int ranks, int64_t first, int steps, int per_batch, int flip_rank,
                 int64_t flip_step, int flip, int drop_rank, int64_t drop_step, int drop)
{
    for (int r = 0; r < ranks; r++) {
        uint64_t seq = (uint64_t)first * 1000, bseq = 0;
        for (int64_t s = first; s < first + steps; s += per_batch) {
            int n = (int)(first + steps - s < per_batch ? first + steps - s : per_batch);
            long code = it_post_steps(&srv, run, r, bseq++, s, n, 5, r == flip_rank ? flip_step : -1, flip,
                                      r == drop_rank ? drop_step : -1, drop, &seq, NULL);
            assert_int_equal(code, 200);
        }
        assert_int_equal(it_end(&srv, run, r, NULL), 200);
    }
}

static void test_match(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "100", "t-match", 2, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "101", "t-match", 2, 0, NULL, b), 0);
    feed(a, 2, 0, 20, 4, -1, -1, -1, -1, -1, -1);
    feed(b, 2, 0, 20, 7, -1, -1, -1, -1, -1, -1); /* other batch boundaries, same records */
    json_t *o = it_wait_group(&srv, "t-match", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    assert_true(json_is_null(json_object_get(o, "first_divergence")));
    assert_int_equal(json_array_size(json_object_get(o, "runs")), 2);
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/t-match/steps?from=0&to=19", NULL, NULL, &o), 200);
    json_t *steps = json_object_get(o, "steps");
    assert_int_equal(json_array_size(steps), 20);
    for (size_t i = 0; i < 20; i++) {
        json_t *ranks = json_object_get(json_array_get(steps, i), "ranks");
        assert_int_equal(json_array_size(ranks), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(ranks, 1), "status")), "match");
    }
    json_decref(o);
}

static void test_diverge_at_step_and_rank(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "110", "t-div", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "111", "t-div", 4, 0, NULL, b), 0);
    feed(a, 4, 0, 30, 5, -1, -1, -1, -1, -1, -1);
    /* run b: rank 2 differs at step 17 (record 3), rank 3 later at step 25 */
    for (int r = 0; r < 4; r++) {
        uint64_t seq = 0, bseq = 0;
        for (int64_t s = 0; s < 30; s += 5)
            assert_int_equal(it_post_steps(&srv, b, r, bseq++, s, 5, 5, r == 2 ? 17 : r == 3 ? 25 : -1, 3, -1, -1,
                                           &seq, NULL),
                             200);
    }
    json_t *o = it_wait_group(&srv, "t-div", "diverged");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "diverged");
    /* wait for both ranks' divergences */
    for (int i = 0; i < 100 && json_array_size(json_object_get(o, "per_rank")) < 2; i++) {
        json_decref(o);
        usleep(50000);
        o = it_wait_group(&srv, "t-div", "diverged");
    }
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 17);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 2);
    assert_string_equal(json_string_value(json_object_get(first, "name")), "layer3.out");
    assert_int_equal(json_integer_value(json_object_get(first, "occurrence")), 0);
    assert_int_equal(json_integer_value(json_object_get(first, "seq")), 17 * 5 + 3);
    assert_string_equal(json_string_value(json_object_get(first, "kind")), "mismatch");
    json_t *runs = json_object_get(first, "runs");
    assert_int_equal(json_array_size(runs), 2);
    const char *fa = json_string_value(json_object_get(json_array_get(runs, 0), "fp"));
    const char *fb = json_string_value(json_object_get(json_array_get(runs, 1), "fp"));
    assert_non_null(fa);
    assert_non_null(fb);
    assert_string_not_equal(fa, fb);
    assert_true(json_is_null(json_object_get(first, "odd_run_id"))); /* 1 against 1: no majority */
    json_t *per = json_object_get(o, "per_rank");
    assert_int_equal(json_array_size(per), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(per, 1), "rank")), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(per, 1), "step")), 25);
    assert_true(json_real_value(json_object_get(first, "detection_ms")) < 1000.0);
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/t-div/steps?from=16&to=18", NULL, NULL, &o), 200);
    json_t *s17 = json_array_get(json_object_get(o, "steps"), 1);
    assert_int_equal(json_integer_value(json_object_get(s17, "step")), 17);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(s17, "ranks"), 2), "status")),
                        "diverged");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(s17, "ranks"), 1), "status")),
                        "match");
    json_decref(o);
}

static void test_majority(void **state)
{
    (void)state;
    char a[40], b[40], c[40];
    assert_int_equal(it_register(&srv, "120", "t-maj", 1, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "121", "t-maj", 1, 0, NULL, b), 0);
    assert_int_equal(it_register(&srv, "122", "t-maj", 1, 0, NULL, c), 0);
    feed(a, 1, 0, 10, 10, -1, -1, -1, -1, -1, -1);
    feed(b, 1, 0, 10, 10, 0, 6, 0, -1, -1, -1); /* b's loss differs at step 6 */
    feed(c, 1, 0, 10, 10, -1, -1, -1, -1, -1, -1);
    json_t *o = it_wait_group(&srv, "t-maj", "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 6);
    assert_string_equal(json_string_value(json_object_get(first, "name")), "loss");
    /* the three-run view may need the last run's data: wait for odd_run_id */
    for (int i = 0; i < 100 && json_is_null(json_object_get(first, "odd_run_id")); i++) {
        json_decref(o);
        usleep(50000);
        o = it_wait_group(&srv, "t-maj", "diverged");
        first = json_object_get(o, "first_divergence");
    }
    assert_string_equal(json_string_value(json_object_get(first, "odd_run_id")), b);
    json_t *runs = json_object_get(first, "runs");
    assert_int_equal(json_array_size(runs), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *r = json_array_get(runs, i);
        int is_b = !strcmp(json_string_value(json_object_get(r, "run_id")), b);
        assert_int_equal(json_is_true(json_object_get(r, "majority")), !is_b);
        assert_true(json_is_number(json_object_get(r, "value")));
    }
    json_decref(o);
}

static void test_resumed_overlap(void **state)
{
    (void)state;
    char a[40], b[40];
    /* a runs steps 0..29; b resumed at step 20 and runs 20..29: compared on 20..29 only */
    assert_int_equal(it_register(&srv, "130", "t-res", 1, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "131", "t-res", 1, 20, NULL, b), 0);
    feed(a, 1, 0, 30, 10, 0, 5, 2, -1, -1, -1); /* a difference before b's start does not count */
    feed(b, 1, 20, 10, 5, -1, -1, -1, -1, -1, -1);
    json_t *o = it_wait_group(&srv, "t-res", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);

    char c[40];
    assert_int_equal(it_register(&srv, "132", "t-res2", 1, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "133", "t-res2", 1, 20, NULL, c), 0);
    feed(a, 1, 0, 30, 10, -1, -1, -1, -1, -1, -1);
    feed(c, 1, 20, 10, 5, 0, 24, 1, -1, -1, -1);
    o = it_wait_group(&srv, "t-res2", "diverged");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "first_divergence"), "step")), 24);
    json_decref(o);
}

static void test_missing_at_end(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "140", "t-miss", 1, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "141", "t-miss", 1, 0, NULL, b), 0);
    feed(a, 1, 0, 8, 8, -1, -1, -1, -1, -1, -1);
    feed(b, 1, 0, 8, 8, -1, -1, -1, 0, 7, 4); /* b lacks record 4 of its last step */
    json_t *o = it_wait_group(&srv, "t-miss", "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_string_equal(json_string_value(json_object_get(first, "kind")), "missing");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 7);
    assert_string_equal(json_string_value(json_object_get(first, "name")), "layer4.out");
    json_t *runs = json_object_get(first, "runs");
    int absent = 0;
    for (size_t i = 0; i < json_array_size(runs); i++)
        if (!json_is_true(json_object_get(json_array_get(runs, i), "present")))
            absent++;
    assert_int_equal(absent, 1);
    json_decref(o);
}

static void test_rank_never_sent(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "160", "t-empty", 2, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "161", "t-empty", 2, 0, NULL, b), 0);
    feed(a, 2, 0, 6, 3, -1, -1, -1, -1, -1, -1);
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&srv, b, 0, 0, 0, 6, 5, -1, -1, -1, -1, &seq, NULL), 200);
    assert_int_equal(it_end(&srv, b, 0, NULL), 200);
    assert_int_equal(it_end(&srv, b, 1, NULL), 200); /* rank 1 of b ends without a single record */
    json_t *o = it_wait_group(&srv, "t-empty", "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 1);
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 0);
    assert_int_equal(json_integer_value(json_object_get(first, "seq")), 0);
    assert_string_equal(json_string_value(json_object_get(first, "kind")), "missing");
    assert_int_equal(json_array_size(json_object_get(o, "per_rank")), 1); /* rank 0 matches */
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/t-empty/steps?from=0&to=0", NULL, NULL, &o), 200);
    json_t *ranks = json_object_get(json_array_get(json_object_get(o, "steps"), 0), "ranks");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ranks, 0), "status")), "match");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ranks, 1), "status")), "missing");
    json_decref(o);
}

static void test_manifest_diff(void **state)
{
    (void)state;
    char a[40], b[40], path[300];
    assert_int_equal(it_register(&srv, "150", "t-man", 1, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "151", "t-man", 1, 0, NULL, b), 0);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", a);
    assert_int_equal(it_call(&srv, "POST", path,
                             "{\"rank\": 0, \"host\": \"n1\", \"env\": {\"NCCL_ALGO\": \"Ring\", \"OMP_NUM_THREADS\": \"4\"}}",
                             NULL, NULL),
                     200);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", b);
    assert_int_equal(it_call(&srv, "POST", path,
                             "{\"rank\": 0, \"host\": \"n2\", \"env\": {\"NCCL_ALGO\": \"Tree\", \"OMP_NUM_THREADS\": \"4\"}}",
                             NULL, NULL),
                     200);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/t-man/manifest-diff", NULL, NULL, &o), 200);
    /* The host differs by nature: an identity, kept apart; NCCL_ALGO is a difference that explains. */
    json_t *diffs = json_object_get(o, "diffs");
    assert_int_equal(json_array_size(diffs), 1);
    json_t *d = json_array_get(diffs, 0);
    assert_string_equal(json_string_value(json_object_get(d, "key")), "env.NCCL_ALGO");
    assert_string_equal(json_string_value(json_object_get(d, "class")), "configuration");
    json_t *v = json_object_get(d, "values");
    assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "value")), "Ring");
    assert_string_equal(json_string_value(json_object_get(json_array_get(v, 1), "value")), "Tree");
    assert_true(json_is_true(json_object_get(o, "explains")));
    json_t *ids = json_object_get(o, "identities");
    int saw_host = 0;
    for (size_t i = 0; i < json_array_size(ids); i++)
        saw_host |= !strcmp(json_string_value(json_object_get(json_array_get(ids, i), "key")), "host");
    assert_true(saw_host);
    json_decref(o);
}

/* post_json - one JSON batch of records on `rank` of `run`; `recs` is the records array's text. */
static void post_json(const char *run, int rank, int bseq, const char *recs)
{
    char path[300], *body = malloc(strlen(recs) + 100);
    sprintf(body, "{\"rank\": %d, \"batch_seq\": %d, \"records\": [%s]}", rank, bseq, recs);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records", run);
    assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
    free(body);
}

static void end_with(const char *run, int rank, int code)
{
    char path[300], body[80];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/end", run);
    snprintf(body, sizeof(body), "{\"rank\": %d, \"exit_code\": %d}", rank, code);
    assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
}

/* collective_run - 20 allreduces on each of `ranks` ranks (records with input fingerprints and a call site);
 * in_rank/in_at: that rank's input of the in_at-th call differs (-1: every rank's, -2: none), and every
 * rank's output of it then differs too (`diverge`). */
static void collective_run(const char *run, int ranks, int in_rank, int in_at, int diverge, const char *site)
{
    for (int r = 0; r < ranks; r++) {
        char *recs = calloc(1, 20 * 400);
        for (int k = 0; k < 20; k++) {
            int in_differs = k == in_at && (in_rank == -1 || in_rank == r);
            int out_differs = k == in_at && diverge;
            char rec[400];
            snprintf(rec, sizeof(rec),
                     "%s{\"seq\": %d, \"step\": 0, \"name\": \"mpi.allreduce\", \"occurrence\": %d, "
                     "\"level\": \"collective\", \"dtype\": \"f64\", \"shape\": [%d, 1], \"nbytes\": 8, "
                     "\"fp\": \"%016x\", \"inputs\": [\"%016x\"], \"site\": %s}",
                     k ? ", " : "", k, k, ranks, 0x1000 + k + (out_differs ? 0x7000 : 0),
                     0x2000 + 16 * r + k + (in_differs ? 0x7000 : 0), site);
            strcat(recs, rec);
        }
        post_json(run, r, 0, recs);
        free(recs);
        end_with(run, r, 0);
    }
}

/* wait_settled - the group's verdict once `ranks` ranks have their divergence. */
static json_t *wait_settled(const char *group, int ranks)
{
    json_t *o = it_wait_group(&srv, group, "diverged");
    for (int i = 0; i < 200 && (int)json_array_size(json_object_get(o, "per_rank")) < ranks; i++) {
        json_decref(o);
        usleep(50000);
        o = it_wait_group(&srv, group, "diverged");
    }
    assert_int_equal(json_array_size(json_object_get(o, "per_rank")), ranks);
    return o;
}

static void test_cause_origin(void **state)
{
    (void)state;
    char a[40], b[40];
    static const char site[] = "{\"module\": \"heat\", \"offset\": 7891, \"function\": \"relax_step\", "
                               "\"function_offset\": 1003}";
    assert_int_equal(it_register(&srv, "160", "t-origin", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "161", "t-origin", 4, 0, NULL, b), 0);
    collective_run(a, 4, -2, -1, 0, site);
    collective_run(b, 4, 3, 18, 1, site); /* rank 3 alone fed the 19th allreduce another input */
    json_t *o = wait_settled("t-origin", 4);
    json_t *first = json_object_get(o, "first_divergence");
    assert_string_equal(json_string_value(json_object_get(first, "cause")), "origin");
    assert_int_equal(json_array_size(json_object_get(first, "origin_ranks")), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(first, "origin_ranks"), 0)), 3);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 3); /* not rank 0, the lowest */
    assert_int_equal(json_integer_value(json_object_get(first, "occurrence")), 18);
    assert_string_equal(json_string_value(json_object_get(json_object_get(first, "site"), "text")),
                        "relax_step+0x3eb (heat+0x1ed3)");
    assert_non_null(strstr(json_string_value(json_object_get(first, "cause_detail")), "rank 3"));
    assert_true(json_is_null(json_object_get(first, "suggest_ignore")));
    json_decref(o);
    /* The records endpoint gives the call site back, with its text. */
    char path[300];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=3&limit=1", b);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    json_t *site0 = json_object_get(json_array_get(json_object_get(o, "items"), 0), "site");
    assert_string_equal(json_string_value(json_object_get(site0, "function")), "relax_step");
    assert_int_equal(json_integer_value(json_object_get(site0, "offset")), 7891);
    json_decref(o);
}

static void test_cause_every_rank(void **state)
{
    (void)state;
    char a[40], b[40];
    static const char site[] = "{\"module\": \"heat\", \"offset\": 8198, \"function\": "
                               "\"report_timings(grid const*, double)\", \"function_offset\": 102}";
    assert_int_equal(it_register(&srv, "170", "t-every", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "171", "t-every", 4, 0, NULL, b), 0);
    collective_run(a, 4, -2, -1, 0, site);
    collective_run(b, 4, -1, 19, 1, site); /* the last call: every rank's input differs (timings) */
    json_t *o = wait_settled("t-every", 4);
    json_t *first = json_object_get(o, "first_divergence");
    assert_string_equal(json_string_value(json_object_get(first, "cause")), "every-rank");
    assert_int_equal(json_array_size(json_object_get(first, "origin_ranks")), 0);
    assert_string_equal(json_string_value(json_object_get(first, "suggest_ignore")), "report_timings");
    json_decref(o);
}

static void test_cause_operation_and_configuration(void **state)
{
    (void)state;
    char a[40], b[40], c[40], d[40], path[300];
    static const char site[] = "\"train.py:84 step\""; /* a client's own site: a function name */
    assert_int_equal(it_register(&srv, "180", "t-op", 2, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "181", "t-op", 2, 0, NULL, b), 0);
    collective_run(a, 2, -2, -1, 0, site);
    collective_run(b, 2, -2, 5, 1, site); /* inputs match, outputs differ */
    json_t *o = wait_settled("t-op", 2);
    json_t *first = json_object_get(o, "first_divergence");
    assert_string_equal(json_string_value(json_object_get(first, "cause")), "operation");
    assert_string_equal(json_string_value(json_object_get(json_object_get(first, "site"), "text")), "train.py:84 step");
    json_decref(o);
    /* The same divergence with another command line: configuration explains it. */
    assert_int_equal(it_register(&srv, "182", "t-conf", 2, 0, NULL, c), 0);
    assert_int_equal(it_register(&srv, "183", "t-conf", 2, 0, NULL, d), 0);
    for (int r = 0; r < 2; r++) {
        char body[200];
        snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", c);
        snprintf(body, sizeof(body), "{\"rank\": %d, \"argv\": [\"heat\", \"--grid\", \"2x1\"]}", r);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", d);
        snprintf(body, sizeof(body), "{\"rank\": %d, \"argv\": [\"heat\", \"--grid\", \"1x2\"]}", r);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
    }
    collective_run(c, 2, -2, -1, 0, site);
    collective_run(d, 2, 1, 5, 1, site);
    o = wait_settled("t-conf", 2);
    first = json_object_get(o, "first_divergence");
    assert_string_equal(json_string_value(json_object_get(first, "cause")), "configuration");
    assert_non_null(strstr(json_string_value(json_object_get(first, "configuration")), "argv"));
    assert_true(json_is_true(json_object_get(json_object_get(o, "manifest_diff"), "explains")));
    json_decref(o);
}

/* Twins that both failed at once, with a handful of agreeing records, are not a match; nor twins that
 * recorded nothing they share. */
static void test_incomplete(void **state)
{
    (void)state;
    char a[40], b[40], c[40], d[40];
    assert_int_equal(it_register(&srv, "190", "t-failed", 2, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "191", "t-failed", 2, 0, NULL, b), 0);
    static const char rec[] = "{\"seq\": 0, \"step\": 0, \"name\": \"mpi.bcast\", \"fp\": \"00000000000000aa\"}";
    for (int r = 0; r < 2; r++) {
        post_json(a, r, 0, rec);
        post_json(b, r, 0, rec);
        end_with(a, r, r == 0 ? 3 : 143);
        end_with(b, r, r == 0 ? 3 : 143);
    }
    json_t *o = it_wait_group(&srv, "t-failed", "incomplete");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "incomplete");
    json_t *run0 = json_array_get(json_object_get(o, "runs"), 0);
    assert_int_equal(json_integer_value(json_object_get(run0, "exit_code")), 3);
    assert_int_equal(json_array_size(json_object_get(run0, "failed_ranks")), 2);
    assert_non_null(strstr(json_string_value(json_object_get(o, "status_reason")), "failed"));
    json_decref(o);
    assert_int_equal(it_register(&srv, "192", "t-nothing", 1, 0, NULL, c), 0);
    assert_int_equal(it_register(&srv, "193", "t-nothing", 1, 0, NULL, d), 0);
    end_with(c, 0, 0);
    end_with(d, 0, 0);
    o = it_wait_group(&srv, "t-nothing", "incomplete");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "incomplete");
    assert_non_null(strstr(json_string_value(json_object_get(o, "status_reason")), "nothing"));
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),           cmocka_unit_test(test_diverge_at_step_and_rank),
        cmocka_unit_test(test_majority),        cmocka_unit_test(test_resumed_overlap),
        cmocka_unit_test(test_missing_at_end),  cmocka_unit_test(test_rank_never_sent),
        cmocka_unit_test(test_manifest_diff),   cmocka_unit_test(test_cause_origin),
        cmocka_unit_test(test_cause_every_rank), cmocka_unit_test(test_cause_operation_and_configuration),
        cmocka_unit_test(test_incomplete),
    };
    return cmocka_run_group_tests_name("lockstepd twins", tests, setup, teardown);
}
