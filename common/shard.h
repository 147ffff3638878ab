/* shard.h - logical tensors from shard records: the shards of one (step, name, occurrence) across ranks, checked to
 * tile their tensor, summed into its LSFP-1 and its chunk partials.
 *
 * A shard record (ls_tensor_shard) holds bytes [offset, offset + nbytes) of a logical tensor of
 * total bytes, with their LSFP-1 accumulator taken at global word positions and the partials of the
 * global 1 MiB chunks they touch. LSFP-1 is a sum over words of terms that depend on the word and its
 * position, so the accumulators of shards that tile the tensor add up to the whole's, and
 * fp_finish(sum, total) is exactly `lockstep fp` of the whole buffer, however many ranks held it.
 * Pure: `lockstep diff --logical`, `lockstep dump --logical` and lockstepd's comparison of runs with
 * different rank counts call it. Tested in tests/unit/test_shard.c.
 */
#ifndef COMMON_SHARD_H
#define COMMON_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

/* One shard of a logical tensor and the rank that recorded it. */
typedef struct shard_piece {
    const rec_record *r; /* borrowed; a record with a shard extension field */
    uint32_t rank;
    uint64_t offset; /* filled by shard_assemble */
} shard_piece;

/* A logical tensor, assembled. */
typedef struct shard_tensor {
    uint64_t fp;     /* LSFP-1 of the whole tensor */
    uint64_t acc;    /* its accumulator */
    uint64_t nbytes; /* the total */
    uint8_t dtype, ndim;
    int64_t shape[LS_MAX_DIMS];
    uint64_t *chunks; /* the whole's 1 MiB chunk partials (owned; NULL when a shard lacked its partials or the
                         tensor has one chunk) */
    uint32_t n_chunks;
    shard_piece *pieces; /* the caller's array, sorted by offset */
    size_t n_pieces;
} shard_tensor;

/* shard_assemble - sort `pieces` (n shards of one logical tensor) by offset
 * and combine them into `out`. Returns 0; or -1 with a sentence in `why`
 * when they do not tile one tensor: a gap (bytes no shard holds), an
 * overlap (bytes two shards hold), shards that disagree on the total, the
 * dtype or the shape, or a record that is not a shard; -2 when out of
 * memory. Free with shard_tensor_release. */
int shard_assemble(shard_piece *pieces, size_t n, shard_tensor *out, char *why, size_t cap);

/* shard_tensor_release - free what shard_assemble allocated. */
void shard_tensor_release(shard_tensor *t);

/* shard_holders - the ranks whose shards hold some of bytes [lo, hi) of
 * `t`, into ranks[] (at most `max`). Returns how many. */
size_t shard_holders(const shard_tensor *t, uint64_t lo, uint64_t hi, uint32_t *ranks, size_t max);

/* shard_as_record - `t` as a record for the one rule of common/recmatch.h:
 * dtype, the full shape, the total size, the logical fingerprint and chunk
 * partials; name, step and occurrence from the first shard. */
void shard_as_record(const shard_tensor *t, rec_record *out);

/* A shard record of a run, with where it sits among its rank's records of its step. */
typedef struct shard_src {
    const rec_record *r;
    uint32_t rank;
    size_t pos;
} shard_src;

/* A run's logical tensors, in program order: by step, then by the position of each tensor's first shard on
 * the lowest rank that holds one. */
typedef struct shard_logical {
    shard_tensor *tensors;
    rec_record *recs; /* the tensors as records (shard_as_record), parallel to `tensors` */
    size_t n;
    shard_piece *pieces;   /* every shard, grouped by tensor (owned) */
    const rec_record *bad; /* after a failure to assemble: a shard of the tensor that failed */
} shard_logical;

/* shard_logical_build - the logical tensors of one run from its shard
 * records `in` (n of them, any steps and ranks; `in` is reordered, the
 * records it points to must outlive `out`). Returns 0; -1 with a sentence
 * in `why` naming the tensor and step whose shards do not tile it (out->bad
 * points at one of them); -2 when out of memory. Free with
 * shard_logical_release (also after a failure). */
int shard_logical_build(shard_src *in, size_t n, shard_logical *out, char *why, size_t cap);

void shard_logical_release(shard_logical *l);

#endif /* COMMON_SHARD_H */
