/* dtype.c - element types and levels: names, sizes, and ULP distance between scalars. */
#include "common/dtype.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
    int is_float;
} dtypes[LS_DTYPE_COUNT] = {
    [LS_BYTES] = {"bytes", 1, 0},   [LS_F64] = {"f64", 8, 1},       [LS_F32] = {"f32", 4, 1},
    [LS_F16] = {"f16", 2, 1},       [LS_BF16] = {"bf16", 2, 1},     [LS_I64] = {"i64", 8, 0},
    [LS_I32] = {"i32", 4, 0},       [LS_I16] = {"i16", 2, 0},       [LS_I8] = {"i8", 1, 0},
    [LS_U64] = {"u64", 8, 0},       [LS_U32] = {"u32", 4, 0},       [LS_U16] = {"u16", 2, 0},
    [LS_U8] = {"u8", 1, 0},         [LS_BOOL] = {"bool", 1, 0},     [LS_F8E4M3] = {"f8e4m3", 1, 1},
    [LS_F8E5M2] = {"f8e5m2", 1, 1}, [LS_F4E2M1] = {"f4e2m1", 1, 1}, [LS_E8M0] = {"e8m0", 1, 1},
};

static const char *const levels[LS_LEVEL_COUNT] = {"metric", "collective", "module", "op"};

const char *dtype_name(unsigned dtype)
{
    return dtype < LS_DTYPE_COUNT ? dtypes[dtype].name : "?";
}

int dtype_parse(const char *s)
{
    for (int i = 0; i < LS_DTYPE_COUNT; i++)
        if (strcmp(s, dtypes[i].name) == 0)
            return i;
    return -1;
}

size_t dtype_size(unsigned dtype)
{
    return dtype < LS_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

unsigned dtype_bits(unsigned dtype)
{
    return dtype == LS_F4E2M1 ? 4 : (unsigned)dtype_size(dtype) * 8;
}

int dtype_is_float(unsigned dtype)
{
    return dtype < LS_DTYPE_COUNT && dtypes[dtype].is_float;
}

const char *level_name(unsigned level)
{
    return level < LS_LEVEL_COUNT ? levels[level] : "?";
}

int level_parse(const char *s)
{
    size_t n = strlen(s);
    for (int i = 0; i < LS_LEVEL_COUNT; i++) {
        size_t m = strlen(levels[i]);
        if ((n == m || (n == m + 1 && s[m] == 's')) && strncmp(s, levels[i], m) == 0)
            return i;
    }
    return -1;
}

/* float_layout - exponent and mantissa widths of a float type. */
static void float_layout(unsigned dtype, int *bits, int *exp_bits, int *man_bits)
{
    switch (dtype) {
    case LS_F64: *bits = 64, *exp_bits = 11, *man_bits = 52; break;
    case LS_F32: *bits = 32, *exp_bits = 8, *man_bits = 23; break;
    case LS_F16: *bits = 16, *exp_bits = 5, *man_bits = 10; break;
    case LS_BF16: *bits = 16, *exp_bits = 8, *man_bits = 7; break;
    case LS_F8E4M3: *bits = 8, *exp_bits = 4, *man_bits = 3; break;
    case LS_F4E2M1: *bits = 4, *exp_bits = 2, *man_bits = 1; break;
    case LS_E8M0: *bits = 8, *exp_bits = 8, *man_bits = 0; break; /* unsigned: no sign bit */
    default: *bits = 8, *exp_bits = 5, *man_bits = 2; break;      /* f8e5m2 */
    }
}

static int float_is_nan(unsigned dtype, uint64_t v)
{
    int bits, eb, mb;
    float_layout(dtype, &bits, &eb, &mb);
    uint64_t exp_mask = ((1ULL << eb) - 1) << mb;
    uint64_t man_mask = (1ULL << mb) - 1;
    if (dtype == LS_F8E4M3) /* no infinities; only S.1111.111 is NaN */
        return (v & 0x7f) == 0x7f;
    if (dtype == LS_F4E2M1) /* no infinities, no NaN */
        return 0;
    if (dtype == LS_E8M0) /* 0xff is the only NaN */
        return (v & 0xff) == 0xff;
    return (v & exp_mask) == exp_mask && (v & man_mask) != 0;
}

/* ordered - map sign-magnitude float bits onto a monotone integer line where
 * adjacent representable values differ by one (-0 and +0 sit one apart). */
static int64_t ordered(uint64_t v, int bits)
{
    uint64_t sign = 1ULL << (bits - 1);
    uint64_t mag = v & (sign - 1);
    return (v & sign) ? -(int64_t)mag - 1 : (int64_t)mag;
}

static uint64_t mask_bits(uint64_t v, int bits)
{
    return bits == 64 ? v : v & ((1ULL << bits) - 1);
}

uint64_t dtype_ulp_distance(unsigned dtype, uint64_t a, uint64_t b)
{
    if (dtype_is_float(dtype)) {
        int bits, eb, mb;
        float_layout(dtype, &bits, &eb, &mb);
        a = mask_bits(a, bits);
        b = mask_bits(b, bits);
        if (float_is_nan(dtype, a) || float_is_nan(dtype, b))
            return a == b ? 0 : UINT64_MAX;
        if (dtype == LS_E8M0) /* unsigned exponents: adjacent codes are adjacent values */
            return a > b ? a - b : b - a;
        int64_t oa = ordered(a, bits), ob = ordered(b, bits);
        return oa > ob ? (uint64_t)oa - (uint64_t)ob : (uint64_t)ob - (uint64_t)oa;
    }
    size_t sz = dtype_size(dtype);
    int bits = (int)(sz ? sz * 8 : 64);
    a = mask_bits(a, bits);
    b = mask_bits(b, bits);
    int is_signed = dtype == LS_I64 || dtype == LS_I32 || dtype == LS_I16 || dtype == LS_I8;
    if (is_signed && bits < 64) {
        uint64_t sign = 1ULL << (bits - 1);
        a = (a ^ sign) - sign; /* sign-extend */
        b = (b ^ sign) - sign;
    }
    if (is_signed)
        return (int64_t)a > (int64_t)b ? a - b : b - a;
    return a > b ? a - b : b - a;
}

/* small_float_to_double - decode a narrow float exactly. */
static double small_float_to_double(unsigned dtype, uint64_t v)
{
    int bits, eb, mb;
    float_layout(dtype, &bits, &eb, &mb);
    v = mask_bits(v, bits);
    int sign = (int)(v >> (bits - 1)) & 1;
    int exp = (int)((v >> mb) & ((1u << eb) - 1));
    uint64_t man = v & ((1ULL << mb) - 1);
    int bias = (1 << (eb - 1)) - 1;
    double r;

    if (float_is_nan(dtype, v))
        return NAN;
    if (dtype == LS_E8M0)
        return ldexp(1.0, (int)v - 127);
    if (exp == (1 << eb) - 1 && dtype != LS_F8E4M3 && dtype != LS_F4E2M1)
        r = INFINITY;
    else if (exp == 0)
        r = ldexp((double)man, 1 - bias - mb);
    else
        r = ldexp((double)(man | (1ULL << mb)), exp - bias - mb);
    return sign ? -r : r;
}

double dtype_value_to_double(unsigned dtype, uint64_t bits)
{
    switch (dtype) {
    case LS_F64: {
        double d;
        memcpy(&d, &bits, 8);
        return d;
    }
    case LS_F32: {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case LS_F16:
    case LS_BF16:
    case LS_F8E4M3:
    case LS_F8E5M2:
    case LS_F4E2M1:
    case LS_E8M0: return small_float_to_double(dtype, bits);
    case LS_I64: return (double)(int64_t)bits;
    case LS_I32: return (double)(int32_t)(uint32_t)bits;
    case LS_I16: return (double)(int16_t)(uint16_t)bits;
    case LS_I8: return (double)(int8_t)(uint8_t)bits;
    case LS_U32: return (double)(uint32_t)bits;
    case LS_U16: return (double)(uint16_t)bits;
    case LS_U8:
    case LS_BOOL: return (double)(uint8_t)bits;
    default: return (double)bits;
    }
}

void dtype_format_value(unsigned dtype, uint64_t bits, char *out, size_t cap)
{
    switch (dtype) {
    case LS_F64:
    case LS_F32:
    case LS_F16:
    case LS_BF16:
    case LS_F8E4M3:
    case LS_F8E5M2:
    case LS_F4E2M1:
    case LS_E8M0: {
        double d = dtype_value_to_double(dtype, bits);
        /* %.17g round-trips every double; narrower types print shorter exactly. */
        int prec = dtype == LS_F64 ? 17 : dtype == LS_F32 ? 9 : 5;
        snprintf(out, cap, "%.*g", prec, d);
        break;
    }
    case LS_I64:
    case LS_I32:
    case LS_I16:
    case LS_I8:
        snprintf(out, cap, "%lld", (long long)dtype_value_to_double(dtype, bits));
        if (dtype == LS_I64)
            snprintf(out, cap, "%lld", (long long)(int64_t)bits);
        break;
    default: snprintf(out, cap, "%llu", (unsigned long long)bits); break;
    }
}
