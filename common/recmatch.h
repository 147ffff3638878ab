/* recmatch.h - when two records are the same, and the step digest built from that rule: one fact for every program.
 *
 * `lockstep diff` (files), lockstepd's comparison and lockstepd's per-step digests all decide "same
 * record" here. Records are matched on their key (rank, step, name, occurrence) elsewhere; this module
 * judges what a matched pair holds: dtype, shape, byte count, LSFP-1 fingerprint and, for scalars, the
 * exact value bits. Timestamps, seq, level, inputs and chunk partials are never compared (inputs and
 * chunks explain a difference; they do not make one).
 */
#ifndef COMMON_RECMATCH_H
#define COMMON_RECMATCH_H

#include <stdint.h>

#include "common/record.h"

/* How a matched pair differs, in the order the rule checks. */
typedef enum rec_diff {
    REC_SAME = 0,
    REC_DIFF_DTYPE,   /* another element type */
    REC_DIFF_SHAPE,   /* other extents, or another byte count (the size is part of a record) */
    REC_DIFF_CONTENT, /* another fingerprint, another scalar value, or a value on one side only */
} rec_diff;

/* rec_compare - how `b` differs from `a` (their keys are assumed equal). */
rec_diff rec_compare(const rec_record *a, const rec_record *b);

/* rec_diff_name - "same", "dtype", "shape", "content". */
const char *rec_diff_name(rec_diff d);

/* rec_digest_term - the 64-bit term of one record in its step's digest:
 * the step digest of a rank is the XOR of its records' terms (with the
 * record count beside it). Two records of the same key have the same term
 * exactly when rec_compare calls them REC_SAME (up to 64-bit collisions), so
 * equal digests mean equal steps. Digest version 2: the byte count is in
 * the term (version 1, before it, left it out). */
uint64_t rec_digest_term(const rec_record *r);

#define REC_DIGEST_VERSION 2

#endif /* COMMON_RECMATCH_H */
