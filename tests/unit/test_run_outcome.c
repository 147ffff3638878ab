/* test_run_outcome.c - one run's outcome in its twin group (server/rules/outcome.h), from a table of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "server/rules/outcome.h"

static const struct {
    const char *what;
    run_place p; /* status, failed, at_first, majority, in_majority, named, is_named */
    const char *outcome;
} CASES[] = {
    {"a pending group's run", {"pending", 0, 0, 0, 0, 0, 0}, "pending"},
    {"a pending group's failed run: the group is not decided yet", {"pending", 1, 0, 0, 0, 0, 0}, "pending"},
    {"a matching group's run", {"match", 0, 0, 0, 0, 0, 0}, "matched"},
    {"three runs, this one in the majority", {"diverged", 0, 1, 1, 1, 1, 0}, "majority"},
    {"three runs, this one the odd one out", {"diverged", 0, 1, 1, 0, 1, 1}, "odd-one-out"},
    {"five runs, two outside the majority, none named", {"diverged", 0, 1, 1, 0, 0, 0}, "outside-majority"},
    {"five runs, in the majority of three", {"diverged", 0, 1, 1, 1, 0, 0}, "majority"},
    {"a pair that disagrees: nothing says which", {"diverged", 0, 1, 0, 0, 0, 0}, "diverged"},
    {"a restore difference names the resumed run", {"diverged", 0, 1, 0, 0, 1, 1}, "odd-one-out"},
    {"... and the run whose checkpoint it restored is not placed", {"diverged", 0, 1, 0, 0, 1, 0}, "diverged"},
    {"a run the divergence did not compare", {"diverged", 0, 0, 1, 0, 1, 0}, "diverged"},
    {"in the majority of a diverged group, though it failed later", {"diverged", 1, 1, 1, 1, 1, 0}, "majority"},
    {"an incomplete group's failed run", {"incomplete", 1, 0, 0, 0, 0, 0}, "failed"},
    {"an incomplete group's other run", {"incomplete", 0, 0, 0, 0, 0, 0}, "incomplete"},
    {"no status given", {NULL, 0, 0, 0, 0, 0, 0}, "pending"},
};

static void test_outcome_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        const char *got = twin_outcome(&CASES[i].p);
        if (strcmp(got, CASES[i].outcome))
            fail_msg("%s: %s, expected %s", CASES[i].what, got, CASES[i].outcome);
    }
}

/* Every outcome the rule gives is one RUN_OUTCOMES lists (docs/server.md names these), each with its words. */
static void test_outcomes_listed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        int listed = 0;
        for (int k = 0; RUN_OUTCOMES[k]; k++)
            listed |= !strcmp(RUN_OUTCOMES[k], twin_outcome(&CASES[i].p));
        assert_true(listed);
    }
    for (int k = 0; RUN_OUTCOMES[k]; k++) /* and each says what it means (the dashboard's words on hover) */
        assert_true(*twin_outcome_why(RUN_OUTCOMES[k]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outcome_table),
        cmocka_unit_test(test_outcomes_listed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
