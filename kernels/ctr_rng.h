/* ctr_rng.h - Philox4x32-10, the counter-based RNG of lockstep-train's data and init (host and device). */
#ifndef KERNELS_CTR_RNG_H
#define KERNELS_CTR_RNG_H

#include <stdint.h>

#ifdef __CUDACC__
#define CRNG_HD __host__ __device__ __forceinline__
#else
#define CRNG_HD static inline
#endif

/* Streams: independent sequences under one seed. */
enum crng_stream {
    CRNG_INIT = 1,    /* parameter initialisation */
    CRNG_DATA = 2,    /* the synthetic data set, by sample id */
    CRNG_TEACHER = 3, /* the function the targets come from */
    CRNG_NOISE = 4,   /* per-rank input noise: the trainer's RNG state */
};

typedef struct crng_u4 {
    uint32_t v[4];
} crng_u4;

/* crng_philox - Philox4x32-10 of counter (c0..c3) under key (k0, k1): four
 * 32-bit words that depend only on their arguments, so any value of any
 * stream can be had without generating the ones before it. */
CRNG_HD crng_u4 crng_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    crng_u4 out = {{c0, c1, c2, c3}};
    return out;
}

/* crng_u32 - word `j` (0..3) of the value at (seed, stream, a, b). */
CRNG_HD uint32_t crng_u32(uint64_t seed, uint32_t stream, uint64_t a, uint32_t b, unsigned j)
{
    crng_u4 x = crng_philox((uint32_t)a, (uint32_t)(a >> 32), b, stream, (uint32_t)seed, (uint32_t)(seed >> 32));
    return x.v[j & 3];
}

/* crng_uniform - a float in [-1, 1) with 24 random bits, exact on every
 * platform (no rounding: the integer fits the mantissa). */
CRNG_HD float crng_uniform(uint64_t seed, uint32_t stream, uint64_t a, uint32_t b)
{
    uint32_t w = crng_u32(seed, stream, a, b >> 2, b & 3) >> 8;
    return (float)((int32_t)w - (1 << 23)) * (1.0f / (float)(1 << 23));
}

#endif /* KERNELS_CTR_RNG_H */
