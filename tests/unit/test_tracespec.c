/* test_tracespec.c - LOCKSTEP_TRACE parsing (a table of valid and invalid specs) and its windows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/tracespec.h"
#include "include/lockstep.h"

static const struct {
    const char *spec;
    const char *error; /* NULL: valid; else a word the reason must contain */
} cases[] = {
    {NULL, NULL},
    {"", NULL},
    {"metrics", NULL},
    {"op", NULL},
    {"off", NULL},
    {"metrics;ops:steps=120-125:ranks=0,4-7", NULL},
    {"modules:steps=5-", NULL},
    {"modules:steps=-5", NULL},
    {"modules:ranks=3", NULL},
    {"everything", "unknown level"},
    {"ops:steps=9-3", "step window"},
    {"ops:steps=", "step window"},
    {"ops:steps=a-b", "step window"},
    {"ops:ranks=1,,2", "rank list"},
    {"ops:color=red", "unknown option"},
    {":steps=1-2", "needs a level"},
    {"ops;ops;ops;ops;ops;ops;ops;ops;ops", "clauses"},
};

static void test_parse_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        trace_spec ts;
        char why[200] = "";
        int rc = ts_parse(cases[i].spec, &ts, why, sizeof(why));
        if (!cases[i].error && rc != 0)
            fail_msg("'%s' refused: %s", cases[i].spec, why);
        if (cases[i].error && (rc == 0 || !strstr(why, cases[i].error)))
            fail_msg("'%s': expected an error about '%s', got rc %d '%s'", cases[i].spec, cases[i].error, rc, why);
    }
}

static void test_windows(void **state)
{
    (void)state;
    trace_spec ts;
    char why[200];
    assert_int_equal(ts_parse("metrics;ops:steps=120-125:ranks=0,4-7", &ts, why, sizeof(why)), 0);
    assert_true(ts_admits(&ts, LS_LEVEL_METRIC, 3, 2));
    assert_false(ts_admits(&ts, LS_LEVEL_COLLECTIVE, 3, 0));
    assert_true(ts_admits(&ts, LS_LEVEL_OP, 120, 0));
    assert_true(ts_admits(&ts, LS_LEVEL_OP, 125, 7));
    assert_false(ts_admits(&ts, LS_LEVEL_OP, 126, 7));
    assert_false(ts_admits(&ts, LS_LEVEL_OP, 122, 3));
    assert_true(ts_admits(&ts, LS_LEVEL_MODULE, 121, 5));

    assert_int_equal(ts_parse(NULL, &ts, why, sizeof(why)), 0); /* default: collectives */
    assert_true(ts_admits(&ts, LS_LEVEL_COLLECTIVE, 1000000, 99));
    assert_false(ts_admits(&ts, LS_LEVEL_MODULE, 0, 0));

    assert_int_equal(ts_parse("off", &ts, why, sizeof(why)), 0);
    assert_false(ts_admits(&ts, LS_LEVEL_METRIC, 0, 0));

    assert_int_equal(ts_parse("modules:steps=5-", &ts, why, sizeof(why)), 0);
    assert_false(ts_admits(&ts, LS_LEVEL_METRIC, 4, 0));
    assert_true(ts_admits(&ts, LS_LEVEL_METRIC, INT64_MAX, 0));
}

/* test_in_window - only clauses with a step window say "send these in full" to digest streaming. */
static void test_in_window(void **state)
{
    (void)state;
    trace_spec ts;
    char why[200];
    assert_int_equal(ts_parse("collectives;ops:steps=120-125:ranks=0,4-7", &ts, why, sizeof(why)), 0);
    assert_false(ts_in_window(&ts, LS_LEVEL_COLLECTIVE, 10, 0)); /* the broad clause admits, no window */
    assert_true(ts_admits(&ts, LS_LEVEL_COLLECTIVE, 10, 0));
    assert_true(ts_in_window(&ts, LS_LEVEL_COLLECTIVE, 121, 5));
    assert_true(ts_in_window(&ts, LS_LEVEL_OP, 125, 0));
    assert_false(ts_in_window(&ts, LS_LEVEL_OP, 125, 3)); /* rank outside */
    assert_false(ts_in_window(&ts, LS_LEVEL_OP, 126, 0)); /* step outside */
    assert_int_equal(ts_parse("modules:steps=5-", &ts, why, sizeof(why)), 0);
    assert_true(ts_in_window(&ts, LS_LEVEL_MODULE, 6, 0)); /* half-open windows are windows */
    assert_int_equal(ts_parse("modules", &ts, why, sizeof(why)), 0);
    assert_false(ts_in_window(&ts, LS_LEVEL_METRIC, 6, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parse_table), cmocka_unit_test(test_windows),
                                       cmocka_unit_test(test_in_window)};
    return cmocka_run_group_tests_name("tracespec", tests, NULL, NULL);
}
