/* test_first_json.c - a first divergence's judgement in JSON (server/twins/first_json.h), from a table of
 * verdicts: the keys a twin group's first_divergence and a change's first effect both carry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "server/twins/first_json.h"

static const struct {
    const char *what;
    cause_kind kind;
    int origin[3], norigin, thin;
    int give_summary; /* a manifest diff summary is given */
    const char *json; /* what first_json_judge sets, keys in order */
} CASES[] = {
    {"an origin on two ranks",
     CAUSE_ORIGIN,
     {1, 3},
     2,
     0,
     1,
     "{\"cause\":\"origin\",\"cause_detail\":\"why\",\"origin_ranks\":[1,3],\"thin_evidence\":false,"
     "\"configuration\":null}"},
    {"every rank, thin evidence",
     CAUSE_EVERY_RANK,
     {0},
     0,
     1,
     0,
     "{\"cause\":\"every-rank\",\"cause_detail\":\"why\",\"origin_ranks\":[],\"thin_evidence\":true,"
     "\"configuration\":null}"},
    {"a configuration difference with its summary",
     CAUSE_CONFIGURATION,
     {0},
     1,
     0,
     1,
     "{\"cause\":\"configuration\",\"cause_detail\":\"why\",\"origin_ranks\":[0],\"thin_evidence\":false,"
     "\"configuration\":\"NCCL_ALGO differs\"}"},
    {"a configuration difference without a summary",
     CAUSE_CONFIGURATION,
     {0},
     1,
     0,
     0,
     "{\"cause\":\"configuration\",\"cause_detail\":\"why\",\"origin_ranks\":[0],\"thin_evidence\":false,"
     "\"configuration\":null}"},
};

static void test_judge_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        cause_result cv = {.kind = CASES[i].kind, .norigin = CASES[i].norigin, .thin = CASES[i].thin};
        memcpy(cv.origin, CASES[i].origin, sizeof(CASES[i].origin));
        strcpy(cv.why, "why");
        json_t *summary = json_string("NCCL_ALGO differs"), *o = json_object();
        first_json_judge(o, &cv, CASES[i].give_summary ? summary : NULL);
        char *got = json_dumps(o, JSON_COMPACT);
        if (strcmp(got, CASES[i].json))
            fail_msg("%s: got %s, want %s", CASES[i].what, got, CASES[i].json);
        assert_int_equal(summary->refcount, CASES[i].give_summary && CASES[i].kind == CAUSE_CONFIGURATION ? 2 : 1);
        free(got);
        json_decref(o);
        json_decref(summary);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_judge_table)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
