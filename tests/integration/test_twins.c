/* test_twins.c - lockstepd integration: twin groups that match, diverge at a chosen step and rank, vote 2 to 1, resume,
 * and miss records; the twin-group list and its filters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/common.h"

/* the statuses GET /api/v1/twins?status= takes (server/rules/status.h) */
static const char *const TWIN_STATUS_NAMES[] = {"pending", "diverged", "incomplete", "match", NULL};

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
static void feed(const char *run, int ranks, int64_t first, int steps, int per_batch, int flip_rank, int64_t flip_step,
                 int flip, int drop_rank, int64_t drop_step, int drop)
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
            assert_int_equal(it_post_steps(&srv, b, r, bseq++, s, 5, 5,
                                           r == 2   ? 17
                                           : r == 3 ? 25
                                                    : -1,
                                           3, -1, -1, &seq, NULL),
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
    assert_int_equal(
        it_call(&srv, "POST", path,
                "{\"rank\": 0, \"host\": \"n1\", \"env\": {\"NCCL_ALGO\": \"Ring\", \"OMP_NUM_THREADS\": \"4\"}}", NULL,
                NULL),
        200);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", b);
    assert_int_equal(
        it_call(&srv, "POST", path,
                "{\"rank\": 0, \"host\": \"n2\", \"env\": {\"NCCL_ALGO\": \"Tree\", \"OMP_NUM_THREADS\": \"4\"}}", NULL,
                NULL),
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

/* wait_settled - the group's findings once `ranks` ranks have their divergence. */
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

/* One rank's input of an allreduce differed while every rank's output matched (the sum absorbed it): the group is
 * a match, and its report counts the absorbed difference and shows the first (rank, record, call site), in the twin
 * API and in lockstep twins. A diverging group's step of divergence is no absorbed difference. */
static void test_absorbed_difference(void **state)
{
    (void)state;
    char a[40], b[40];
    static const char site[] = "{\"module\": \"heat\", \"offset\": 7891, \"function\": \"relax_step\", "
                               "\"function_offset\": 1003}";
    assert_int_equal(it_register(&srv, "170", "t-absorbed", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "171", "t-absorbed", 4, 0, NULL, b), 0);
    collective_run(a, 4, -2, -1, 0, site);
    collective_run(b, 4, 2, 7, 0, site); /* rank 2's 8th input differs; the outputs match */
    json_t *o = it_wait_group(&srv, "t-absorbed", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_t *ab = json_object_get(o, "absorbed");
    for (int i = 0; i < 100 && !json_is_object(ab); i++) { /* the looks that note it may come after the status */
        json_decref(o);
        usleep(50000);
        o = it_wait_group(&srv, "t-absorbed", "match");
        ab = json_object_get(o, "absorbed");
    }
    assert_true(json_is_object(ab));
    assert_int_equal(json_integer_value(json_object_get(ab, "count")), 1);
    assert_int_equal(json_integer_value(json_object_get(ab, "ranks")), 1);
    json_t *f = json_object_get(ab, "first");
    assert_int_equal(json_integer_value(json_object_get(f, "rank")), 2);
    assert_int_equal(json_integer_value(json_object_get(f, "step")), 0);
    assert_string_equal(json_string_value(json_object_get(f, "name")), "mpi.allreduce");
    assert_int_equal(json_integer_value(json_object_get(f, "occurrence")), 7);
    assert_string_equal(json_string_value(json_object_get(f, "site")), "relax_step+0x3eb (heat+0x1ed3)");
    json_decref(o);
    char cli[400], line[512];
    snprintf(cli, sizeof(cli), "%s/bin/lockstep", getenv("LOCKSTEP_BUILD") ?: "build");
    int out[2];
    assert_int_equal(pipe(out), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* the CLI as an argument vector: no shell between the test and it */
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        execl(cli, cli, "twins", "t-absorbed", "--server", srv.base, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *p = fdopen(out[0], "r");
    assert_non_null(p);
    int said = 0;
    while (fgets(line, sizeof(line), p))
        said |= strstr(line, "absorbed: 1 collective's inputs differed on some ranks while its outputs matched; "
                             "first at step 0, rank 2: mpi.allreduce (occurrence 7) at relax_step+0x3eb") != NULL;
    fclose(p);
    waitpid(pid, NULL, 0);
    assert_true(said);
    /* the step where a group diverges is its divergence, not an absorbed difference */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/t-origin", NULL, NULL, &o), 200);
    assert_true(json_is_null(json_object_get(o, "absorbed")));
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
    const char *why = json_string_value(json_object_get(o, "status_reason"));
    assert_non_null(strstr(why, "none recorded anything (no records)"));
    assert_null(strstr(why, "shard")); /* the reason that applies, not every possible one */
    json_decref(o);
    /* runs of 2 and 4 ranks, compared on their shards, that recorded none: "no shards", not "no records" */
    char e[40], f[40];
    assert_int_equal(it_register(&srv, "194", "t-noshard", 2, 0, NULL, e), 0);
    assert_int_equal(it_register(&srv, "195", "t-noshard", 4, 0, NULL, f), 0);
    for (int r = 0; r < 4; r++) {
        if (r < 2) {
            post_json(e, r, 0, rec);
            end_with(e, r, 0);
        }
        post_json(f, r, 0, rec);
        end_with(f, r, 0);
    }
    o = it_wait_group(&srv, "t-noshard", "incomplete");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "incomplete");
    why = json_string_value(json_object_get(o, "status_reason"));
    assert_non_null(strstr(why, "different rank counts (2 to 4 ranks)"));
    assert_non_null(strstr(why, "2 of 2 runs recorded no shard (no shards)"));
    assert_null(strstr(why, "no records"));
    json_decref(o);
}

/* end_abort - rank `rank` of `run` reports an abort (MPI_Abort) with `code`, as the agent does before it. */
static void end_abort(const char *run, int rank, int code)
{
    char path[300], body[100];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/end", run);
    snprintf(body, sizeof(body), "{\"rank\": %d, \"exit_code\": %d, \"abort\": true}", rank, code);
    assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
}

/* The same MPI_Abort shows the same exit in both twins, whichever rank's end arrives first and whatever signal the
 * launcher's report of the aborting rank names: the abort's code and rank. */
static void test_abort_exit(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "196", "t-abort", 2, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "197", "t-abort", 2, 0, NULL, b), 0);
    static const char rec[] = "{\"seq\": 0, \"step\": 0, \"name\": \"mpi.bcast\", \"fp\": \"00000000000000aa\"}";
    for (int r = 0; r < 2; r++) {
        post_json(a, r, 0, rec);
        post_json(b, r, 0, rec);
    }
    end_with(a, 0, 137); /* a: the killed peer's end first, then the abort, then the plugin's report of it */
    end_abort(a, 1, 3);
    end_with(a, 1, 3);
    end_abort(b, 1, 3); /* b: the abort first; the plugin reports the aborting rank as killed */
    end_with(b, 0, 137);
    end_with(b, 1, 137);
    json_t *o = it_wait_group(&srv, "t-abort", "incomplete");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "incomplete");
    for (int i = 0; i < 2; i++) {
        json_t *run = json_array_get(json_object_get(o, "runs"), (size_t)i);
        assert_int_equal(json_integer_value(json_object_get(run, "exit_code")), 3);
        assert_int_equal(json_integer_value(json_object_get(run, "aborted_rank")), 1);
        assert_non_null(strstr(json_string_value(json_object_get(run, "exit_detail")), "rank 1 called MPI_Abort"));
    }
    json_decref(o);
}

/* reg - register a run of `group` for `user` on `nodes` (ranks 2); its id into `id`. */
static void reg(const char *job, const char *group, const char *user, const char *nodes, char *id)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"job_id\": \"%s\", \"twin_group\": \"%s\", \"ranks\": 2, \"user\": \"%s\", \"nodes\": \"%s\", "
             "\"command\": \"train\", \"mode\": \"det\"}",
             job, group, user, nodes);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", body, NULL, &o), 201);
    snprintf(id, 40, "%s", json_string_value(json_object_get(o, "run_id")));
    json_decref(o);
}

/* groups - GET path: the groups of its items, space-separated, into `out`; the reply (caller decrefs). */
static json_t *groups(const char *path, char *out, size_t cap)
{
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    size_t i, n = 0;
    json_t *g;
    out[0] = 0;
    json_array_foreach(json_object_get(o, "items"), i, g) n +=
        (size_t)snprintf(out + n, cap - n, "%s%s", i ? " " : "", json_string_value(json_object_get(g, "group")));
    return o;
}

static const char *next_of(json_t *o)
{
    const char *c = json_string_value(json_object_get(o, "next_cursor"));
    return c ? c : "null";
}

/* GET /api/v1/twins: every group with its status (the one rule), run count, users, first divergence, classification;
 * filtered by status, user, node (hostlist or manifest) and since; paged by cursor with and without a status
 * filter. And the runs list's group_status. */
static void test_group_list(void **state)
{
    (void)state;
    char m1[40], m2[40], d1[40], d2[40], p1[40], p2[40], p3[40], x1[40], x2[40];
    reg("900", "L-match", "lu1", "gpu[01-02]", m1);
    reg("901", "L-match", "lu1", "gpu[01-02]", m2);
    reg("902", "L-div", "lu1", "gpu[03-04]", d1);
    reg("903", "L-div", "lu1", "gpu[03-04]", d2);
    reg("904", "L-pend1", "lu2", "x7", p1);
    reg("905", "L-pend2", "lu2", "x8", p2);
    reg("906", "L-pend3", "lu2", "x9", p3);
    reg("907", "L-manifest", "lu3", "", x1);
    reg("908", "L-manifest", "lu3", "", x2);
    /* a node named only by a rank's manifest */
    char path[200];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", x1);
    assert_int_equal(it_call(&srv, "POST", path, "{\"rank\": 1, \"slurm_node\": \"mnode9\"}", NULL, NULL), 200);
    feed(m1, 2, 0, 6, 3, -1, -1, -1, -1, -1, -1);
    feed(m2, 2, 0, 6, 3, -1, -1, -1, -1, -1, -1);
    feed(d1, 2, 0, 6, 3, -1, -1, -1, -1, -1, -1);
    feed(d2, 2, 0, 6, 3, 1, 4, 2, -1, -1, -1); /* rank 1, step 4, record 2 */
    json_decref(it_wait_group(&srv, "L-match", "match"));
    json_t *dv = it_wait_group(&srv, "L-div", "diverged");
    json_decref(dv);
    /* the fleet's classification, once it has evaluated the group */
    json_t *t = NULL;
    for (int i = 0; i < 100; i++) {
        json_decref(t);
        assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/L-div", NULL, NULL, &t), 200);
        if (json_is_object(json_object_get(t, "classification")))
            break;
        usleep(100000);
    }
    json_t *cls = json_object_get(t, "classification");
    assert_true(json_is_object(cls));
    assert_non_null(json_string_value(json_object_get(cls, "class")));
    assert_non_null(json_string_value(json_object_get(cls, "code")));
    assert_non_null(json_string_value(json_object_get(cls, "reason")));
    assert_non_null(json_string_value(json_object_get(cls, "evaluated_at")));
    assert_null(json_object_get(t, "verdict")); /* the word is the replay's */

    char got[512];
    json_t *o = groups("/api/v1/twins?user=lu1", got, sizeof(got));
    assert_string_equal(got, "L-div L-match"); /* newest first */
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 2);
    assert_string_equal(next_of(o), "null");
    /* the statuses ?status= takes come with the list (the dashboard's filter restates none) */
    json_t *sts = json_object_get(o, "statuses");
    assert_int_equal(json_array_size(sts), 4);
    for (size_t k = 0; k < 4; k++)
        assert_string_equal(json_string_value(json_array_get(sts, k)), TWIN_STATUS_NAMES[k]);
    json_t *it = json_array_get(json_object_get(o, "items"), 0);
    assert_string_equal(json_string_value(json_object_get(it, "status")), "diverged");
    assert_int_equal(json_integer_value(json_object_get(it, "run_count")), 2);
    assert_int_equal(json_array_size(json_object_get(it, "runs")), 2);
    json_t *r0 = json_array_get(json_object_get(it, "runs"), 0); /* each run's outcome, with what it means */
    assert_string_equal(json_string_value(json_object_get(r0, "outcome")), "diverged");
    assert_non_null(strstr(json_string_value(json_object_get(r0, "outcome_why")) ?: "", "twin"));
    assert_string_equal(json_string_value(json_array_get(json_object_get(it, "users"), 0)), "lu1");
    json_t *fd = json_object_get(it, "first_divergence");
    assert_true(json_equal(fd, json_object_get(t, "first_divergence"))); /* the same object as the group's */
    assert_int_equal(json_integer_value(json_object_get(fd, "step")), 4);
    assert_int_equal(json_integer_value(json_object_get(fd, "rank")), 1);
    assert_non_null(json_string_value(json_object_get(fd, "cause"))); /* the cause, as GET /twins/G has it */
    assert_true(json_equal(json_object_get(it, "classification"), json_object_get(t, "classification")));
    assert_string_equal(json_string_value(json_object_get(it, "status_reason")),
                        json_string_value(json_object_get(t, "status_reason")));
    assert_null(json_object_get(it, "verdict"));
    assert_null(json_object_get(it, "cause"));
    it = json_array_get(json_object_get(o, "items"), 1);
    assert_string_equal(json_string_value(json_object_get(it, "status")), "match");
    assert_true(json_is_null(json_object_get(it, "first_divergence")));
    json_decref(o);
    json_decref(t);

    /* the status filter applies the same rule */
    json_decref(groups("/api/v1/twins?user=lu1&status=diverged", got, sizeof(got)));
    assert_string_equal(got, "L-div");
    o = groups("/api/v1/twins?user=lu1&status=match&limit=1", got, sizeof(got));
    assert_string_equal(got, "L-match");
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 1);
    assert_string_equal(next_of(o), "null");
    json_decref(o);
    /* node: the hostlist (zero padding kept) or a rank's manifest */
    json_decref(groups("/api/v1/twins?node=gpu02", got, sizeof(got)));
    assert_string_equal(got, "L-match");
    json_decref(groups("/api/v1/twins?node=gpu2", got, sizeof(got)));
    assert_string_equal(got, "");
    json_decref(groups("/api/v1/twins?node=mnode9", got, sizeof(got)));
    assert_string_equal(got, "L-manifest");
    json_decref(groups("/api/v1/twins?node=x8&status=pending", got, sizeof(got)));
    assert_string_equal(got, "L-pend2");
    /* since */
    o = groups("/api/v1/twins?since=2099-01-01", got, sizeof(got));
    assert_string_equal(got, "");
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 0);
    json_decref(o);
    json_decref(groups("/api/v1/twins?user=lu1&since=2000-01-01T00:00:00Z", got, sizeof(got)));
    assert_string_equal(got, "L-div L-match");

    /* paging: without a status filter the cursor is an offset and total counts them all */
    o = groups("/api/v1/twins?user=lu2&limit=2", got, sizeof(got));
    assert_string_equal(got, "L-pend3 L-pend2");
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 3);
    assert_string_equal(next_of(o), "2");
    json_decref(o);
    o = groups("/api/v1/twins?user=lu2&limit=2&cursor=2", got, sizeof(got));
    assert_string_equal(got, "L-pend1");
    assert_string_equal(next_of(o), "null");
    json_decref(o);
    /* with one, a page ends at a further match; total only when the first page saw every group */
    o = groups("/api/v1/twins?status=pending&user=lu2&limit=2", got, sizeof(got));
    assert_string_equal(got, "L-pend3 L-pend2");
    assert_string_equal(next_of(o), "2");
    assert_true(json_is_null(json_object_get(o, "total")));
    json_decref(o);
    o = groups("/api/v1/twins?status=pending&user=lu2&limit=2&cursor=2", got, sizeof(got));
    assert_string_equal(got, "L-pend1");
    assert_string_equal(next_of(o), "null");
    json_decref(o);
    o = groups("/api/v1/twins?status=pending&user=lu2", got, sizeof(got));
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 3);
    json_decref(o);

    /* bad arguments */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins?status=bogus", NULL, NULL, &o), 400);
    assert_non_null(strstr(json_string_value(json_object_get(o, "detail")), "pending, diverged, incomplete, match"));
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins?since=yesterday", NULL, NULL, NULL), 400);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins?since=2026-13-01", NULL, NULL, NULL), 400);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins?limit=0", NULL, NULL, NULL), 400);

    /* the runs list: each run with its group's status */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/runs?job=903", NULL, NULL, &o), 200);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(o, "items"), 0), "group_status")), "diverged");
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/runs?job=904", NULL, NULL, &o), 200);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(o, "items"), 0), "group_status")), "pending");
    json_decref(o);
    char solo[40];
    assert_int_equal(it_register(&srv, "909", NULL, 1, 0, NULL, solo), 0);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/runs?job=909", NULL, NULL, &o), 200);
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(o, "items"), 0), "group_status")));
    json_decref(o);
}

/* mix_recs - `n` records of step 0 on one rank: name "x" (occurrence 0) then "r1", "r2", ...; record k's
 * fingerprint is 0xa0 + k, plus `bump` for record `at` (-1: none); name "y" instead of "x" when `other`. */
static void mix_recs(char *out, size_t cap, int n, int at, int bump, int other)
{
    size_t l = 0;
    out[0] = 0;
    for (int k = 0; k < n && l < cap; k++) {
        char name[16];
        snprintf(name, sizeof(name), k == 0 ? (other ? "y" : "x") : "r%d", k);
        l += (size_t)snprintf(out + l, cap - l, "%s{\"seq\": %d, \"step\": 0, \"name\": \"%s\", \"fp\": \"%016x\"}",
                              k ? ", " : "", k, name, 0xa0 + k + (k == at ? bump : 0));
    }
}

/* mix_run - one run of group `group` (user "mix", 2 ranks): rank r posts nrec[r] records (mix_recs with
 * at[r]/bump, other[r]) and, when `ended`, ends with exits[r]. */
static void mix_run(const char *job, const char *group, const int *nrec, const int *at, int bump, const int *other,
                    int ended, const int *exits, char *id)
{
    reg(job, group, "mix", "", id);
    for (int r = 0; r < 2; r++) {
        char recs[1024];
        if (nrec[r] > 0) {
            mix_recs(recs, sizeof(recs), nrec[r], at ? at[r] : -1, bump, other ? other[r] : 0);
            post_json(id, r, 0, recs);
        }
        if (ended)
            end_with(id, r, exits ? exits[r] : 0);
    }
}

/* settle - wait for group `g`'s status `want` with `ranks` per-rank divergences. */
static void settle(const char *g, const char *want, int ranks)
{
    json_t *o = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(o);
        o = it_wait_group(&srv, g, want);
        if ((int)json_array_size(json_object_get(o, "per_rank")) == ranks)
            break;
        usleep(50000);
    }
    if (strcmp(json_string_value(json_object_get(o, "status")) ?: "", want) ||
        (int)json_array_size(json_object_get(o, "per_rank")) != ranks)
        fail_msg("group %s: %s with %zu divergences, want %s with %d", g,
                 json_string_value(json_object_get(o, "status")), json_array_size(json_object_get(o, "per_rank")), want,
                 ranks);
    json_decref(o);
}

/* The list's status (from findings_facts, batched) is GET /twins/G's (from findings_load) for every group of a
 * mixed set: match, diverged, diverged with a failed run, pending (one run; a run still running), incomplete
 * (failed runs; nothing in common; a missing record the failure explains), and the two cases where the cause
 * rule's first divergence decides whether the failure explains it (the earliest point mixes a missing and a
 * differing record: incomplete; the same with a configuration cause: diverged). So do the status filter and
 * the runs list's group_status. */
static void test_list_status_is_the_groups(void **state)
{
    (void)state;
    char id[16][40];
    static const int two[] = {2, 2}, three[] = {3, 3}, at1[] = {1, 1}, fail1[] = {0, 1}, fail_all[] = {3, 143},
                     none[] = {0, 0}, one_only[] = {3, 2}, y1[] = {0, 1};
    mix_run("950", "M-match", two, NULL, 0, NULL, 1, NULL, id[0]);
    mix_run("951", "M-match", two, NULL, 0, NULL, 1, NULL, id[1]);
    mix_run("952", "M-div", three, NULL, 0, NULL, 1, NULL, id[2]);
    mix_run("953", "M-div", three, at1, 0x100, NULL, 1, NULL, id[3]);
    mix_run("954", "M-div-failed", three, NULL, 0, NULL, 1, NULL, id[4]);
    mix_run("955", "M-div-failed", three, at1, 0x100, NULL, 1, fail1, id[5]);
    mix_run("956", "M-one", two, NULL, 0, NULL, 1, NULL, id[6]);
    mix_run("957", "M-running", two, NULL, 0, NULL, 1, NULL, id[7]);
    mix_run("958", "M-running", two, NULL, 0, NULL, 0, NULL, id[8]);
    mix_run("959", "M-failed", two, NULL, 0, NULL, 1, fail_all, id[9]);
    mix_run("960", "M-failed", two, NULL, 0, NULL, 1, fail_all, id[10]);
    mix_run("961", "M-nothing", none, NULL, 0, NULL, 1, NULL, id[11]);
    mix_run("962", "M-nothing", none, NULL, 0, NULL, 1, NULL, id[12]);
    /* the failed run lacks the last record of rank 1 (what its failure cut short) */
    mix_run("963", "M-cut", three, NULL, 0, NULL, 1, NULL, id[13]);
    mix_run("964", "M-cut", one_only, NULL, 0, NULL, 1, fail1, id[14]);
    /* rank 0's record 0 differs; rank 1's run B holds "y" where A holds "x": at the earliest point (seq 0)
     * rank 0 differs (e0) and rank 1 lacks a record; B failed */
    char e0a[40], e0b[40], cfa[40], cfb[40];
    static const int at0[] = {0, -1};
    mix_run("965", "M-early", two, NULL, 0, NULL, 1, NULL, e0a);
    mix_run("966", "M-early", two, at0, 0x100, y1, 1, fail1, e0b);
    /* the same with another command line: the cause is configuration, which stands on e0 (not missing) */
    reg("967", "M-early-conf", "mix", "", cfa);
    reg("968", "M-early-conf", "mix", "", cfb);
    for (int r = 0; r < 2; r++) {
        char path[300], body[200], recs[1024];
        snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", cfa);
        snprintf(body, sizeof(body), "{\"rank\": %d, \"argv\": [\"train\", \"--grid\", \"2x1\"]}", r);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", cfb);
        snprintf(body, sizeof(body), "{\"rank\": %d, \"argv\": [\"train\", \"--grid\", \"1x2\"]}", r);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
        mix_recs(recs, sizeof(recs), 2, -1, 0, 0);
        post_json(cfa, r, 0, recs);
        end_with(cfa, r, 0);
        mix_recs(recs, sizeof(recs), 2, at0[r], 0x100, y1[r]);
        post_json(cfb, r, 0, recs);
        end_with(cfb, r, fail1[r]);
    }

    static const struct {
        const char *group, *status;
        int divs;
    } want[] = {{"M-match", "match", 0},        {"M-div", "diverged", 2},    {"M-div-failed", "diverged", 2},
                {"M-one", "pending", 0},        {"M-running", "pending", 0}, {"M-failed", "incomplete", 0},
                {"M-nothing", "incomplete", 0}, {"M-cut", "incomplete", 1},  {"M-early", "incomplete", 2},
                {"M-early-conf", "diverged", 2}};
    size_t nwant = sizeof(want) / sizeof(want[0]);
    for (size_t i = 0; i < nwant; i++)
        settle(want[i].group, want[i].status, want[i].divs);

    char got[1024];
    json_t *o = groups("/api/v1/twins?user=mix&limit=100", got, sizeof(got));
    assert_int_equal(json_array_size(json_object_get(o, "items")), nwant);
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(o, "items"), i, it)
    {
        const char *g = json_string_value(json_object_get(it, "group"));
        char path[300];
        json_t *t = NULL;
        snprintf(path, sizeof(path), "/api/v1/twins/%s", g);
        assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &t), 200);
        if (strcmp(json_string_value(json_object_get(it, "status")), json_string_value(json_object_get(t, "status"))))
            fail_msg("group %s: the list says %s (%s), GET /twins/G %s (%s)", g,
                     json_string_value(json_object_get(it, "status")),
                     json_string_value(json_object_get(it, "status_reason")),
                     json_string_value(json_object_get(t, "status")),
                     json_string_value(json_object_get(t, "status_reason")));
        assert_string_equal(json_string_value(json_object_get(it, "status_reason")),
                            json_string_value(json_object_get(t, "status_reason")));
        assert_true(json_equal(json_object_get(it, "first_divergence"), json_object_get(t, "first_divergence")));
        for (size_t k = 0; k < nwant; k++)
            if (!strcmp(want[k].group, g))
                assert_string_equal(json_string_value(json_object_get(t, "status")), want[k].status);
        json_decref(t);
    }
    json_decref(o);
    /* the cause rule decided the two close cases */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/M-early", NULL, NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "first_divergence"), "cause")), "missing");
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/M-early-conf", NULL, NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "first_divergence"), "cause")),
                        "configuration");
    json_decref(o);

    /* the status filter: exactly the groups with that status, for every status */
    for (int s = 0; TWIN_STATUS_NAMES[s]; s++) {
        char path[200], expect[1024] = "";
        size_t l = 0;
        for (size_t k = nwant; k-- > 0;) /* newest first */
            if (!strcmp(want[k].status, TWIN_STATUS_NAMES[s]))
                l += (size_t)snprintf(expect + l, sizeof(expect) - l, "%s%s", l ? " " : "", want[k].group);
        snprintf(path, sizeof(path), "/api/v1/twins?user=mix&status=%s", TWIN_STATUS_NAMES[s]);
        json_decref(groups(path, got, sizeof(got)));
        if (strcmp(got, expect))
            fail_msg("?status=%s: %s, want %s", TWIN_STATUS_NAMES[s], got, expect);
    }

    /* the runs list: each run with its group's status */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/runs?user=mix&limit=100", NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 19);
    json_array_foreach(json_object_get(o, "items"), i, it)
    {
        const char *g = json_string_value(json_object_get(it, "twin_group"));
        for (size_t k = 0; k < nwant; k++)
            if (!strcmp(want[k].group, g))
                assert_string_equal(json_string_value(json_object_get(it, "group_status")), want[k].status);
    }
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_diverge_at_step_and_rank),
        cmocka_unit_test(test_majority),
        cmocka_unit_test(test_resumed_overlap),
        cmocka_unit_test(test_missing_at_end),
        cmocka_unit_test(test_rank_never_sent),
        cmocka_unit_test(test_manifest_diff),
        cmocka_unit_test(test_cause_origin),
        cmocka_unit_test(test_absorbed_difference),
        cmocka_unit_test(test_cause_every_rank),
        cmocka_unit_test(test_cause_operation_and_configuration),
        cmocka_unit_test(test_incomplete),
        cmocka_unit_test(test_abort_exit),
        cmocka_unit_test(test_group_list),
        cmocka_unit_test(test_list_status_is_the_groups),
    };
    return cmocka_run_group_tests_name("lockstepd twins", tests, setup, teardown);
}
