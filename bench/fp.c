/* fp.c - benchmark: LSFP-1 against a plain read, memcpy and XXH3-64 from L1-sized to memory-sized buffers, a rank
 * hashing a 1/n slice against the whole, and the API's cost per record.
 *
 * Prints one JSON line. The kernels are measured in interleaved rounds over
 * the same buffer (median of the rounds), so a noisy neighbour slows all of
 * them alike and the ratios stay meaningful. The plain read is a 64-bit XOR
 * over every word, as wide as the CPU allows: the limit any hash meets.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/lsfp1.h"
#include "include/lockstep.h"

#define MAX_BYTES ((size_t)512 << 20)
#define LEGACY_BYTES ((size_t)256 << 20) /* the size of the top-level figures, as before the size table */
#define ROUNDS 7
#define SAMPLE_BYTES ((size_t)64 << 20) /* a small buffer is hashed again until a sample covers this much */
#define FLUSH_BYTES ((size_t)128 << 20) /* read to evict the caches: 4x this machine's L3 */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

static volatile uint64_t sink;

/* READ_XOR - a function XOR-ing every 64-bit word of p[0..n) (n a multiple of 8) with four vector accumulators
 * of type V, compiled for target `tgt`. */
#define READ_XOR(fn, tgt, V)                                                                                           \
    __attribute__((target(tgt))) static uint64_t fn(const unsigned char *p, size_t n)                                  \
    {                                                                                                                  \
        V a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, w0, w1, w2, w3;                                                      \
        size_t i = 0, s = sizeof(V);                                                                                   \
        for (; i + 4 * s <= n; i += 4 * s) {                                                                           \
            memcpy(&w0, p + i, s), memcpy(&w1, p + i + s, s), memcpy(&w2, p + i + 2 * s, s);                           \
            memcpy(&w3, p + i + 3 * s, s);                                                                             \
            a0 ^= w0, a1 ^= w1, a2 ^= w2, a3 ^= w3;                                                                    \
        }                                                                                                              \
        a0 ^= a1 ^ a2 ^ a3;                                                                                            \
        uint64_t x = 0, w;                                                                                             \
        for (size_t l = 0; l < s / 8; l++)                                                                             \
            x ^= a0[l];                                                                                                \
        for (; i < n; i += 8)                                                                                          \
            memcpy(&w, p + i, 8), x ^= w;                                                                              \
        return x;                                                                                                      \
    }

#if defined(__x86_64__) && defined(__GNUC__)
typedef uint64_t u64x2 __attribute__((vector_size(16)));
typedef uint64_t u64x4 __attribute__((vector_size(32)));
typedef uint64_t u64x8 __attribute__((vector_size(64)));
READ_XOR(read_xor_sse2, "sse2", u64x2)
READ_XOR(read_xor_avx2, "avx2", u64x4)
READ_XOR(read_xor_avx512, "avx512f", u64x8)
#include <immintrin.h>

__attribute__((target("avx"))) static void zero_upper(void)
{
    _mm256_zeroupper(); /* as the LSFP-1 kernels do, so the SSE code after either runs at full speed */
}

/* read_xor - the plain read, on the widest vectors this CPU has (as the LSFP-1 kernels pick theirs). */
static uint64_t read_xor(const unsigned char *p, size_t n)
{
    uint64_t x;
    if (__builtin_cpu_supports("avx512f"))
        x = read_xor_avx512(p, n);
    else if (__builtin_cpu_supports("avx2"))
        x = read_xor_avx2(p, n);
    else
        return read_xor_sse2(p, n);
    zero_upper();
    return x;
}
#else
static uint64_t read_xor(const unsigned char *p, size_t n)
{
    uint64_t x = 0, w;
    for (size_t i = 0; i + 8 <= n; i += 8)
        memcpy(&w, p + i, 8), x ^= w;
    return x;
}
#endif

enum { K_READ, K_LSFP1, K_XXH3, K_MEMCPY, K_COUNT };
static const char *const kernel_names[K_COUNT] = {"read", "lsfp1", "xxh3", "memcpy"};

/* run_kernel - kernel k over src[0..n) `reps` times; the seconds it took. The empty asm tells the compiler the
 * buffer may have changed, so no pass is hoisted out of the loop. */
static double run_kernel(int k, unsigned char *src, unsigned char *dst, size_t n, size_t reps)
{
    double t0 = now();
    for (size_t r = 0; r < reps; r++) {
        __asm__ volatile("" : : "r"(src), "r"(dst) : "memory");
        switch (k) {
        case K_READ: sink += read_xor(src, n); break;
        case K_LSFP1: sink += fp_lsfp1(src, n); break;
        case K_XXH3: sink += XXH3_64bits(src, n); break;
        default: memcpy(dst, src, n); sink += dst[r % n];
        }
    }
    return now() - t0;
}

/* bench_sizes - each kernel at each size, interleaved, as a JSON array into out; the 256 MiB figures into
 * legacy[] and LSFP-1's ratio to the read at the largest size into *mem_ratio. */
static void bench_sizes(unsigned char *src, unsigned char *dst, char *out, size_t cap, double *legacy,
                        double *mem_ratio)
{
    static const size_t sizes[] = {(size_t)32 << 10, (size_t)1 << 20, (size_t)64 << 20, LEGACY_BYTES, MAX_BYTES};
    size_t len = (size_t)snprintf(out, cap, "[");

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s], reps = n >= SAMPLE_BYTES ? 1 : SAMPLE_BYTES / n;
        double t[K_COUNT][ROUNDS], gbs[K_COUNT];
        for (int r = 0; r < ROUNDS; r++)
            for (int k = 0; k < K_COUNT; k++)
                t[k][r] = run_kernel(k, src, dst, n, reps);
        for (int k = 0; k < K_COUNT; k++)
            gbs[k] = (double)n * (double)reps / 1e9 / median(t[k], ROUNDS);
        len += (size_t)snprintf(out + len, cap - len, "%s{\"kib\":%zu", s ? "," : "", n >> 10);
        for (int k = 0; k < K_COUNT; k++)
            len += (size_t)snprintf(out + len, cap - len, ",\"%s_gbs\":%.2f", kernel_names[k], gbs[k]);
        len += (size_t)snprintf(out + len, cap - len, ",\"lsfp1_vs_read\":%.2f,\"lsfp1_vs_xxh3\":%.2f}",
                                gbs[K_LSFP1] / gbs[K_READ], gbs[K_LSFP1] / gbs[K_XXH3]);
        if (n == LEGACY_BYTES)
            memcpy(legacy, gbs, sizeof(gbs));
        *mem_ratio = gbs[K_LSFP1] / gbs[K_READ];
    }
    snprintf(out + len, cap - len, "]");
}

/* hash_slice - what a rank does to fingerprint slice `slice` of n equal slices of buf[0..nbytes) and combine it
 * with the other ranks' accumulators (`others`, n entries; its own entry is replaced): the slice's LSFP-1
 * accumulator at its global word positions, the sum, the finish. */
static uint64_t hash_slice(const unsigned char *buf, size_t nbytes, size_t n, size_t slice, uint64_t *others)
{
    size_t len = nbytes / n, off = slice * len;
    others[slice] = fp_acc(buf + off, len, off / 8);
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++)
        acc += others[i];
    return fp_finish(acc, nbytes);
}

/* bench_partial - per output size, the cost of one full LSFP-1 pass against a 1/n slice plus the combining, for
 * each n, as a JSON array into out. The slice turns with the repetition (slice = step mod n), as a rank checking
 * a different slice each step would; a small output stays in cache across repetitions, as a collective's output
 * just written does, and one of 16 MiB or more is evicted (a read of `flush`, FLUSH_BYTES) before each timing, so
 * that no slice is found in cache from the pass before it. Also checks that the n slices' accumulators combine to
 * the full fingerprint. */
static int bench_partial(unsigned char *src, const unsigned char *flush, char *out, size_t cap)
{
    static const size_t sizes[] = {(size_t)4 << 10, (size_t)64 << 10, (size_t)1 << 20, (size_t)16 << 20,
                                   (size_t)256 << 20};
    static const size_t ns[] = {1, 2, 4, 8, 64};
    enum { NN = sizeof(ns) / sizeof(ns[0]) };
    uint64_t others[64] = {0};
    size_t len = (size_t)snprintf(out, cap, "[");

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t bytes = sizes[s], reps = bytes >= SAMPLE_BYTES / 4 ? 1 : SAMPLE_BYTES / 4 / bytes;
        double t[NN][ROUNDS], us[NN];
        uint64_t whole = fp_lsfp1(src, bytes), acc = 0;
        for (size_t i = 0; i < 64; i++)
            hash_slice(src, bytes, 64, i, others), acc += others[i];
        if (fp_finish(acc, bytes) != whole) {
            fprintf(stderr, "bench/fp: the 64 slices of %zu bytes do not combine to the whole\n", bytes);
            return -1;
        }
        for (int r = 0; r < ROUNDS; r++)
            for (size_t j = 0; j < NN; j++) {
                if (reps == 1)
                    sink += read_xor(flush, FLUSH_BYTES);
                double t0 = now();
                for (size_t q = 0; q < reps; q++) {
                    __asm__ volatile("" : : "r"(src) : "memory");
                    sink += ns[j] == 1 ? fp_lsfp1(src, bytes) : hash_slice(src, bytes, ns[j], q % ns[j], others);
                }
                t[j][r] = now() - t0;
            }
        for (size_t j = 0; j < NN; j++)
            us[j] = median(t[j], ROUNDS) * 1e6 / (double)reps;
        len +=
            (size_t)snprintf(out + len, cap - len, "%s{\"kib\":%zu,\"full_us\":%.3f", s ? "," : "", bytes >> 10, us[0]);
        for (size_t j = 1; j < NN; j++)
            len += (size_t)snprintf(out + len, cap - len, ",\"n%zu_us\":%.3f,\"n%zu_speedup\":%.2f", ns[j], us[j],
                                    ns[j], us[0] / us[j]);
        len += (size_t)snprintf(out + len, cap - len, "}");
    }
    snprintf(out + len, cap - len, "]");
    return 0;
}

/* bench_api - the API writing a real trace file: ns per ls_metric, us per MiB of ls_tensor. */
static int bench_api(const unsigned char *src, double *metric_ns, double *tensor_us_per_mib)
{
    char dir[] = "/tmp/ls-bench-fp-XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    setenv("LOCKSTEP_TRACE_DIR", dir, 1);
    setenv("LOCKSTEP_TRACE", "modules", 1);
    setenv("LOCKSTEP_RANK", "0", 1);
    if (ls_init() < 0) {
        fprintf(stderr, "bench/fp: ls_init: %s\n", ls_last_error());
        return -1;
    }
    const long metric_calls = 2000000;
    double t0 = now();
    for (long i = 0; i < metric_calls; i++) {
        if (i % 100 == 0)
            ls_step_begin(i / 100);
        ls_metric("loss", (double)i);
        if (i % 100 == 99)
            ls_step_end();
    }
    *metric_ns = (now() - t0) * 1e9 / (double)metric_calls;

    const size_t tensor_bytes = (size_t)16 << 20;
    const int tensor_calls = 64;
    int64_t shape[1] = {(int64_t)(tensor_bytes / 4)};
    t0 = now();
    for (int i = 0; i < tensor_calls; i++)
        ls_tensor("layer.out", src + (size_t)(i % 8) * tensor_bytes, tensor_bytes, LS_F32, 1, shape);
    *tensor_us_per_mib = (now() - t0) * 1e6 / ((double)tensor_calls * (double)(tensor_bytes >> 20));
    ls_shutdown();
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench/fp: could not remove %s\n", dir);
    return 0;
}

int main(void)
{
    static char sizes_json[2048], partial_json[4096];
    unsigned char *src = aligned_alloc(64, MAX_BYTES), *dst = aligned_alloc(64, MAX_BYTES);
    if (!src || !dst) {
        fprintf(stderr, "bench/fp: cannot allocate 2 x %zu MiB\n", MAX_BYTES >> 20);
        return 1;
    }
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < MAX_BYTES / 8; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(src + 8 * i, &x, 8);
    }
    memset(dst, 1, MAX_BYTES); /* fault the pages in before timing */

    double g[K_COUNT] = {0}, mem_ratio = 0, metric_ns, tensor_us;
    bench_sizes(src, dst, sizes_json, sizeof(sizes_json), g, &mem_ratio);
    if (bench_partial(src, dst, partial_json, sizeof(partial_json)) < 0 || bench_api(src, &metric_ns, &tensor_us) < 0)
        return 1;
    double load[3] = {0};
    if (getloadavg(load, 3) < 1)
        load[0] = -1;

    printf("{\"bench\":\"fp\",\"buffer_mib\":%zu,\"rounds\":%d,\"lsfp1_gbs\":%.2f,\"memcpy_gbs\":%.2f,"
           "\"xxh3_gbs\":%.2f,\"read_gbs\":%.2f,\"lsfp1_vs_memcpy\":%.2f,\"lsfp1_vs_xxh3\":%.2f,"
           "\"lsfp1_vs_read\":%.2f,\"lsfp1_vs_read_memory\":%.2f,\"ls_metric_ns\":%.1f,"
           "\"ls_tensor_us_per_mib\":%.1f,\"loadavg\":%.2f,\"sizes\":%s,\"partial\":%s}\n",
           LEGACY_BYTES >> 20, ROUNDS, g[K_LSFP1], g[K_MEMCPY], g[K_XXH3], g[K_READ], g[K_LSFP1] / g[K_MEMCPY],
           g[K_LSFP1] / g[K_XXH3], g[K_LSFP1] / g[K_READ], mem_ratio, metric_ns, tensor_us, load[0], sizes_json,
           partial_json);
    free(dst);
    free(src);
    return 0;
}
