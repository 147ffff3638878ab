/* test_elide.c - differing values shown by their difference (common/elide.h): the elision rule as a table, its
 * bounds, and UTF-8 kept whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/elide.h"
#include "common/text.h"

#define PY "/usr/bin/python3 /home/someone/projects/train/x.py"

static const struct {
    const char *a, *b, *want;
} CASES[] = {
    /* short values: whole */
    {"4", "8", "'4' vs '8'"},
    {"x --steps 20 --lr=1e-3 --seed 7 --out /tmp/a/b/c/d", "x --steps 20 --lr=4e-3 --seed 7 --out /tmp/a/b/c/d",
     "'…--steps 20 --lr=1e-3…' vs '…--steps 20 --lr=4e-3…'"},
    {"ring", "tree", "'ring' vs 'tree'"},
    {"(unset)", "1", "'(unset)' vs '1'"},
    /* a word added at the end: the words before it as context */
    {PY " --steps 20", PY " --steps 20 --lr=4e-3", "'…--steps 20' vs '…--steps 20 --lr=4e-3'"},
    /* a value changed in the middle: its word (the long path before it is more than the context), the rest elided */
    {PY " --lr=1e-3 --steps 20 --seed 7", PY " --lr=4e-3 --steps 20 --seed 7", "'…--lr=1e-3…' vs '…--lr=4e-3…'"},
    /* a differing first word longer than the context: cut after a '/' */
    {"/usr/bin/python3.11 /home/someone/projects/train/x.py --steps 20",
     "/usr/bin/python3.12 /home/someone/projects/train/x.py --steps 20", "'…bin/python3.11…' vs '…bin/python3.12…'"},
    /* one long word: cut after a '/' within the context */
    {"/home/someone/projects/train/data/run-2024-01-01/input.cfg",
     "/home/someone/projects/train/data/run-2024-01-02/input.cfg",
     "'…run-2024-01-01/input.cfg' vs '…run-2024-01-02/input.cfg'"},
    /* a word removed */
    {PY " --steps 20 --fast --seed 7", PY " --steps 20 --seed 7", "'…--steps 20 --fast…' vs '…--steps 20…'"},
};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        const char *v[2] = {CASES[i].a, CASES[i].b};
        char out[512];
        elide_values(v, 2, out, sizeof(out));
        if (strcmp(out, CASES[i].want))
            fail_msg("case %zu: got %s, want %s", i, out, CASES[i].want);
    }
}

/* Three values: what all three share is elided. */
static void test_three(void **state)
{
    (void)state;
    const char *v[3] = {PY " --steps 20", PY " --steps 20 --lr=4e-3", PY " --steps 30"};
    char out[512];
    elide_values(v, 3, out, sizeof(out));
    assert_string_equal(out, "'…--steps 20' vs '…--steps 20 --lr=4e-3' vs '…--steps 30'");
}

/* A long difference is bounded; the cut never splits a character, however small the buffer. */
static void test_bounds_and_utf8(void **state)
{
    (void)state;
    char a[400], b[400];
    snprintf(a, sizeof(a), PY " --name=");
    snprintf(b, sizeof(b), PY " --name=");
    for (int i = 0; i < 60; i++) {
        strcat(a, "é");
        strcat(b, "ü");
    }
    const char *v[2] = {a, b};
    char out[512];
    elide_values(v, 2, out, sizeof(out));
    assert_true(text_utf8_valid(out, strlen(out)));
    assert_true(strlen(out) <= 2 * (ELIDE_KEEP + 2 * 3 + 2) + 4);
    assert_non_null(strstr(out, "--name=é"));
    for (size_t cap = 1; cap < 60; cap++) {
        char small[64];
        size_t n = elide_values(v, 2, small, cap);
        assert_int_equal(n, strlen(small));
        assert_true(n < cap);
        assert_true(text_utf8_valid(small, n));
    }
    /* a shared prefix ending inside a character: the difference starts at the character */
    const char *w[2] = {PY " --tag=\xc3\xa9", PY " --tag=\xc3\xa8"};
    elide_values(w, 2, out, sizeof(out));
    assert_string_equal(out, "'…--tag=é' vs '…--tag=è'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_three),
        cmocka_unit_test(test_bounds_and_utf8),
    };
    return cmocka_run_group_tests_name("elide", tests, NULL, NULL);
}
