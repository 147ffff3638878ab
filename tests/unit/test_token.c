/* test_token.c - job tokens: HMAC-SHA256 against RFC 4231, secret files without trailing newlines, comparison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/crypto/token.h"

static void test_rfc4231_case2(void **state)
{
    (void)state;
    char out[TOKEN_HEX_LEN + 1];
    assert_int_equal(token_compute("Jefe", 4, "what do ya want for nothing?", out), 0);
    assert_string_equal(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void test_job_ids_differ(void **state)
{
    (void)state;
    char a[TOKEN_HEX_LEN + 1], b[TOKEN_HEX_LEN + 1];
    assert_int_equal(token_compute("s", 1, "123", a), 0);
    assert_int_equal(token_compute("s", 1, "1234", b), 0);
    assert_int_equal(strlen(a), TOKEN_HEX_LEN);
    assert_string_not_equal(a, b);
    for (size_t i = 0; i < TOKEN_HEX_LEN; i++)
        assert_true((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f'));
    assert_true(token_equal(a, a));
    assert_false(token_equal(a, b));
    assert_false(token_equal(a, "abc"));
}

/* The attestation token: a key derived from the secret, then the job id; never the job's own token. */
static void test_attest_token(void **state)
{
    (void)state;
    char a[TOKEN_HEX_LEN + 1], j[TOKEN_HEX_LEN + 1];
    assert_int_equal(token_compute_attest("s", 1, "123", a), 0);
    assert_string_equal(a, "25da359848b11ce8c713fd1a4834c5eff6f6e038e31efb2e14b3cfe1b834b616");
    assert_int_equal(token_compute("s", 1, "123", j), 0);
    assert_string_equal(j, "18998337dade6ea85a1c8241bbdf89392c6356ef21088a2c32f07e7960b2dcaf");
    assert_false(token_equal(a, j));
}

static void test_secret_file(void **state)
{
    (void)state;
    char path[] = "/tmp/lstok.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "top\nsecret\r\n\n", 13), 13);
    close(fd);
    size_t len = 0;
    unsigned char *s = token_load_secret(path, &len);
    assert_non_null(s);
    assert_int_equal(len, 10); /* inner newline kept, trailing ones dropped */
    assert_memory_equal(s, "top\nsecret", 10);
    char a[TOKEN_HEX_LEN + 1], b[TOKEN_HEX_LEN + 1];
    assert_int_equal(token_compute(s, len, "42", a), 0);
    assert_int_equal(token_compute("top\nsecret", 10, "42", b), 0);
    assert_string_equal(a, b);
    free(s);
    FILE *f = fopen(path, "w");
    fputs("\n\n", f);
    fclose(f);
    assert_null(token_load_secret(path, &len));
    assert_int_equal(errno, EINVAL);
    unlink(path);
    assert_null(token_load_secret("/nonexistent/secret", &len));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4231_case2),
        cmocka_unit_test(test_job_ids_differ),
        cmocka_unit_test(test_attest_token),
        cmocka_unit_test(test_secret_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
