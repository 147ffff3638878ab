/* test_members.c - which runs of a twin group are compared (server/compare/members.h), from a table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "server/compare/members.h"

#define BIG ((int64_t)1 << 62)

/* A run: start, records here, records anywhere, max step, ended; then the verdict ("" = compared). */
typedef struct row {
    int64_t start;
    int rec, any;
    int64_t max;
    int ended;
    const char *want;
} row;

static const struct {
    const char *what;
    int n;
    row r[4];
} cases[] = {
    {"two twins", 2, {{0, 1, 1, 50, 0, ""}, {0, 1, 1, 40, 0, ""}}},
    {"an ended run without a record anywhere", 3,
     {{0, 1, 1, 50, 1, ""}, {0, 1, 1, 50, 1, ""}, {0, 0, 0, 0, 1, CMP_OUT_ENDED_EMPTY}}},
    {"an ended run with records elsewhere is missing here, so compared", 2,
     {{0, 1, 1, 50, 1, ""}, {0, 0, 1, 0, 1, ""}}},
    {"a running run without records here yet does not hold the others back", 3,
     {{0, 1, 1, 50, 0, ""}, {0, 1, 1, 50, 0, ""}, {0, 0, 0, 0, 0, CMP_OUT_NOT_YET}}},
    {"an absurd start_step, ended, with records before it", 3,
     {{0, 1, 1, 9, 1, ""}, {0, 1, 1, 9, 1, ""}, {BIG, 1, 1, 5, 1, CMP_OUT_BEFORE_START}}},
    {"an absurd start_step, running, nothing recorded", 3,
     {{0, 1, 1, 9, 0, ""}, {0, 1, 1, 9, 0, ""}, {BIG, 0, 0, 0, 0, CMP_OUT_NOT_YET}}},
    {"a resumed run its twin has not reached yet: nothing overlaps", 2,
     {{0, 1, 1, 40, 0, CMP_OUT_NO_OVERLAP}, {100, 1, 1, 150, 0, CMP_OUT_NO_OVERLAP}}},
    {"a resumed run its twin has reached", 2, {{0, 1, 1, 120, 0, ""}, {100, 1, 1, 150, 0, ""}}},
    {"a resumed run its twins have not reached yet", 3,
     {{0, 1, 1, 40, 0, ""}, {0, 1, 1, 60, 0, ""}, {100, 1, 1, 150, 0, CMP_OUT_NOT_REACHED}}},
    {"runs that share no step at all", 3,
     {{0, 1, 1, 10, 1, CMP_OUT_NO_OVERLAP}, {50, 1, 1, 60, 1, CMP_OUT_NO_OVERLAP}, {100, 1, 1, 200, 1, CMP_OUT_NO_OVERLAP}}},
    {"two resumed runs that reached each other, and an early run behind them", 3,
     {{0, 1, 1, 10, 0, CMP_OUT_BEHIND}, {100, 1, 1, 150, 0, ""}, {100, 1, 1, 140, 0, ""}}},
    {"a resumed run all three reach: compared from its start", 3,
     {{0, 1, 1, 200, 0, ""}, {0, 1, 1, 200, 0, ""}, {150, 1, 1, 200, 0, ""}}},
    {"an absurd start_step with a record there, twins far behind", 3,
     {{0, 1, 1, 9, 0, ""}, {0, 1, 1, 9, 0, ""}, {BIG, 1, 1, BIG, 0, CMP_OUT_NOT_REACHED}}},
    {"one run alone", 1, {{0, 1, 1, 5, 0, CMP_OUT_NO_OVERLAP}}},
};

static void test_table(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        cmp_member m[4];
        int want_in = 0;
        for (int i = 0; i < cases[c].n; i++) {
            const row *r = &cases[c].r[i];
            m[i] = (cmp_member){r->start, r->rec, r->any, r->max, r->ended, 0, NULL};
            want_in += !*r->want;
        }
        int64_t lo;
        int in = cmp_members_pick(m, cases[c].n, &lo);
        for (int i = 0; i < cases[c].n; i++) {
            const char *got = m[i].in ? "" : m[i].why;
            if (strcmp(got, cases[c].r[i].want))
                fail_msg("%s: run %d: got \"%s\", want \"%s\"", cases[c].what, i, got, cases[c].r[i].want);
        }
        assert_int_equal(in, want_in);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table)};
    return cmocka_run_group_tests_name("twin group members", tests, NULL, NULL);
}
