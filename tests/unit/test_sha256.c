/* test_sha256.c - SHA-256 and HMAC-SHA256 in plain C (common/sha256.h): FIPS, RFC 4231 and OpenSSL agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "common/sha256.h"

static void hash_hex(const void *data, size_t len, char out[65])
{
    unsigned char d[SHA256_LEN];
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, data, len);
    sha256_final(&c, d);
    sha256_hex(d, sizeof(d), out);
}

static void hmac_hex(const void *key, size_t klen, const void *data, size_t len, char out[65])
{
    unsigned char d[SHA256_LEN];
    sha256_hmac m;
    sha256_hmac_init(&m, key, klen);
    sha256_hmac_update(&m, data, len);
    sha256_hmac_final(&m, d);
    sha256_hex(d, sizeof(d), out);
}

static void test_fips_vectors(void **state)
{
    (void)state;
    char out[65];
    hash_hex("", 0, out);
    assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hash_hex("abc", 3, out);
    assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hash_hex(two, strlen(two), out);
    assert_string_equal(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* a million 'a', fed in uneven pieces */
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    unsigned char d[SHA256_LEN];
    sha256_ctx c;
    sha256_init(&c);
    for (size_t at = 0, step = 1; at < 1000000; at += step, step = step * 3 % 997 + 1)
        sha256_update(&c, a + at, at + step > 1000000 ? 1000000 - at : step);
    sha256_final(&c, d);
    sha256_hex(d, sizeof(d), out);
    assert_string_equal(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

static void test_rfc4231(void **state)
{
    (void)state;
    char out[65];
    unsigned char k20[20], k131[131], d50[50];
    memset(k20, 0x0b, sizeof(k20));
    hmac_hex(k20, sizeof(k20), "Hi There", 8, out);
    assert_string_equal(out, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    hmac_hex("Jefe", 4, "what do ya want for nothing?", 28, out);
    assert_string_equal(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k20, 0xaa, sizeof(k20));
    memset(d50, 0xdd, sizeof(d50));
    hmac_hex(k20, sizeof(k20), d50, sizeof(d50), out);
    assert_string_equal(out, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    /* a key longer than a block is hashed first (case 6) */
    memset(k131, 0xaa, sizeof(k131));
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    hmac_hex(k131, sizeof(k131), m6, strlen(m6), out);
    assert_string_equal(out, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* Every length around the block and padding edges, against OpenSSL. */
static void test_same_as_openssl(void **state)
{
    (void)state;
    unsigned char data[300], key[150], want[EVP_MAX_MD_SIZE];
    char got[65], wanthex[65];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 131 + 7);
    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (unsigned char)(i * 17 + 3);
    for (size_t n = 0; n <= sizeof(data); n++) {
        SHA256(data, n, want);
        sha256_hex(want, SHA256_LEN, wanthex);
        hash_hex(data, n, got);
        assert_string_equal(got, wanthex);
        size_t kl = n % sizeof(key);
        unsigned int wl = 0;
        HMAC(EVP_sha256(), key, (int)kl, data, n, want, &wl);
        sha256_hex(want, wl, wanthex);
        hmac_hex(key, kl, data, n, got);
        assert_string_equal(got, wanthex);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_vectors),
        cmocka_unit_test(test_rfc4231),
        cmocka_unit_test(test_same_as_openssl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
