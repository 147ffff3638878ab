/* test_words.c - the word splitter and the sh quoting of a word (common/words.h): hostile words go through sh and
 * come back byte for byte; the splitter's rules as a table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/words.h"

/* Words a job could put in its command, its resume template or a checkpoint path. */
static const char *const HOSTILE[] = {
    "plain",
    "",
    "two words",
    "it's",
    "'",
    "''",
    "\"double\"",
    "\\",
    "back\\slash\\",
    "$(touch owned)",
    "`touch owned`",
    "${HOME}",
    "$HOME",
    "a;touch owned",
    "; touch owned #",
    "#comment",
    "x && touch owned",
    "x || touch owned",
    "x | tee owned",
    "> owned",
    "< /etc/passwd",
    "*",
    "/*/*",
    "?",
    "[a-z]",
    "~",
    "~root",
    "-rf",
    "--uid=0",
    "line\ntouch owned",
    "cr\rlf\n",
    "tab\there",
    "\x01\x1b[31mescape\x7f",
    "\xff\xfe not UTF-8 \xc3",
    "caf\xc3\xa9 \xe2\x82\xac",
    "'\"'\"'",
    "!event",
    "a=b",
    "{a,b}",
    "%s%n",
};
#define NHOSTILE (sizeof(HOSTILE) / sizeof(HOSTILE[0]))

/* run_sh - run `script` with sh -c in `dir`; its stdout into out (NUL bytes kept). Returns how many bytes, -1 on
 * failure. */
static long run_sh(const char *dir, const char *script, char *out, size_t cap)
{
    int fd[2];
    if (pipe(fd) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        if (chdir(dir) < 0)
            _exit(126);
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd[0], out + n, cap - n)) > 0)
        n += (size_t)r;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? (long)n : -1;
}

/* quote_all - `prefix` then every word of v[0..n) quoted, into a new string. */
static char *quote_all(const char *prefix, const char *const *v, size_t n)
{
    size_t cap = strlen(prefix) + 1;
    for (size_t i = 0; i < n; i++)
        cap += words_quote(v[i], NULL, 0) + 1;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t len = (size_t)snprintf(s, cap, "%s", prefix);
    for (size_t i = 0; i < n; i++) {
        size_t l = words_quote(v[i], s + len, cap - len);
        assert_true(l < cap - len);
        len += l;
        s[len++] = ' ';
        s[len] = 0;
    }
    return s;
}

/* expect_argv - out[0..n) is v[0..count) each ended by a NUL, byte for byte. */
static void expect_argv(const char *out, long n, const char *const *v, size_t count)
{
    long at = 0;
    for (size_t i = 0; i < count; i++) {
        size_t l = strlen(v[i]);
        if (at + (long)l + 1 > n || memcmp(out + at, v[i], l) || out[at + (long)l])
            fail_msg("word %zu (%s) did not come back as it was", i, v[i]);
        at += (long)l + 1;
    }
    assert_int_equal(at, n);
}

static void test_quote_through_sh(void **state)
{
    (void)state;
    char dir[] = "/tmp/ls-words.XXXXXX", out[65536];
    assert_non_null(mkdtemp(dir));
    /* every hostile word as an argument of printf (a helper that prints its argv): each comes back as it was */
    char *script = quote_all("printf '%s\\0' ", HOSTILE, NHOSTILE);
    long n = run_sh(dir, script, out, sizeof(out));
    free(script);
    assert_true(n > 0);
    expect_argv(out, n, HOSTILE, NHOSTILE);
    /* the program's own name quoted too, and each hostile word alone (no neighbour to lean on) */
    const char *cmd[] = {"printf", "%s\\0"};
    for (size_t i = 0; i < NHOSTILE; i++) {
        char *s = quote_all("", cmd, 2);
        const char *one[] = {HOSTILE[i]};
        char *w = quote_all(s, one, 1);
        /* printf's format is the word "%s\0" here: sh passes it as it is, printf prints the word and a NUL */
        n = run_sh(dir, w, out, sizeof(out));
        free(s);
        free(w);
        assert_true(n >= 0);
        expect_argv(out, n, one, 1);
    }
    /* nothing ran: no file appeared where the words point */
    struct stat st;
    char owned[64];
    snprintf(owned, sizeof(owned), "%s/owned", dir);
    assert_int_equal(stat(owned, &st), -1);
    rmdir(dir);
}

static void test_quote_cut(void **state)
{
    (void)state;
    char out[8];
    /* the whole length is returned; the word is cut and terminated */
    assert_int_equal(words_quote("abcdefghij", out, sizeof(out)), 12);
    assert_int_equal(strlen(out), 7);
    assert_int_equal(words_quote("it's", out, sizeof(out)), 9);
    assert_int_equal(words_quote("", out, sizeof(out)), 2);
    assert_string_equal(out, "''");
    assert_int_equal(words_quote("it's", NULL, 0), 9);
}

static void test_join(void **state)
{
    (void)state;
    char out[256];
    char *v[] = {"train", "--lr=1e-3", "/ck/step-4", "two words", "", "#", "it's"};
    size_t n = words_join(v, 7, out, sizeof(out));
    assert_string_equal(out, "train --lr=1e-3 /ck/step-4 'two words' '' '#' 'it'\\''s'");
    assert_int_equal(n, strlen(out));
    char small[10];
    assert_int_equal(words_join(v, 7, small, sizeof(small)), n);
    assert_int_equal(strlen(small), 9);
    assert_int_equal(words_join(v, 0, out, sizeof(out)), 0);
    assert_string_equal(out, "");
}

/* The splitter as a table: text, how many words, the words ("|"-separated), or -1 and why it is refused. */
static const struct {
    const char *text;
    int n;
    const char *words;
} SPLIT[] = {
    {"", 0, ""},
    {"   \t ", 0, ""},
    {"train --steps {stop}", 3, "train|--steps|{stop}"},
    {"  a  b\tc\n", 3, "a|b|c"},
    {"a 'b c' d", 3, "a|b c|d"},
    {"a \"b c\" d", 3, "a|b c|d"},
    {"x'y z'w", 1, "xy zw"},
    {"'' \"\"", 2, "|"},
    {"a\\ b", 1, "a b"},
    {"\\'a", 1, "'a"},
    {"\"a\\\"b\\\\c\\$d\\`e\\n\"", 1, "a\"b\\c$d`e\\n"},
    {"'a\\b'", 1, "a\\b"},
    {"--resume={path}", 1, "--resume={path}"},
    {"run '{path}'", 2, "run|{path}"},
    {"a;b", 1, "a;b"},
    {"a ; b # c", 5, "a|;|b|#|c"},
    {"$(touch x) `y`", 3, "$(touch|x)|`y`"},
    {"*.py ~/x", 2, "*.py|~/x"},
    {"a 'b", -1, "does not end"},
    {"a \"b", -1, "does not end"},
    {"a \\", -1, "backslash ends"},
};

static void test_split_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(SPLIT) / sizeof(SPLIT[0]); i++) {
        char buf[256], why[128] = "", *w[16], got[512] = "";
        int n = words_split(SPLIT[i].text, buf, strlen(SPLIT[i].text) + 1, w, 16, why, sizeof(why));
        if (SPLIT[i].n < 0) {
            if (n != -1 || !strstr(why, SPLIT[i].words))
                fail_msg("case %zu (%s): got %d (%s), want a refusal saying '%s'", i, SPLIT[i].text, n, why,
                         SPLIT[i].words);
            continue;
        }
        if (n < 0)
            fail_msg("case %zu (%s) refused: %s", i, SPLIT[i].text, why);
        size_t l = 0;
        for (int k = 0; k < n; k++)
            l += (size_t)snprintf(got + l, sizeof(got) - l, "%s%s", k ? "|" : "", w[k]);
        if (n != SPLIT[i].n || strcmp(got, SPLIT[i].words))
            fail_msg("case %zu (%s): %d words \"%s\", want %d \"%s\"", i, SPLIT[i].text, n, got, SPLIT[i].n,
                     SPLIT[i].words);
    }
}

static void test_split_limits(void **state)
{
    (void)state;
    char buf[64], why[128], *w[3];
    assert_int_equal(words_split("a b c", buf, sizeof(buf), w, 3, why, sizeof(why)), 3);
    assert_int_equal(words_split("a b c d", buf, sizeof(buf), w, 3, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "more than 3 words"));
    assert_int_equal(words_split("abcdef", buf, 4, w, 3, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "do not fit"));
    /* strlen + 1 always suffices, even for words that are all separators and empty quotes */
    const char *t = "'' '' ''";
    assert_int_equal(words_split(t, buf, strlen(t) + 1, w, 3, why, sizeof(why)), 3);
    assert_string_equal(w[2], "");
}

/* A split word quoted again is the same word to sh: the splitter and the quoting agree. */
static void test_split_then_quote(void **state)
{
    (void)state;
    char dir[] = "/tmp/ls-words.XXXXXX", out[4096], buf[512], why[128], *w[32];
    assert_non_null(mkdtemp(dir));
    const char *t = "prog 'a b' \"c'd\" e\\ f '$(touch owned)' \"; touch owned #\" '' g";
    int n = words_split(t, buf, sizeof(buf), w, 32, why, sizeof(why));
    assert_int_equal(n, 8);
    char *script = quote_all("printf '%s\\0' ", (const char *const *)w, (size_t)n);
    long got = run_sh(dir, script, out, sizeof(out));
    free(script);
    expect_argv(out, got, (const char *const *)w, (size_t)n);
    /* and sh itself splits the template the same way (its quoting, where it has no other meaning) */
    char sh[600];
    snprintf(sh, sizeof(sh), "printf '%%s\\0' %s", "prog 'a b' \"c'd\" e\\ f '' g");
    const char *want[] = {"prog", "a b", "c'd", "e f", "", "g"};
    got = run_sh(dir, sh, out, sizeof(out));
    expect_argv(out, got, want, 6);
    n = words_split("prog 'a b' \"c'd\" e\\ f '' g", buf, sizeof(buf), w, 32, why, sizeof(why));
    assert_int_equal(n, 6);
    for (int k = 0; k < n; k++)
        assert_string_equal(w[k], want[k]);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quote_through_sh),
        cmocka_unit_test(test_quote_cut),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_split_table),
        cmocka_unit_test(test_split_limits),
        cmocka_unit_test(test_split_then_quote),
    };
    return cmocka_run_group_tests_name("words", tests, NULL, NULL);
}
