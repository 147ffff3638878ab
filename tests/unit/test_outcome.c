/* test_outcome.c - a job's own outcome in its twin group (cli/outcome.h): each job of a group reads its own, never
 * another run's, as lockstepd gives it (runs[].outcome). One case a row: the group's document (GET
 * /api/v1/twins/G, as much as the words read), the job, the node of its diverging rank, and the outcome. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "cli/outcome.h"

/* Three runs of jobs 1, 2 and 3 with lockstepd's outcomes (GET /api/v1/twins/G's runs[].outcome), and a first
 * divergence whose run entries `runs` name `odd`. */
#define RUNS3(o1, o2, o3)                                                                                              \
    "\"runs\": [{\"run_id\": \"a\", \"job_id\": \"1\", \"exit_code\": 0, \"outcome\": \"" o1 "\"}, {\"run_id\": "      \
    "\"b\", \"job_id\": \"2\", \"exit_code\": 0, \"outcome\": \"" o2 "\"}, {\"run_id\": \"c\", \"job_id\": \"3\", "    \
    "\"exit_code\": 0, \"outcome\": \"" o3 "\"}]"
#define FD(runs, odd)                                                                                                  \
    "\"first_divergence\": {\"step\": 6, \"rank\": 1, \"name\": \"linear.weight\", \"cause\": \"origin\", "            \
    "\"odd_run_id\": " odd ", \"runs\": [" runs "]}"
#define TRIO_FD                                                                                                        \
    FD("{\"run_id\": \"a\", \"majority\": true}, {\"run_id\": \"b\", \"majority\": true}, {\"run_id\": \"c\", "        \
       "\"majority\": false}",                                                                                         \
       "\"c\"")
#define FIVE(o4, o5)                                                                                                   \
    "\"runs\": [{\"run_id\": \"a\", \"job_id\": \"1\", \"outcome\": \"majority\"}, {\"run_id\": \"b\", \"job_id\": "   \
    "\"2\", \"outcome\": \"majority\"}, {\"run_id\": \"c\", \"job_id\": \"3\", \"outcome\": \"majority\"}, "           \
    "{\"run_id\": \"d\", \"job_id\": \"4\", \"outcome\": \"" o4 "\"}, {\"run_id\": \"e\", \"job_id\": \"5\", "         \
    "\"outcome\": \"" o5 "\"}], " FD("{\"run_id\": \"a\", \"majority\": true}, {\"run_id\": \"b\", \"majority\": "     \
                                     "true}, {\"run_id\": \"c\", \"majority\": true}, {\"run_id\": \"d\", "            \
                                     "\"majority\": false}, {\"run_id\": \"e\", \"majority\": false}",                 \
                                     "null")
#define PAIR                                                                                                           \
    "{\"status\": \"diverged\", \"classification\": {\"class\": \"hardware\"}, \"runs\": [{\"run_id\": \"a\", "        \
    "\"job_id\": \"11\", \"outcome\": \"diverged\"}, {\"run_id\": \"b\", \"job_id\": \"12\", \"outcome\": "            \
    "\"diverged\"}], " FD("{\"run_id\": \"a\"}, {\"run_id\": \"b\"}", "null") "}"

static const struct {
    const char *twin, *job, *node, *kind, *text;
    int look;
} CASES[] = {
    {"{\"status\": \"match\", " RUNS3("matched", "matched", "matched") "}", "2", NULL, "matched", "g matched", 0},
    {"{\"status\": \"pending\", " RUNS3("pending", "pending", "pending") "}", "1", NULL, "pending", "g pending", 0},
    {"{\"status\": \"diverged\", \"classification\": {\"class\": \"hardware\"}, " RUNS3("majority", "majority",
                                                                                        "odd-one-out") ", " TRIO_FD "}",
     "3", NULL, "odd-one-out", "g odd one out at step 6, rank 1 (linear.weight): origin, hardware", 1},
    {"{\"status\": \"diverged\", \"classification\": {\"class\": \"hardware\"}, " RUNS3("majority", "majority",
                                                                                        "odd-one-out") ", " TRIO_FD "}",
     "1", NULL, "majority", "g matched the majority (job 3 is the odd one out)", 1},
    /* four runs, two off the majority: no single odd run */
    {"{\"status\": \"diverged\", " FIVE("outside-majority", "outside-majority") "}", "4", NULL, "outside-majority",
     "g outside the majority at step 6, rank 1 (linear.weight): origin", 1},
    {"{\"status\": \"diverged\", " FIVE("outside-majority", "outside-majority") "}", "2", NULL, "majority",
     "g matched the majority (jobs 4, 5 are outside it)", 1},
    /* a pair: no majority; each job names its twin and where its own diverging rank ran */
    {PAIR, "11", "n3", "diverged",
     "g diverged from its twin, job 12, at step 6, rank 1 (linear.weight): origin, hardware (its rank 1 ran on n3)", 1},
    {PAIR, "12", NULL, "diverged",
     "g diverged from its twin, job 11, at step 6, rank 1 (linear.weight): origin, hardware", 1},
    /* incomplete: this job's run failed, or its twin's */
    {"{\"status\": \"incomplete\", \"runs\": [{\"run_id\": \"a\", \"job_id\": \"1\", \"exit_code\": 3, \"outcome\": "
     "\"failed\"}, {\"run_id\": \"b\", \"job_id\": \"2\", \"exit_code\": 0, \"outcome\": \"incomplete\"}]}",
     "1", NULL, "failed", "g incomplete: this job's run failed (exit 3)", 1},
    {"{\"status\": \"incomplete\", \"runs\": [{\"run_id\": \"a\", \"job_id\": \"1\", \"exit_code\": 3, \"outcome\": "
     "\"failed\"}, {\"run_id\": \"b\", \"job_id\": \"2\", \"exit_code\": 0, \"outcome\": \"incomplete\"}]}",
     "2", NULL, "incomplete", "g incomplete: job 1's run failed", 1},
    {"{\"status\": \"incomplete\", " RUNS3("incomplete", "incomplete", "incomplete") "}", "2", NULL, "incomplete",
     "g incomplete: the runs have nothing in common to compare", 1},
    /* lockstepd's outcome stands, whatever the entries would let one guess: the CLI restates no rule */
    {"{\"status\": \"diverged\", " RUNS3("majority", "majority", "odd-one-out") ", " FD(
         "{\"run_id\": \"a\"}, {\"run_id\": \"b\"}, {\"run_id\": \"c\"}", "null") "}",
     "1", NULL, "majority", "g matched the majority (job 3 is the odd one out)", 1},
    {"{\"status\": \"incomplete\", \"runs\": [{\"run_id\": \"a\", \"job_id\": \"1\", \"status\": \"ended\", "
     "\"failed_ranks\": [2], \"outcome\": \"failed\"}, {\"run_id\": \"b\", \"job_id\": \"2\", \"outcome\": "
     "\"incomplete\"}]}",
     "1", NULL, "failed", "g incomplete: this job's run failed", 1},
    /* a job of several runs reads as the most telling of them */
    {"{\"status\": \"diverged\", \"runs\": [{\"run_id\": \"a\", \"job_id\": \"1\", \"outcome\": \"majority\"}, "
     "{\"run_id\": \"b\", \"job_id\": \"1\", \"outcome\": \"odd-one-out\"}, {\"run_id\": \"c\", \"job_id\": \"2\", "
     "\"outcome\": \"majority\"}], " TRIO_FD "}",
     "1", NULL, "odd-one-out", "g odd one out at step 6, rank 1 (linear.weight): origin", 1},
    /* an older lockstepd, no outcomes: the group's status, as it is */
    {"{\"status\": \"diverged\", \"runs\": [{\"run_id\": \"a\", \"job_id\": \"1\"}, {\"run_id\": \"b\", \"job_id\": "
     "\"2\"}], " FD("{\"run_id\": \"a\"}, {\"run_id\": \"b\"}", "null") "}",
     "1", NULL, "diverged", "g diverged", 1},
};

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        json_error_t e;
        json_t *twin = json_loads(CASES[i].twin, 0, &e);
        if (!twin)
            fail_msg("case %zu: %s", i, e.text);
        job_outcome o;
        outcome_of(twin, "g", CASES[i].job, CASES[i].node, &o);
        if (strcmp(o.kind, CASES[i].kind) || strcmp(o.text, CASES[i].text) || o.needs_look != CASES[i].look)
            fail_msg("case %zu: %s \"%s\" %d, wanted %s \"%s\"", i, o.kind, o.text, o.needs_look, CASES[i].kind,
                     CASES[i].text);
        json_decref(twin);
    }
}

/* Only a run no majority places is worth looking up: the pair's, never the trio's. */
static void test_run_to_place(void **state)
{
    (void)state;
    int rank = -9;
    json_t *pair = json_loads(PAIR, 0, NULL), *trio = json_loads(CASES[2].twin, 0, NULL),
           *match = json_loads(CASES[0].twin, 0, NULL);
    const char *run = outcome_run_to_place(pair, "12", &rank);
    assert_non_null(run);
    assert_string_equal(run, "b");
    assert_int_equal(rank, 1);
    assert_null(outcome_run_to_place(trio, "3", &rank));
    assert_null(outcome_run_to_place(trio, "1", &rank));
    assert_null(outcome_run_to_place(match, "1", &rank));
    json_decref(pair);
    json_decref(trio);
    json_decref(match);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_run_to_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
