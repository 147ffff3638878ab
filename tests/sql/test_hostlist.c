/* test_hostlist.c - Slurm node lists in SQL (lockstep_hostlist_has, lockstep_run_on_node: sql/functions/nodes.sql)
 * against the case table of the C rule (common/hostlist.h, tests/data/hostlist/cases.json) and the C rule itself, on a
 * real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/hostlist.h"
#include "tests/sql/sqlt.h"

/* has - lockstep_hostlist_has(list, host), and lockstep_run_on_node for a run without manifests, which must say
 * the same. */
static int has(const char *list, const char *host)
{
    const char *p[] = {list, host};
    PGresult *r = sqlt_exec(sqlt_c, "SELECT lockstep_hostlist_has($1, $2), lockstep_run_on_node(-1, $1, $2)", 2, p);
    int a = PQgetvalue(r, 0, 0)[0] == 't', b = PQgetvalue(r, 0, 1)[0] == 't';
    PQclear(r);
    if (a != b)
        fail_msg("\"%s\" has \"%s\": lockstep_hostlist_has says %d, lockstep_run_on_node %d", list, host, a, b);
    return a;
}

/* Every case of the table: SQL names each name the C rule expands the list to, and none of those the table says
 * it does not name; a list the C rule refuses as malformed names no node in SQL either. */
static void test_table(void **state)
{
    (void)state;
    json_t *doc = sqlt_cases("tests/data/hostlist/cases.json"), *cs = json_object_get(doc, "cases"), *cse, *x;
    assert_true(json_array_size(cs) > 0);
    size_t k, j;
    int bad = 0;
    json_array_foreach(cs, k, cse)
    {
        const char *list = json_string_value(json_object_get(cse, "list"));
        json_t *names = json_object_get(cse, "names");
        char expanded[64][HOSTLIST_NAME_MAX];
        int n = hostlist_expand(list, expanded, 64);
        if (json_is_null(names) != (n < 0))
            fail_msg("\"%s\": the C rule %s it; the table says %s", list, n < 0 ? "refuses" : "expands",
                     json_is_null(names) ? "malformed" : "names");
        for (int i = 0; i < n; i++)
            if (!has(list, expanded[i])) {
                printf("SQL: \"%s\" does not name \"%s\", which the C rule expands it to\n", list, expanded[i]);
                bad++;
            }
        json_array_foreach(json_object_get(cse, "not"), j, x)
        {
            if (has(list, json_string_value(x))) {
                printf("SQL: \"%s\" names \"%s\"; the C rule %s\n", list, json_string_value(x),
                       n < 0 ? "refuses the list" : "does not");
                bad++;
            }
        }
    }
    json_decref(doc);
    if (bad)
        fail_msg("%d answers of lockstep_hostlist_has differ from common/hostlist.h", bad);
}

/* NULL and empty hosts name nothing, whatever the list. */
static void test_nothing(void **state)
{
    (void)state;
    char v[16];
    assert_string_equal(sqlt_value(sqlt_c,
                                   "SELECT lockstep_hostlist_has(NULL, 'n1') OR lockstep_hostlist_has('n1', NULL) "
                                   "OR lockstep_hostlist_has('n1,', '') OR lockstep_hostlist_has('', '')",
                                   0, NULL, v, sizeof(v)),
                        "f");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table), cmocka_unit_test(test_nothing)};
    return cmocka_run_group_tests_name("Slurm node lists in SQL", tests, sqlt_setup, sqlt_teardown);
}
