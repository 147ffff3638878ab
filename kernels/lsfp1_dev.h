/* lsfp1_dev.h - LSFP-1's work split for the GPU kernel, written once for device and host (the host copy is tested). */
#ifndef KERNELS_LSFP1_DEV_H
#define KERNELS_LSFP1_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "common/lsfp1.h"

#ifdef __CUDACC__
#define LSK_HD __host__ __device__ __forceinline__
#else
#define LSK_HD static inline
#endif

/* A tile is the words one block reduces at a time; a 1 MiB chunk holds a
 * whole number of tiles, so each tile's sum belongs to exactly one chunk
 * partial. */
#define LSK_TILE_WORDS 8192u
#define LSK_TILES_PER_CHUNK (FP_CHUNK_WORDS / LSK_TILE_WORDS)
#define LSK_THREADS 256

/* lsk_fmix64 - fp_fmix64, callable on the device. */
LSK_HD uint64_t lsk_fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* lsk_words - how many (zero-padded) words a buffer of nbytes has. */
LSK_HD uint64_t lsk_words(uint64_t nbytes)
{
    return (nbytes + 7) / 8;
}

/* lsk_tiles - how many tiles cover nbytes. */
LSK_HD uint64_t lsk_tiles(uint64_t nbytes)
{
    return (lsk_words(nbytes) + LSK_TILE_WORDS - 1) / LSK_TILE_WORDS;
}

/* lsk_word_bytes - little-endian word i of p[0..nbytes), the last one
 * zero-padded, from single bytes: right for any alignment, used at the
 * edges and for unaligned buffers. */
LSK_HD uint64_t lsk_word_bytes(const unsigned char *p, uint64_t nbytes, uint64_t i)
{
    uint64_t w = 0, off = i * 8;
    unsigned n = nbytes - off < 8 ? (unsigned)(nbytes - off) : 8;
    for (unsigned k = 0; k < n; k++)
        w |= (uint64_t)p[off + k] << (8 * k);
    return w;
}

/* lsk_term - word i's term of the accumulator. */
LSK_HD uint64_t lsk_term(uint64_t w, uint64_t i)
{
    return lsk_fmix64(w + (i + 1) * FP_WORD_KEY);
}

/* lsk_tile_thread_acc - thread `tid` of `nthreads`' share of tile `tile`:
 * words tile*LSK_TILE_WORDS + tid, + nthreads, ... (the generic path of the
 * kernel, byte loads). Any split of a tile among threads adds up to the same
 * sum, because integer addition is associative. */
LSK_HD uint64_t lsk_tile_thread_acc(const unsigned char *p, uint64_t nbytes, uint64_t tile, unsigned tid,
                                    unsigned nthreads)
{
    uint64_t nw = lsk_words(nbytes), lo = tile * LSK_TILE_WORDS;
    uint64_t hi = lo + LSK_TILE_WORDS < nw ? lo + LSK_TILE_WORDS : nw;
    uint64_t acc = 0;
    for (uint64_t i = lo + tid; i < hi; i += nthreads)
        acc += lsk_term(lsk_word_bytes(p, nbytes, i), i);
    return acc;
}

/* lsk_tile_chunk - the chunk partial a tile adds to. */
LSK_HD uint64_t lsk_tile_chunk(uint64_t tile)
{
    return tile / LSK_TILES_PER_CHUNK;
}

#endif /* KERNELS_LSFP1_DEV_H */
