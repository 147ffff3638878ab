/* test_db_lit.c - PostgreSQL array literals of integers (server/store/db_lit.h): each value as PostgreSQL reads it
 * (the extremes of int64 included), NULLs, the empty array, and a literal that grows past its first buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/store/db_lit.h"

static void test_values(void **state)
{
    (void)state;
    db_lit l = {0};
    int64_t v[] = {0, 7, -7, 10, -10, 1234567890123, INT64_MAX, INT64_MIN, -1};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        db_lit_add(&l, v[i]);
    db_lit_null(&l);
    assert_string_equal(db_lit_end(&l),
                        "{0,7,-7,10,-10,1234567890123,9223372036854775807,-9223372036854775808,-1,NULL}");
    free(l.p);
}

static void test_empty_and_null(void **state)
{
    (void)state;
    db_lit l = {0};
    assert_string_equal(db_lit_end(&l), "{}");
    free(l.p);
    db_lit n = {0};
    db_lit_null(&n);
    assert_string_equal(db_lit_end(&n), "{NULL}");
    free(n.p);
}

/* Thousands of the widest values: the same text snprintf makes, whatever the buffer's growth. */
static void test_grows(void **state)
{
    (void)state;
    db_lit l = {0};
    size_t cap = 8 + 21 * 5000, len = 0;
    char *want = malloc(cap);
    for (int i = 0; i < 5000; i++) {
        int64_t x = i % 3 ? INT64_MIN + i : INT64_MAX - i;
        db_lit_add(&l, x);
        len += (size_t)snprintf(want + len, cap - len, "%c%lld", i ? ',' : '{', (long long)x);
    }
    snprintf(want + len, cap - len, "}");
    assert_string_equal(db_lit_end(&l), want);
    free(want);
    free(l.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_empty_and_null),
        cmocka_unit_test(test_grows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
