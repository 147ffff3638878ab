/* test_hostlist.c - Slurm node lists (common/hostlist.h), from tables: the expansion's in
 * tests/data/hostlist/cases.json, which tests/sql/ holds the SQL copy of the rule to as well. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"

static void test_nth(void **state)
{
    (void)state;
    static const struct {
        const char *list;
        size_t index;
        const char *want; /* NULL: refused */
    } cases[] = {
        {"n1", 0, "n1"},
        {"n1", 1, NULL},
        {"n[1-4]", 0, "n1"},
        {"n[1-4]", 3, "n4"},
        {"n[1-4]", 4, NULL},
        {"n[1-2,7]", 2, "n7"},
        {"gpu[01-12]", 9, "gpu10"},
        {"gpu[001-003]", 1, "gpu002"},
        {"login,n[1-3],gpu7", 0, "login"},
        {"login,n[1-3],gpu7", 3, "n3"},
        {"login,n[1-3],gpu7", 4, "gpu7"},
        {"rack2-n[01-16]", 15, "rack2-n16"},
        {"n[1-4]-ib", 2, "n3-ib"},
        {"r[1-2]n[1-4]", 0, NULL},
        {"n[1-", 0, NULL},
        {"n[a-b]", 0, NULL},
        {"n[4-1]", 0, NULL},
        {"", 0, NULL},
        {"a,,b", 1, NULL},
        {"n[07777777777777777777777777777777777777],oX", 0, NULL}, /* found by fuzz_text: 38-digit padding */
        {"n[1-99999999999999999999]", 0, NULL},
        {"n[000000000000000001-3]", 2, "n000000000000000003"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64] = "x";
        int rc = hostlist_nth(cases[i].list, cases[i].index, out, sizeof(out));
        if (cases[i].want ? rc != 0 || strcmp(out, cases[i].want) : rc == 0)
            fail_msg("%s [%zu]: rc %d, \"%s\", want %s", cases[i].list, cases[i].index, rc, out,
                     cases[i].want ? cases[i].want : "refused");
    }
    char small[4];
    assert_int_equal(hostlist_nth("node[100-101]", 0, small, sizeof(small)), -1);
    assert_int_equal(hostlist_count("login,n[1-3],gpu[01-02]"), 6);
    assert_int_equal(hostlist_count("n[1-"), -1);
    assert_int_equal(hostlist_count(""), 0);
}

/* The plugin's node at a position and lockstepd's expanded list are one walk: the same names in one order. */
static void test_nth_is_expand(void **state)
{
    (void)state;
    static const char *const lists[] = {"n1", "n[1-4]", "login,n[1-3],gpu[01-02]", "n[1-2,7],x[009-011]-ib",
                                        " a , b[1-2] "};
    char names[16][HOSTLIST_NAME_MAX], one[HOSTLIST_NAME_MAX];
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        int n = hostlist_expand(lists[i], names, 16);
        assert_int_equal(hostlist_count(lists[i]), n);
        for (int k = 0; k < n; k++) {
            assert_int_equal(hostlist_nth(lists[i], (size_t)k, one, sizeof(one)), 0);
            assert_string_equal(one, names[k]);
        }
        assert_int_equal(hostlist_nth(lists[i], (size_t)n, one, sizeof(one)), -1);
    }
}

/* Every list of the shared case table expands to its names, in order, or is refused when the table says
 * malformed; and names none of the names it does not name. */
static void test_expand_table(void **state)
{
    (void)state;
    const char *src = getenv("LOCKSTEP_SRC");
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/data/hostlist/cases.json", src && *src ? src : ".");
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err), *cs = json_object_get(doc, "cases"), *c;
    if (!json_is_array(cs) || !json_array_size(cs))
        fail_msg("%s:%d: %s", path, err.line, doc ? "no cases" : err.text);
    size_t k;
    json_array_foreach(cs, k, c)
    {
        const char *list = json_string_value(json_object_get(c, "list"));
        json_t *want = json_object_get(c, "names"), *no = json_object_get(c, "not"), *x;
        char names[64][HOSTLIST_NAME_MAX];
        int n = hostlist_expand(list, names, 64);
        if (json_is_null(want)) {
            if (n >= 0)
                fail_msg("\"%s\": %d names, want it refused as malformed", list, n);
            continue;
        }
        if (n != (int)json_array_size(want))
            fail_msg("\"%s\": %d names, want %zu", list, n, json_array_size(want));
        for (int i = 0; i < n; i++)
            if (strcmp(names[i], json_string_value(json_array_get(want, (size_t)i))))
                fail_msg("\"%s\": name %d is \"%s\", want \"%s\"", list, i, names[i],
                         json_string_value(json_array_get(want, (size_t)i)));
        size_t j;
        json_array_foreach(no, j, x)
        {
            for (int i = 0; i < n; i++)
                if (!strcmp(names[i], json_string_value(x)))
                    fail_msg("\"%s\" names \"%s\"", list, names[i]);
        }
    }
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_nth), cmocka_unit_test(test_nth_is_expand),
                                       cmocka_unit_test(test_expand_table)};
    return cmocka_run_group_tests_name("node lists", tests, NULL, NULL);
}
