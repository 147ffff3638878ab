/* test_members.c - which runs of a twin group are compared (server/rules/members.h), from the case table
 * tests/data/members/cases.json (which tests/sql/ holds the SQL copy of the rule to as well). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "server/rules/members.h"

#define CASES "tests/data/members/cases.json"
#define MAX_RUNS 8

static void test_table(void **state)
{
    (void)state;
    const char *src = getenv("LOCKSTEP_SRC");
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", src && *src ? src : ".", CASES);
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err), *cs = json_object_get(doc, "cases"), *c;
    if (!json_is_array(cs) || !json_array_size(cs))
        fail_msg("%s:%d: %s", path, err.line, doc ? "no cases" : err.text);
    size_t k;
    json_array_foreach(cs, k, c)
    {
        const char *what = json_string_value(json_object_get(c, "what"));
        json_t *runs = json_object_get(c, "runs"), *r;
        cmp_member m[MAX_RUNS];
        int n = 0, want_in = 0;
        size_t i;
        assert_true(json_array_size(runs) <= MAX_RUNS);
        json_array_foreach(runs, i, r)
        {
            m[n++] = (cmp_member){json_integer_value(json_object_get(r, "start")),
                                  json_is_true(json_object_get(r, "records")),
                                  json_is_true(json_object_get(r, "any")),
                                  json_integer_value(json_object_get(r, "max")),
                                  json_is_true(json_object_get(r, "ended")),
                                  0,
                                  NULL};
            want_in += !*json_string_value(json_object_get(r, "out"));
        }
        int64_t lo;
        int in = cmp_members_pick(m, n, &lo);
        for (int j = 0; j < n; j++) {
            const char *got = m[j].in ? "" : m[j].why;
            const char *want = json_string_value(json_object_get(json_array_get(runs, (size_t)j), "out"));
            if (strcmp(got, want))
                fail_msg("%s: run %d: got \"%s\", want \"%s\"", what, j, got, want);
        }
        if (in != want_in)
            fail_msg("%s: %d compared, want %d", what, in, want_in);
        json_t *want_lo = json_object_get(c, "lo");
        if (in >= 2 && (!json_is_integer(want_lo) || lo != json_integer_value(want_lo)))
            fail_msg("%s: shared start %lld, want %s", what, (long long)lo,
                     json_is_integer(want_lo) ? "the table's lo" : "an lo in the table");
    }
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table)};
    return cmocka_run_group_tests_name("twin group members", tests, NULL, NULL);
}
