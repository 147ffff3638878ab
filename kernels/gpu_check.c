/* gpu_check.c - the GPU checks: device LSFP-1 against the CPU (vectors, random buffers, every alignment),
 * ls_tensor_device against ls_tensor, and the reductions' determinism. One JSON line per check. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "common/lsfp1.h"
#include "kernels/lsfp1_cuda.h"
#include "kernels/reduce_cuda.h"
#include "kernels/tensor_device.h"
#include "kernels/vectors.h"

static int failures;

static void report(const char *check, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(const char *check, int ok, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    printf("{\"check\":\"%s\",\"ok\":%s,%s}\n", check, ok ? "true" : "false", detail);
    fflush(stdout);
    if (!ok)
        failures++;
}

#define CK(call)                                                                                                       \
    do {                                                                                                               \
        cudaError_t rc_ = (call);                                                                                      \
        if (rc_ != cudaSuccess) {                                                                                      \
            fprintf(stderr, "gpu_check: %s: %s\n", #call, cudaGetErrorString(rc_));                                    \
            exit(2);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* device_fp - LSFP-1 (and chunk partials) of host bytes copied to the
 * device at `align` bytes past a 256-byte boundary. */
static uint64_t device_fp(unsigned char *d_base, const unsigned char *h, size_t n, size_t align, uint64_t *chunks)
{
    uint64_t fp;
    if (n)
        CK(cudaMemcpy(d_base + align, h, n, cudaMemcpyHostToDevice));
    CK(lsk_lsfp1_sync(d_base + align, n, &fp, chunks, 0));
    return fp;
}

static void check_vectors(const char *path, unsigned char *d_buf)
{
    lsk_vector *v;
    char why[512];
    int n = lsk_vectors_load(path, &v, why, sizeof(why));
    if (n < 0) {
        report("lsfp1_vectors", 0, "\"detail\":\"%s\"", why);
        return;
    }
    int bad = 0, runs = 0;
    for (int i = 0; i < n; i++) {
        for (size_t align = 0; align < 16; align++, runs++) {
            uint64_t chunks[8] = {0};
            uint64_t fp = device_fp(d_buf, v[i].data, v[i].nbytes, align, v[i].n_chunks <= 8 ? chunks : NULL);
            int ok = fp == v[i].fp;
            for (size_t c = 0; ok && c < v[i].n_chunks && v[i].n_chunks <= 8; c++)
                ok = chunks[c] == v[i].chunks[c];
            if (!ok && bad++ < 5)
                fprintf(stderr, "vector %s at alignment %zu: %016llx, want %016llx\n", v[i].name, align,
                        (unsigned long long)fp, (unsigned long long)v[i].fp);
        }
    }
    report("lsfp1_vectors", bad == 0, "\"vectors\":%d,\"runs\":%d,\"mismatches\":%d", n, runs, bad);
    lsk_vectors_free(v, n);
}

static void check_random(unsigned char *d_buf, size_t max, int count)
{
    unsigned char *h = malloc(max + 16);
    uint64_t *want = malloc((fp_chunk_count(max) + 1) * 8), *got = malloc((fp_chunk_count(max) + 1) * 8);
    if (!h || !want || !got)
        exit(2);
    lsk_fill_random(h, max + 16, 2024);
    int bad = 0;
    uint64_t s = 7;
    for (int k = 0; k < count; k++) {
        s = fp_fmix64(s + 0x9e3779b97f4a7c15ULL);
        /* sizes on every scale: bytes, KiB, MiB, up to max; alignments 0..15 */
        size_t n = (size_t)(s % 4 == 0 ? s % 64 : s % 4 == 1 ? s % 65536 : s % 4 == 2 ? s % (4 << 20) : s % max);
        size_t align = (s >> 50) % 16, src = (s >> 20) % 16;
        uint64_t fp_cpu = fp_lsfp1_chunks(h + src, n, want);
        uint64_t fp_gpu = device_fp(d_buf, h + src, n, align, got);
        if (fp_cpu != fp_gpu || memcmp(want, got, fp_chunk_count(n) * 8) != 0) {
            if (bad++ < 5)
                fprintf(stderr, "random buffer %d: %zu bytes at alignment %zu: %016llx, want %016llx\n", k, n, align,
                        (unsigned long long)fp_gpu, (unsigned long long)fp_cpu);
        }
    }
    report("lsfp1_random", bad == 0, "\"buffers\":%d,\"max_bytes\":%zu,\"mismatches\":%d", count, max, bad);
    free(h);
    free(want);
    free(got);
}

/* check_tensor_device - the record ls_tensor_device writes carries the fp
 * ls_tensor writes for the same bytes (gpu-check.sh compares the trace). */
static void check_tensor_device(unsigned char *d_buf)
{
    size_t n = (3 << 20) + 5;
    unsigned char *h = malloc(n);
    if (!h)
        exit(2);
    lsk_fill_random(h, n, 5);
    CK(cudaMemcpy(d_buf + 3, h, n, cudaMemcpyHostToDevice));
    int64_t shape[1] = {(int64_t)n};
    int rc = ls_init();
    ls_step_begin(1);
    int a = ls_tensor("x", h, n, LS_U8, 1, shape);
    int b = ls_tensor_device("x", d_buf + 3, n, LS_U8, 1, shape, 0);
    int c = lsk_tensor_device_at(LS_LEVEL_COLLECTIVE, "x.collective", d_buf + 3, n, LS_U8, 1, shape, 0);
    ls_step_end();
    ls_shutdown();
    report("ls_tensor_device", rc == 0 && a == 0 && b == 0 && c == 0, "\"init\":%d,\"host\":%d,\"device\":%d", rc, a,
           b);
    free(h);
}

/* check_reductions - each deterministic reduction gives the same bits on
 * every repetition; both modes agree with a double-precision reference. */
static void check_reductions(void)
{
    const size_t n = 10000019;
    const int rows = 100000, d = 64, vocab = 5000; /* rows * d <= n: the rows are read from x */
    float *h = malloc(n * sizeof(float));
    int32_t *idx = malloc(rows * sizeof(int32_t));
    if (!h || !idx)
        exit(2);
    double ref = 0;
    for (size_t i = 0; i < n; i++) {
        h[i] = (float)((double)(fp_fmix64(i + 1) >> 11) / 9007199254740992.0 - 0.5);
        ref += h[i];
    }
    for (int j = 0; j < rows; j++)
        idx[j] = (int32_t)(fp_fmix64((uint64_t)j * 3 + 1) % (uint64_t)(j % 7 == 0 ? 16 : vocab)); /* hot rows */
    float *dx, *dout, *demb;
    int32_t *didx;
    void *ws, *sws;
    size_t sws_bytes = lsk_scatter_ws_bytes(rows, vocab);
    CK(cudaMalloc((void **)&dx, n * sizeof(float)));
    CK(cudaMalloc((void **)&dout, sizeof(float)));
    CK(cudaMalloc((void **)&demb, (size_t)vocab * d * sizeof(float)));
    CK(cudaMalloc((void **)&didx, rows * sizeof(int32_t)));
    CK(cudaMalloc(&ws, lsk_sum_ws_bytes(n)));
    CK(cudaMalloc(&sws, sws_bytes));
    CK(cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(didx, idx, rows * sizeof(int32_t), cudaMemcpyHostToDevice));

    for (int mode = 0; mode < 2; mode++) {
        uint64_t first = 0;
        int same = 1;
        float v = 0;
        for (int rep = 0; rep < 20; rep++) {
            CK(lsk_sum_f32((lsk_mode)mode, dx, n, dout, ws, 0));
            CK(cudaMemcpy(&v, dout, sizeof(float), cudaMemcpyDeviceToHost));
            uint32_t bits;
            memcpy(&bits, &v, 4);
            if (rep == 0)
                first = bits;
            else if (bits != first)
                same = 0;
        }
        int close = fabs(v - ref) <= 1e-3 * (1 + fabs(ref)) + 0.5;
        report(mode ? "sum_atomic" : "sum_det", (mode || same) && close,
               "\"n\":%zu,\"identical_over_20\":%s,\"value\":%.9g,\"reference\":%.9g", n, same ? "true" : "false", v,
               ref);
    }
    for (int mode = 0; mode < 2; mode++) {
        uint64_t first = 0;
        int same = 1;
        for (int rep = 0; rep < 10; rep++) {
            CK(cudaMemset(demb, 0, (size_t)vocab * d * sizeof(float)));
            CK(lsk_scatter_add_f32((lsk_mode)mode, dx, d, didx, rows, d, demb, vocab, sws, (uint32_t)rep * 7919, 0));
            uint64_t fp;
            CK(lsk_lsfp1_sync(demb, (size_t)vocab * d * sizeof(float), &fp, NULL, 0));
            if (rep == 0)
                first = fp;
            else if (fp != first)
                same = 0;
        }
        report(mode ? "scatter_add_atomic" : "scatter_add_det", mode || same,
               "\"rows\":%d,\"dim\":%d,\"vocab\":%d,\"identical_over_10\":%s", rows, d, vocab, same ? "true" : "false");
    }
    cudaFree(dx);
    cudaFree(dout);
    cudaFree(demb);
    cudaFree(didx);
    cudaFree(ws);
    cudaFree(sws);
    free(h);
    free(idx);
}

int main(int argc, char **argv)
{
    const char *vectors = argc > 1 ? argv[1] : "tests/data/lsfp1-vectors.json";
    int count = argc > 2 ? atoi(argv[2]) : 1000;
    size_t max = (size_t)64 << 20;
    unsigned char *d_buf;
    CK(cudaMalloc((void **)&d_buf, max + 256));
    check_vectors(vectors, d_buf);
    check_random(d_buf, max, count);
    check_tensor_device(d_buf);
    check_reductions();
    cudaFree(d_buf);
    return failures ? 1 : 0;
}
