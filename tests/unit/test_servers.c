/* test_servers.c - lists of lockstepd addresses (common/servers.h), as the agent, the lockstep command and the SPANK
 * plugin take them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/servers.h"

static void test_lists(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int n;             /* -1: refused */
        const char *first; /* the first URL as kept */
        const char *last;
    } cases[] = {
        {"http://a:8080", 1, "http://a:8080", "http://a:8080"},
        {"http://a:8080/", 1, "http://a:8080", "http://a:8080"},
        {"https://a", 1, "https://a", "https://a"},
        {"http://a:1,http://b:2", 2, "http://a:1", "http://b:2"},
        {" http://a:1/ , https://[::1]:2// ", 2, "http://a:1", "https://[::1]:2"},
        {"http://a,http://b,http://c,http://d,http://e,http://f,http://g,http://h", 8, "http://a", "http://h"},
        {"http://a,http://b,http://c,http://d,http://e,http://f,http://g,http://h,http://i", -1, NULL, NULL},
        {"", -1, NULL, NULL},
        {",", -1, NULL, NULL},
        {"http://a,", -1, NULL, NULL},
        {"http://a,,http://b", -1, NULL, NULL},
        {"ftp://a", -1, NULL, NULL},
        {"http://a,file:///etc/passwd", -1, NULL, NULL},
        {"http://", -1, NULL, NULL},
        {"http:///path", -1, NULL, NULL},
        {"http://a b", -1, NULL, NULL},
        {"http://a\n", -1, NULL, NULL},
        {"localhost:8080", -1, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        server_list l;
        char why[300] = "";
        int rc = servers_parse(cases[i].text, &l, why, sizeof(why));
        if (cases[i].n < 0) {
            if (rc != -1)
                fail_msg("'%s' was taken", cases[i].text);
            assert_true(why[0] != 0);
            continue;
        }
        if (rc != 0)
            fail_msg("'%s' was refused: %s", cases[i].text, why);
        assert_int_equal(l.n, cases[i].n);
        assert_string_equal(l.url[0], cases[i].first);
        assert_string_equal(l.url[l.n - 1], cases[i].last);
    }
}

static void test_too_long(void **state)
{
    (void)state;
    char text[SERVER_URL_MAX + 20] = "http://";
    memset(text + 7, 'a', SERVER_URL_MAX);
    text[SERVER_URL_MAX + 7] = 0;
    server_list l;
    char why[300];
    assert_int_equal(servers_parse(text, &l, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "longer"));
    assert_int_equal(servers_parse(NULL, &l, why, sizeof(why)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_too_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
