/* lsfp1.h - LSFP-1, the position-dependent, order-free 64-bit fingerprint (docs/design.md). */
#ifndef COMMON_LSFP1_H
#define COMMON_LSFP1_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* C++ callers (the CUDA sources) link against the C definitions */
#endif

#define FP_CHUNK_BYTES ((size_t)1 << 20)
#define FP_CHUNK_WORDS (FP_CHUNK_BYTES / 8)
#define FP_WORD_KEY 0x9e3779b97f4a7c15ULL
#define FP_LEN_KEY 0xc2b2ae3d27d4eb4fULL
#define FP_DOMAIN 0x4c53465031000000ULL
#define FP_ALGO_NAME "lsfp1"

/* fp_fmix64 - the MurmurHash3 64-bit finalizer, a bijection on 64 bits. */
static inline uint64_t fp_fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* fp_acc - the LSFP-1 accumulator of a buffer whose first byte is word
 * `first_word` of the whole (so that pieces can be summed). `nbytes` need not
 * be a multiple of 8: the last word is zero-padded. */
uint64_t fp_acc(const void *data, size_t nbytes, uint64_t first_word);

/* fp_finish - the fingerprint from a complete accumulator and total length. */
static inline uint64_t fp_finish(uint64_t acc, uint64_t nbytes)
{
    return fp_fmix64(acc ^ (nbytes * FP_LEN_KEY) ^ FP_DOMAIN);
}

/* fp_lsfp1 - LSFP-1 of a whole buffer. */
uint64_t fp_lsfp1(const void *data, size_t nbytes);

/* fp_chunk_count - how many 1 MiB chunk partials a buffer of nbytes has. */
static inline size_t fp_chunk_count(size_t nbytes)
{
    return (nbytes + FP_CHUNK_BYTES - 1) / FP_CHUNK_BYTES;
}

/* fp_lsfp1_chunks - LSFP-1 of a buffer, writing its fp_chunk_count(nbytes)
 * chunk partials to `chunks` in the same pass. */
uint64_t fp_lsfp1_chunks(const void *data, size_t nbytes, uint64_t *chunks);

/* fp_chunk_span - how many chunks of `chunk_bytes` the bytes
 * [offset, offset + nbytes) touch, and the index of the first in *first
 * (0 touched for nbytes 0). */
static inline size_t fp_chunk_span(uint64_t offset, uint64_t nbytes, uint64_t chunk_bytes, uint64_t *first)
{
    *first = offset / chunk_bytes;
    if (!nbytes)
        return 0;
    return (size_t)((offset + nbytes - 1) / chunk_bytes - *first + 1);
}

/* fp_acc_chunked - the LSFP-1 accumulator of `nbytes` bytes that sit at byte
 * `offset` of a larger buffer (a shard of a logical tensor), taken at their
 * global word positions, with the partials of every `chunk_bytes` chunk they
 * touch written to `chunks` (fp_chunk_span of them; a chunk cut by the
 * buffer's ends gets the partial of its part here). `offset` and
 * `chunk_bytes` must be multiples of 8. The partials add up to the result,
 * and the results of the shards of a whole add up to the whole's. */
uint64_t fp_acc_chunked(const void *data, size_t nbytes, uint64_t offset, uint64_t chunk_bytes, uint64_t *chunks);

/* fp_stream - incremental LSFP-1 over data that arrives in pieces. */
typedef struct fp_stream {
    uint64_t acc;
    uint64_t nbytes;
    unsigned char tail[8];
    unsigned tail_len;
} fp_stream;

void fp_stream_init(fp_stream *s);
void fp_stream_update(fp_stream *s, const void *data, size_t n);
uint64_t fp_stream_digest(const fp_stream *s);

#ifdef __cplusplus
}
#endif

#endif /* COMMON_LSFP1_H */
