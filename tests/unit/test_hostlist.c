/* test_hostlist.c - Slurm node lists (common/hostlist.h), from a table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_nth), cmocka_unit_test(test_nth_is_expand)};
    return cmocka_run_group_tests_name("node lists", tests, NULL, NULL);
}
