/* test_kind.c - what a twin group is for (server/compare/kind.h), from a table of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "server/compare/kind.h"

static const struct {
    const char *what;
    kind_facts f; /* name, narrow, has_change, has_noise */
    const char *kind;
} CASES[] = {
    {"a plain twin group", {"run-42", 0, 0, 0}, "twins"},
    {"what lockstep twin names without --change or --noise", {"twin-20261129-120000-1a2b", 0, 0, 0}, "twins"},
    {"a replay group a narrow made", {"g1.narrow-7", 1, 0, 0}, "replay"},
    {"a narrow of noise replicas is still a replay", {"exp.noise.narrow-3", 1, 0, 0}, "replay"},
    {"a name like a replay group that no narrow made (registration refuses those)", {"g1.narrow-7", 0, 0, 0}, "twins"},
    {"noise replicas of an experiment", {"exp-20261129-120000-1a2b.noise", 0, 0, 0}, "noise"},
    {"noise replicas of a named experiment", {"lr-sweep.noise", 0, 0, 0}, "noise"},
    {"the change of an experiment", {"lr-sweep.change", 0, 0, 0}, "experiment"},
    {"the baseline of an experiment with a change", {"lr-sweep", 0, 1, 0}, "experiment"},
    {"the baseline of an experiment with noise only", {"lr-sweep", 0, 0, 1}, "experiment"},
    {"the baseline of an experiment with both", {"exp-20261129-120000-1a2b", 0, 1, 1}, "experiment"},
    {"a group called noise is not noise replicas", {"noise", 0, 0, 0}, "twins"},
    {"nor one called .noise alone", {".noise", 0, 0, 0}, "twins"},
    {"a name that only contains .noise", {"a.noise.b", 0, 0, 0}, "twins"},
    {"a name that only contains .change", {"a.change-2", 0, 0, 0}, "twins"},
    {"no name", {NULL, 0, 0, 0}, "twins"},
};

static void test_kind_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        const char *got = TWIN_KINDS[twin_kind(&CASES[i].f)];
        if (strcmp(got, CASES[i].kind))
            fail_msg("%s: %s, expected %s", CASES[i].what, got, CASES[i].kind);
    }
}

/* Every kind's name parses back to it; nothing else parses. */
static void test_kind_names(void **state)
{
    (void)state;
    int n = 0;
    for (; TWIN_KINDS[n]; n++)
        assert_int_equal(twin_kind_parse(TWIN_KINDS[n]), n);
    assert_int_equal(n, 4);
    assert_int_equal(twin_kind_parse("incident"), -1);
    assert_int_equal(twin_kind_parse(""), -1);
    assert_int_equal(twin_kind_parse(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_table),
        cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
