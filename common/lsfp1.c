/* lsfp1.c - LSFP-1 on the CPU: a scalar kernel, and an AVX-512 one chosen at run time. */
#include "common/lsfp1.h"

#include <string.h>

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* acc_words_scalar - sum of fmix64(w_i + (i+1)*K) over n whole words, the
 * first having global index `first`. Four independent lanes keep both
 * multipliers busy. */
static uint64_t acc_words_scalar(const unsigned char *p, size_t n, uint64_t first)
{
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    uint64_t k = (first + 1) * FP_WORD_KEY;
    const uint64_t k4 = 4 * FP_WORD_KEY;
    size_t i = 0;

    for (; i + 4 <= n; i += 4, p += 32, k += k4) {
        a0 += fp_fmix64(load_le64(p) + k);
        a1 += fp_fmix64(load_le64(p + 8) + k + FP_WORD_KEY);
        a2 += fp_fmix64(load_le64(p + 16) + k + 2 * FP_WORD_KEY);
        a3 += fp_fmix64(load_le64(p + 24) + k + 3 * FP_WORD_KEY);
    }
    for (; i < n; i++, p += 8, k += FP_WORD_KEY)
        a0 += fp_fmix64(load_le64(p) + k);
    return a0 + a1 + a2 + a3;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang_analyzer__)
#include <immintrin.h>

__attribute__((target("avx512f,avx512dq"))) static inline __m512i fmix_v(__m512i x)
{
    const __m512i m1 = _mm512_set1_epi64((long long)0xff51afd7ed558ccdULL);
    const __m512i m2 = _mm512_set1_epi64((long long)0xc4ceb9fe1a85ec53ULL);
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
    x = _mm512_mullo_epi64(x, m1);
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
    x = _mm512_mullo_epi64(x, m2);
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
    return x;
}

/* acc_words_avx512 - the same sum, eight words per vector, two vectors per
 * iteration. Little-endian only, as is every x86-64. */
__attribute__((target("avx512f,avx512dq"))) static uint64_t acc_words_avx512(const unsigned char *p, size_t n,
                                                                             uint64_t first)
{
    const __m512i step = _mm512_set1_epi64((long long)(16 * FP_WORD_KEY));
    __m512i k0 = _mm512_set_epi64((long long)((first + 8) * FP_WORD_KEY), (long long)((first + 7) * FP_WORD_KEY),
                                  (long long)((first + 6) * FP_WORD_KEY), (long long)((first + 5) * FP_WORD_KEY),
                                  (long long)((first + 4) * FP_WORD_KEY), (long long)((first + 3) * FP_WORD_KEY),
                                  (long long)((first + 2) * FP_WORD_KEY), (long long)((first + 1) * FP_WORD_KEY));
    __m512i k1 = _mm512_add_epi64(k0, _mm512_set1_epi64((long long)(8 * FP_WORD_KEY)));
    __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
    size_t i = 0;

    for (; i + 16 <= n; i += 16, p += 128) {
        __m512i w0 = _mm512_loadu_si512((const void *)p);
        __m512i w1 = _mm512_loadu_si512((const void *)(p + 64));
        a0 = _mm512_add_epi64(a0, fmix_v(_mm512_add_epi64(w0, k0)));
        a1 = _mm512_add_epi64(a1, fmix_v(_mm512_add_epi64(w1, k1)));
        k0 = _mm512_add_epi64(k0, step);
        k1 = _mm512_add_epi64(k1, step);
    }
    /* Not _mm512_reduce_add_epi64: GCC implements it with signed (overflowing) adds. */
    uint64_t lanes[8], acc = 0;
    _mm512_storeu_si512((void *)lanes, _mm512_add_epi64(a0, a1));
    for (int l = 0; l < 8; l++)
        acc += lanes[l];
    /* GCC emits no vzeroupper here: without it the caller's SSE float code
     * runs about 3x slower afterwards (measured on AMD EPYC). */
    _mm256_zeroupper();
    return acc + acc_words_scalar(p, n - i, first + i);
}

/* mul_v2 - x * m mod 2^64 in each of four lanes (AVX2 has no 64-bit multiply), with m_sw = m with its 32-bit halves
 * swapped: lo(x)*lo(m) + ((lo(x)*hi(m) + hi(x)*lo(m)) << 32), both cross products from one 32-bit vpmulld. */
__attribute__((target("avx2"))) static inline __m256i mul_v2(__m256i x, __m256i m, __m256i m_sw)
{
    __m256i lo = _mm256_mul_epu32(x, m);
    __m256i cross = _mm256_mullo_epi32(x, m_sw); /* 32-bit lanes: lo(x)*hi(m), hi(x)*lo(m) */
    cross = _mm256_add_epi64(cross, _mm256_slli_epi64(cross, 32));
    cross = _mm256_and_si256(cross, _mm256_set1_epi64x((long long)0xffffffff00000000ULL));
    return _mm256_add_epi64(lo, cross);
}

#define SWAP32(m) (((m) << 32) | ((m) >> 32))

__attribute__((target("avx2"))) static inline __m256i fmix_v2(__m256i x)
{
    const uint64_t a = 0xff51afd7ed558ccdULL, b = 0xc4ceb9fe1a85ec53ULL;
    x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 33));
    x = mul_v2(x, _mm256_set1_epi64x((long long)a), _mm256_set1_epi64x((long long)SWAP32(a)));
    x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 33));
    x = mul_v2(x, _mm256_set1_epi64x((long long)b), _mm256_set1_epi64x((long long)SWAP32(b)));
    x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 33));
    return x;
}

/* The AVX2 kernel's state: three vectors of four lanes and four scalar lanes, 16 words an iteration. */
typedef struct avx2_lanes {
    __m256i a0, a1, a2, k0, k1, k2;
    uint64_t s0, s1, s2, s3, k;
} avx2_lanes;

/* AVX2_PREFETCH - how far ahead the AVX2 kernel asks for lines. The kernel is busy computing while lines arrive, and
 * the hardware prefetcher alone left it at about half the read speed on buffers in memory; 12 KiB ahead gave about
 * 1.2x (bench/fp on AMD EPYC). */
#define AVX2_PREFETCH 12288

/* avx2_words16 - fold `iters` iterations of 16 words at p into `l`, asking for the lines AVX2_PREFETCH bytes ahead
 * when `prefetch` (a constant: the kernel's two loops are compiled apart). */
__attribute__((target("avx2"), always_inline)) static inline const unsigned char *
avx2_words16(avx2_lanes *l, const unsigned char *p, size_t iters, int prefetch)
{
    const __m256i step = _mm256_set1_epi64x((long long)(16 * FP_WORD_KEY));
    avx2_lanes v = *l;

    for (size_t it = 0; it < iters; it++, p += 128, v.k += 16 * FP_WORD_KEY) {
        if (prefetch) {
            _mm_prefetch((const char *)p + AVX2_PREFETCH, _MM_HINT_T0);
            _mm_prefetch((const char *)p + AVX2_PREFETCH + 64, _MM_HINT_T0);
        }
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
        __m256i w2 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 64));
        v.a0 = _mm256_add_epi64(v.a0, fmix_v2(_mm256_add_epi64(w0, v.k0)));
        v.a1 = _mm256_add_epi64(v.a1, fmix_v2(_mm256_add_epi64(w1, v.k1)));
        v.a2 = _mm256_add_epi64(v.a2, fmix_v2(_mm256_add_epi64(w2, v.k2)));
        v.k0 = _mm256_add_epi64(v.k0, step);
        v.k1 = _mm256_add_epi64(v.k1, step);
        v.k2 = _mm256_add_epi64(v.k2, step);
        /* The last four words on the scalar multiplier, which the vector code leaves idle. */
        v.s0 += fp_fmix64(load_le64(p + 96) + v.k);
        v.s1 += fp_fmix64(load_le64(p + 104) + v.k + FP_WORD_KEY);
        v.s2 += fp_fmix64(load_le64(p + 112) + v.k + 2 * FP_WORD_KEY);
        v.s3 += fp_fmix64(load_le64(p + 120) + v.k + 3 * FP_WORD_KEY);
    }
    *l = v;
    return p;
}

/* acc_words_avx2 - the same sum for x86-64 machines without AVX-512: twelve words of each 16 in vectors (the 64-bit
 * multiplies built from 32-bit ones), four on the scalar unit beside them, the lines asked for ahead. */
__attribute__((target("avx2"))) static uint64_t acc_words_avx2(const unsigned char *p, size_t n, uint64_t first)
{
    avx2_lanes l = {0};
    l.k0 = _mm256_set_epi64x((long long)((first + 4) * FP_WORD_KEY), (long long)((first + 3) * FP_WORD_KEY),
                             (long long)((first + 2) * FP_WORD_KEY), (long long)((first + 1) * FP_WORD_KEY));
    l.k1 = _mm256_add_epi64(l.k0, _mm256_set1_epi64x((long long)(4 * FP_WORD_KEY)));
    l.k2 = _mm256_add_epi64(l.k0, _mm256_set1_epi64x((long long)(8 * FP_WORD_KEY)));
    l.k = (first + 13) * FP_WORD_KEY;
    size_t iters = n / 16, ahead = AVX2_PREFETCH / 128;
    size_t far = iters > ahead ? iters - ahead : 0; /* iterations whose prefetch stays inside the buffer */

    p = avx2_words16(&l, p, far, 1);
    p = avx2_words16(&l, p, iters - far, 0);
    uint64_t lanes[4], acc = l.s0 + l.s1 + l.s2 + l.s3;
    _mm256_storeu_si256((__m256i *)(void *)lanes, _mm256_add_epi64(_mm256_add_epi64(l.a0, l.a1), l.a2));
    for (int i = 0; i < 4; i++)
        acc += lanes[i];
    _mm256_zeroupper();
    return acc + acc_words_scalar(p, n - 16 * iters, first + 16 * iters);
}

typedef uint64_t (*acc_words_fn)(const unsigned char *, size_t, uint64_t);

static acc_words_fn pick_acc_words(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        return acc_words_avx512;
    if (__builtin_cpu_supports("avx2"))
        return acc_words_avx2;
    return acc_words_scalar;
}

static uint64_t acc_words(const unsigned char *p, size_t n, uint64_t first)
{
    static acc_words_fn fn;
    acc_words_fn f = __atomic_load_n(&fn, __ATOMIC_RELAXED);
    if (!f) {
        f = pick_acc_words();
        __atomic_store_n(&fn, f, __ATOMIC_RELAXED);
    }
    /* Short buffers are not worth the vector set-up. */
    if (n < 64)
        return acc_words_scalar(p, n, first);
    return f(p, n, first);
}
#else
static uint64_t acc_words(const unsigned char *p, size_t n, uint64_t first)
{
    return acc_words_scalar(p, n, first);
}
#endif

uint64_t fp_acc(const void *data, size_t nbytes, uint64_t first_word)
{
    const unsigned char *p = data;
    size_t words = nbytes / 8;
    size_t rest = nbytes % 8;
    uint64_t acc = words ? acc_words(p, words, first_word) : 0;

    if (rest) {
        unsigned char last[8] = {0};
        memcpy(last, p + words * 8, rest);
        acc += fp_fmix64(load_le64(last) + (first_word + words + 1) * FP_WORD_KEY);
    }
    return acc;
}

uint64_t fp_lsfp1(const void *data, size_t nbytes)
{
    return fp_finish(fp_acc(data, nbytes, 0), nbytes);
}

uint64_t fp_lsfp1_chunks(const void *data, size_t nbytes, uint64_t *chunks)
{
    const unsigned char *p = data;
    uint64_t acc = 0;
    size_t c = 0;

    for (size_t off = 0; off < nbytes; off += FP_CHUNK_BYTES, c++) {
        size_t len = nbytes - off < FP_CHUNK_BYTES ? nbytes - off : FP_CHUNK_BYTES;
        chunks[c] = fp_acc(p + off, len, off / 8);
        acc += chunks[c];
    }
    return fp_finish(acc, nbytes);
}

uint64_t fp_acc_chunked(const void *data, size_t nbytes, uint64_t offset, uint64_t chunk_bytes, uint64_t *chunks)
{
    const unsigned char *p = data;
    uint64_t acc = 0, first;
    size_t n = fp_chunk_span(offset, nbytes, chunk_bytes, &first);
    size_t done = 0;

    for (size_t c = 0; c < n; c++) {
        uint64_t end = (first + c + 1) * chunk_bytes - offset; /* where this chunk ends, in local bytes */
        size_t len = (size_t)(end < nbytes ? end : nbytes) - done;
        chunks[c] = fp_acc(p + done, len, (offset + done) / 8);
        acc += chunks[c];
        done += len;
    }
    return acc;
}

void fp_stream_init(fp_stream *s)
{
    memset(s, 0, sizeof(*s));
}

void fp_stream_update(fp_stream *s, const void *data, size_t n)
{
    const unsigned char *p = data;

    if (s->tail_len) {
        size_t take = 8 - s->tail_len < n ? 8 - s->tail_len : n;
        memcpy(s->tail + s->tail_len, p, take);
        s->tail_len += (unsigned)take;
        p += take;
        n -= take;
        if (s->tail_len < 8)
            return;
        s->acc += fp_acc(s->tail, 8, s->nbytes / 8);
        s->nbytes += 8;
        s->tail_len = 0;
    }
    size_t whole = n & ~(size_t)7;
    if (whole) {
        s->acc += fp_acc(p, whole, s->nbytes / 8);
        s->nbytes += whole;
    }
    s->tail_len = (unsigned)(n - whole);
    memcpy(s->tail, p + whole, s->tail_len);
}

uint64_t fp_stream_digest(const fp_stream *s)
{
    uint64_t acc = s->acc;
    if (s->tail_len)
        acc += fp_acc(s->tail, s->tail_len, s->nbytes / 8);
    return fp_finish(acc, s->nbytes + s->tail_len);
}
