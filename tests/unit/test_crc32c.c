/* test_crc32c.c - CRC-32C against published check values, in one piece and in many. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"

static void test_check_values(void **state)
{
    (void)state;
    assert_int_equal(crc32c("123456789", 9), 0xe3069283u);
    assert_int_equal(crc32c("", 0), 0);
    unsigned char zeros[32] = {0}, ones[32];
    memset(ones, 0xff, sizeof(ones));
    assert_int_equal(crc32c(zeros, 32), 0x8a9136aau); /* RFC 3720 B.4 */
    assert_int_equal(crc32c(ones, 32), 0x62a8ab43u);
}

static void test_incremental(void **state)
{
    (void)state;
    unsigned char buf[1000];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 7 + 3);
    uint32_t whole = crc32c(buf, sizeof(buf));
    for (size_t cut = 0; cut <= sizeof(buf); cut += 37)
        assert_int_equal(crc32c_update(crc32c(buf, cut), buf + cut, sizeof(buf) - cut), whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_check_values), cmocka_unit_test(test_incremental)};
    return cmocka_run_group_tests_name("crc32c", tests, NULL, NULL);
}
