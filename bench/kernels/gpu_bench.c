/* gpu_bench.c - benchmark: device LSFP-1 against a device-to-device copy, deterministic against atomic reductions.
 *
 * Prints one JSON line per figure. Each pair is timed with CUDA events in
 * interleaved rounds over the same buffers (median of the rounds), so clock
 * changes affect both sides alike.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "common/lsfp1.h"
#include "kernels/lsfp1_cuda.h"
#include "kernels/reduce_cuda.h"

#define ROUNDS 9

#define CK(call)                                                                                                       \
    do {                                                                                                               \
        cudaError_t rc_ = (call);                                                                                      \
        if (rc_ != cudaSuccess) {                                                                                      \
            fprintf(stderr, "gpu_bench: %s: %s\n", #call, cudaGetErrorString(rc_));                                    \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static float median(float *v, int n)
{
    qsort(v, (size_t)n, sizeof(float), cmp_float);
    return v[n / 2];
}

typedef void (*op_fn)(void *ctx);

/* time_pair - median milliseconds of `a` and of `b`, `reps` calls per
 * round, rounds interleaved. */
static void time_pair(op_fn a, op_fn b, void *ctx, int reps, float *ms_a, float *ms_b)
{
    cudaEvent_t e0, e1;
    float ta[ROUNDS], tb[ROUNDS];
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    a(ctx);
    b(ctx); /* warm up */
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < 2; k++) {
            op_fn f = k ? b : a;
            CK(cudaEventRecord(e0, 0));
            for (int i = 0; i < reps; i++)
                f(ctx);
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            (k ? tb : ta)[r] = ms / (float)reps;
        }
    }
    *ms_a = median(ta, ROUNDS);
    *ms_b = median(tb, ROUNDS);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
}

struct ctx {
    size_t nbytes;
    unsigned char *src, *dst;
    uint64_t *out;
    float *x, *y, *emb, *D, *A, *W;
    int32_t *idx;
    void *ws, *sws;
    size_t n;
    int rows, dim, vocab, batch, out_rows, in_cols;
};

static void op_fp(void *p)
{
    struct ctx *c = p;
    CK(lsk_lsfp1_async(c->src, c->nbytes, 0, c->out, 0));
}
static void op_fp_chunks(void *p)
{
    struct ctx *c = p;
    CK(lsk_lsfp1_async(c->src, c->nbytes, 1, c->out, 0));
}
static void op_copy(void *p)
{
    struct ctx *c = p;
    CK(cudaMemcpyAsync(c->dst, c->src, c->nbytes, cudaMemcpyDeviceToDevice, 0));
}
static void op_sum_det(void *p)
{
    struct ctx *c = p;
    CK(lsk_sum_f32(LSK_DET, c->x, c->n, c->y, c->ws, 0));
}
static void op_sum_atomic(void *p)
{
    struct ctx *c = p;
    CK(lsk_sum_f32(LSK_ATOMIC, c->x, c->n, c->y, c->ws, 0));
}
static void op_scatter_det(void *p)
{
    struct ctx *c = p;
    CK(lsk_scatter_add_f32(LSK_DET, c->x, c->dim, c->idx, c->rows, c->dim, c->emb, c->vocab, c->sws, 0, 0));
}
static void op_scatter_atomic(void *p)
{
    struct ctx *c = p;
    CK(lsk_scatter_add_f32(LSK_ATOMIC, c->x, c->dim, c->idx, c->rows, c->dim, c->emb, c->vocab, c->sws, 0, 0));
}
static void op_scatter_sorted(void *p)
{
    struct ctx *c = p;
    CK(lsk_scatter_add_sorted_f32(c->x, c->dim, c->rows, c->dim, c->emb, c->sws, 0));
}
static void op_outer_det(void *p)
{
    struct ctx *c = p;
    CK(lsk_outer_f32(LSK_DET, c->D, c->A, c->batch, c->out_rows, c->in_cols, c->W, 0, 0));
}
static void op_outer_atomic(void *p)
{
    struct ctx *c = p;
    CK(lsk_outer_f32(LSK_ATOMIC, c->D, c->A, c->batch, c->out_rows, c->in_cols, c->W, 0, 0));
}

static void print_pair(const char *name, const char *a, const char *b, float ma, float mb, const char *extra)
{
    printf("{\"bench\":\"kernels.%s\",\"%s_ms\":%.4f,\"%s_ms\":%.4f,\"ratio\":%.4f%s}\n", name, a, ma, b, mb, ma / mb,
           extra);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    struct ctx c;
    memset(&c, 0, sizeof(c));
    c.nbytes = (argc > 1 ? (size_t)atol(argv[1]) : 1024) << 20; /* MiB */
    char name[256] = "?";
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        snprintf(name, sizeof(name), "%s", prop.name);

    CK(cudaMalloc((void **)&c.src, c.nbytes + 256));
    CK(cudaMalloc((void **)&c.dst, c.nbytes + 256));
    CK(cudaMalloc((void **)&c.out, lsk_lsfp1_out_words(c.nbytes, 1) * sizeof(uint64_t)));
    CK(cudaMemset(c.src, 0x5a, c.nbytes));

    float ma, mb;
    char extra[256];
    time_pair(op_fp, op_copy, &c, 10, &ma, &mb);
    snprintf(extra, sizeof(extra),
             ",\"device\":\"%s\",\"bytes\":%zu,\"lsfp1_GBps\":%.1f,\"copy_GBps\":%.1f,\"lsfp1_vs_copy_speed\":%.3f",
             name, c.nbytes, c.nbytes / ma / 1e6, c.nbytes / mb / 1e6, mb / ma);
    print_pair("lsfp1_vs_memcpy", "lsfp1", "memcpy_d2d", ma, mb, extra);
    time_pair(op_fp_chunks, op_copy, &c, 10, &ma, &mb);
    snprintf(extra, sizeof(extra), ",\"bytes\":%zu,\"lsfp1_GBps\":%.1f,\"lsfp1_vs_copy_speed\":%.3f", c.nbytes,
             c.nbytes / ma / 1e6, mb / ma);
    print_pair("lsfp1_chunks_vs_memcpy", "lsfp1_chunks", "memcpy_d2d", ma, mb, extra);

    /* Reductions: a 256 Mi-float sum; an embedding gradient of 4 Mi rows x 64 into 1 Mi rows. */
    c.x = (float *)c.src;
    c.n = c.nbytes / sizeof(float);
    CK(cudaMalloc((void **)&c.y, sizeof(float)));
    CK(cudaMalloc(&c.ws, lsk_sum_ws_bytes(c.n)));
    time_pair(op_sum_det, op_sum_atomic, &c, 10, &ma, &mb);
    snprintf(extra, sizeof(extra), ",\"floats\":%zu,\"target_ratio_max\":1.02", c.n);
    print_pair("sum_det_vs_atomic", "det", "atomic", ma, mb, extra);

    c.rows = 4 << 20;
    c.dim = 64;
    c.vocab = 1 << 20;
    if ((size_t)c.rows * c.dim * sizeof(float) > c.nbytes)
        c.rows = (int)(c.nbytes / (c.dim * sizeof(float)));
    int32_t *h = malloc((size_t)c.rows * sizeof(int32_t));
    if (!h)
        return 1;
    for (int j = 0; j < c.rows; j++)
        h[j] = (int32_t)(fp_fmix64((uint64_t)j + 1) % (uint64_t)c.vocab);
    CK(cudaMalloc((void **)&c.idx, (size_t)c.rows * sizeof(int32_t)));
    CK(cudaMemcpy(c.idx, h, (size_t)c.rows * sizeof(int32_t), cudaMemcpyHostToDevice));
    free(h);
    CK(cudaMalloc((void **)&c.emb, (size_t)c.vocab * c.dim * sizeof(float)));
    CK(cudaMalloc(&c.sws, lsk_scatter_ws_bytes(c.rows, c.vocab)));
    time_pair(op_scatter_det, op_scatter_atomic, &c, 5, &ma, &mb);
    snprintf(extra, sizeof(extra), ",\"rows\":%d,\"dim\":%d,\"vocab\":%d,\"target_ratio_max\":1.02", c.rows, c.dim,
             c.vocab);
    print_pair("scatter_add_det_vs_atomic", "det", "atomic", ma, mb, extra);
    CK(lsk_scatter_sort(c.idx, c.rows, c.vocab, c.sws, 0)); /* the sort once, as an embedding's forward can */
    time_pair(op_scatter_sorted, op_scatter_atomic, &c, 5, &ma, &mb);
    print_pair("scatter_add_presorted_det_vs_atomic", "det_presorted", "atomic", ma, mb, extra);

    /* A weight gradient as the trainer computes it: batch 256, 1024 x 1024. */
    c.batch = 256;
    c.out_rows = 1024;
    c.in_cols = 1024;
    CK(cudaMalloc((void **)&c.D, (size_t)c.batch * c.out_rows * sizeof(float)));
    CK(cudaMalloc((void **)&c.A, (size_t)c.batch * c.in_cols * sizeof(float)));
    CK(cudaMalloc((void **)&c.W, (size_t)c.out_rows * c.in_cols * sizeof(float)));
    CK(cudaMemset(c.D, 0, (size_t)c.batch * c.out_rows * sizeof(float)));
    CK(cudaMemset(c.A, 0, (size_t)c.batch * c.in_cols * sizeof(float)));
    time_pair(op_outer_det, op_outer_atomic, &c, 10, &ma, &mb);
    snprintf(extra, sizeof(extra), ",\"batch\":%d,\"rows\":%d,\"cols\":%d", c.batch, c.out_rows, c.in_cols);
    print_pair("outer_det_vs_atomic", "det", "atomic", ma, mb, extra);
    return 0;
}
