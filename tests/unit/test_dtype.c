/* test_dtype.c - dtype names and sizes, and ULP distances across signs, zeros, NaN and narrow floats. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/dtype.h"

static uint64_t d2b(double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}

static uint64_t f2b(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static void test_names(void **state)
{
    (void)state;
    for (int i = 0; i < LS_DTYPE_COUNT; i++) {
        assert_int_equal(dtype_parse(dtype_name((unsigned)i)), i);
        assert_true(dtype_size((unsigned)i) > 0);
    }
    assert_int_equal(dtype_parse("f128"), -1);
    assert_string_equal(dtype_name(200), "?");
    assert_int_equal(level_parse("ops"), LS_LEVEL_OP);
    assert_int_equal(level_parse("collective"), LS_LEVEL_COLLECTIVE);
    assert_int_equal(level_parse("opss"), -1);
}

static void test_ulp(void **state)
{
    (void)state;
    assert_int_equal(dtype_ulp_distance(LS_F64, d2b(1.0), d2b(1.0)), 0);
    assert_int_equal(dtype_ulp_distance(LS_F64, d2b(1.0), d2b(nextafter(1.0, 2.0))), 1);
    assert_int_equal(dtype_ulp_distance(LS_F64, d2b(0.0), d2b(-0.0)), 1);
    assert_int_equal(dtype_ulp_distance(LS_F64, d2b(5e-324), d2b(-5e-324)), 3);
    assert_int_equal(dtype_ulp_distance(LS_F64, d2b(NAN), d2b(1.0)), UINT64_MAX);
    assert_int_equal(dtype_ulp_distance(LS_F32, f2b(1.0f), f2b(nextafterf(1.0f, 0.0f))), 1);
    assert_int_equal(dtype_ulp_distance(LS_F32, f2b(-1.0f), f2b(1.0f)), 2 * 0x3f800000ULL + 1);
    assert_int_equal(dtype_ulp_distance(LS_BF16, 0x3f80, 0x3f81), 1); /* 1.0 and the next bf16 */
    assert_int_equal(dtype_ulp_distance(LS_I32, (uint32_t)-5, 7), 12);
    assert_int_equal(dtype_ulp_distance(LS_U8, 250, 3), 247);
}

static void test_values(void **state)
{
    (void)state;
    assert_true(dtype_value_to_double(LS_F16, 0x3c00) == 1.0);
    assert_true(dtype_value_to_double(LS_F16, 0xc000) == -2.0);
    assert_true(dtype_value_to_double(LS_BF16, 0x4049) == 3.140625);
    assert_true(isinf(dtype_value_to_double(LS_F16, 0x7c00)));
    assert_true(isnan(dtype_value_to_double(LS_F16, 0x7e00)));
    assert_true(dtype_value_to_double(LS_I16, 0xffff) == -1.0);
    char buf[64];
    /* FP4 E2M1: 0 0.5 1 1.5 2 3 4 6, no infinities or NaN; E8M0: powers of two, 0xff NaN */
    static const double fp4[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    for (unsigned v = 0; v < 8; v++) {
        assert_true(dtype_value_to_double(LS_F4E2M1, v) == fp4[v]);
        assert_true(dtype_value_to_double(LS_F4E2M1, v | 8) == -fp4[v]);
    }
    assert_int_equal(dtype_bits(LS_F4E2M1), 4);
    assert_int_equal(dtype_bits(LS_F8E4M3), 8);
    assert_int_equal(dtype_ulp_distance(LS_F4E2M1, 0x7, 0xf), 15); /* 6 and -6 */
    assert_true(dtype_value_to_double(LS_E8M0, 127) == 1.0);
    assert_true(dtype_value_to_double(LS_E8M0, 130) == 8.0);
    assert_true(dtype_value_to_double(LS_E8M0, 0) == ldexp(1.0, -127));
    assert_true(isnan(dtype_value_to_double(LS_E8M0, 0xff)));
    assert_int_equal(dtype_ulp_distance(LS_E8M0, 127, 130), 3);
    assert_int_equal(dtype_ulp_distance(LS_E8M0, 127, 0xff), UINT64_MAX);
    dtype_format_value(LS_F64, d2b(0.1), buf, sizeof(buf));
    assert_string_equal(buf, "0.10000000000000001");
    dtype_format_value(LS_I64, (uint64_t)-42, buf, sizeof(buf));
    assert_string_equal(buf, "-42");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_names), cmocka_unit_test(test_ulp),
                                       cmocka_unit_test(test_values)};
    return cmocka_run_group_tests_name("dtype", tests, NULL, NULL);
}
