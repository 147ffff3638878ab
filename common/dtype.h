/* dtype.h - element types and levels: names, sizes, and ULP distance between scalars. */
#ifndef COMMON_DTYPE_H
#define COMMON_DTYPE_H

#include <stdint.h>
#include <stddef.h>

#include "include/lockstep.h"

/* dtype_name - "f64", "bf16", ...; "?" for an unknown value. */
const char *dtype_name(unsigned dtype);

/* dtype_parse - the dtype named `s`; -1 if none. */
int dtype_parse(const char *s);

/* dtype_size - bytes per element; 1 for LS_BYTES and for packed FP4 (two
 * elements per byte: use dtype_bits); 0 for an unknown value. */
size_t dtype_size(unsigned dtype);

/* dtype_bits - bits per element: 4 for LS_F4E2M1, else 8 * dtype_size. */
unsigned dtype_bits(unsigned dtype);

/* dtype_is_float - 1 for the floating-point types. */
int dtype_is_float(unsigned dtype);

/* level_name - "metric", "collective", "module", "op"; "?" if unknown. */
const char *level_name(unsigned level);

/* level_parse - accepts singular and plural ("ops"); -1 if unknown. */
int level_parse(const char *s);

/* dtype_ulp_distance - how many representable values of `dtype` lie between
 * the scalars whose raw bits are `a` and `b` (low bits of the words). Returns
 * 0 for identical bits (and for +0 vs -0 it returns 1: they differ in bits).
 * For integer types, the absolute difference. Returns UINT64_MAX when either
 * value is a NaN. */
uint64_t dtype_ulp_distance(unsigned dtype, uint64_t a, uint64_t b);

/* dtype_value_to_double - the scalar with raw bits `bits` as a double (exact
 * for every type but the 64-bit integers beyond 2^53). */
double dtype_value_to_double(unsigned dtype, uint64_t bits);

/* dtype_format_value - print a scalar exactly (shortest round-trip for
 * floats, decimal for integers) into `out`. */
void dtype_format_value(unsigned dtype, uint64_t bits, char *out, size_t cap);

#endif /* COMMON_DTYPE_H */
