/* test_target.c - the request target check (server/http/target.h) and the text rule (common/text.h), from tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "common/text.h"
#include "server/http/target.h"

static void test_targets(void **state)
{
    (void)state;
    static const struct {
        const char *raw;
        int ok;
    } cases[] = {
        {"/api/v1/health", 1},
        {"/api/v1/twins/exp-42%2Fa.b_c:d@e+f/steps?from=0&to=9&compact=1", 1},
        {"/api/v1/twins/caf%C3%A9", 1}, /* é */
        {"/api/v1/runs?user=a+b&job=", 1},
        {"/", 1},
        {"/api/v1/twins/%ff%fe", 0},    /* not UTF-8 */
        {"/api/v1/twins/%C3%28", 0},    /* a broken sequence */
        {"/api/v1/twins/%C0%AF", 0},    /* overlong '/' */
        {"/api/v1/twins/%ED%A0%80", 0}, /* a surrogate */
        {"/index.html%00.js", 0},       /* NUL */
        {"/api/v1/runs?user=a%00b", 0},
        {"/api/v1/runs?user=a%0Ab", 0},  /* newline */
        {"/api/v1/runs?u%1b=1", 0},      /* escape in a key */
        {"/api/v1/runs?user=%C2%85", 0}, /* C1 control (NEL) */
        {"/api/v1/runs?user=%zz", 0},    /* a bad escape */
        {"/api/v1/runs?user=%4", 0},
        {"/api/\x01v1", 0}, /* a raw control byte */
        {"/api/v1/\x7f", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char why[160] = "";
        int rc = http_target_check(cases[i].raw, 2048, why, sizeof(why));
        if ((rc == 0) != cases[i].ok)
            fail_msg("%s: %s (%s)", cases[i].raw, rc == 0 ? "taken" : "refused", why);
        if (rc < 0)
            assert_true(why[0] != 0);
    }
    char why[160];
    char longer[3000];
    memset(longer, 'a', sizeof(longer) - 1);
    longer[0] = '/';
    longer[sizeof(longer) - 1] = 0;
    assert_int_equal(http_target_check(longer, 2048, why, sizeof(why)), -1);
}

static void test_text(void **state)
{
    (void)state;
    assert_true(text_line_valid("grad_norm", 9));
    assert_true(text_line_valid("layer.\xc3\xa9", 8));
    assert_false(text_line_valid("a\nb", 3));
    assert_false(text_line_valid("a\tb", 3));
    assert_false(text_line_valid("a\x7f", 2));
    assert_false(text_line_valid("a\xc2\x9b", 3)); /* C1 CSI */
    assert_false(text_line_valid("a\0b", 3));
    assert_false(text_line_valid("\xff", 1));
    assert_true(text_utf8_valid("a\nb", 3));
    assert_false(text_utf8_valid("a\0b", 3));
    char out[32];
    assert_string_equal(text_sanitize("job\n42\xff\xc3\xa9", out, sizeof(out)), "job?42?\xc3\xa9");
    assert_string_equal(text_sanitize("abcdef", out, 4), "abc");
    assert_string_equal(text_sanitize("ab\xc3\xa9", out, 4), "ab"); /* never half a character */
    /* one line for a descriptive field: white space becomes spaces, a cut is marked */
    assert_string_equal(text_one_line("-c 'import x\n\tx.run()'\x01\xff", out, sizeof(out)),
                        "-c 'import x  x.run()'??");
    assert_string_equal(text_one_line("abcdefgh", out, 9), "abcdefgh"); /* fits exactly: uncut */
    assert_string_equal(text_one_line("abcdefghi", out, 9), "abcde...");
    assert_string_equal(text_one_line("abcd\xc3\xa9"
                                      "fghi",
                                      out, 9),
                        "abcd..."); /* never half a character */
    assert_string_equal(text_one_line("", out, 9), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_text),
    };
    return cmocka_run_group_tests_name("request targets and text", tests, NULL, NULL);
}
