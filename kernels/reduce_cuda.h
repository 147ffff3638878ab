/* reduce_cuda.h - the reductions lockstep-train's GPU path uses, each deterministic (fixed order, no float atomics)
 * or atomic (float atomicAdd, the order the hardware happens to pick), chosen at run time. */
#ifndef KERNELS_REDUCE_CUDA_H
#define KERNELS_REDUCE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lsk_mode { LSK_DET = 0, LSK_ATOMIC = 1 } lsk_mode;

/* `rot` (atomic mode only) rotates which thread handles which row, so that
 * runs given different values really add in different orders. */

/* lsk_sum_ws_bytes - scratch lsk_sum_f32 needs for n floats. */
size_t lsk_sum_ws_bytes(size_t n);

/* lsk_sum_f32 - *d_out = the sum of d_x[0..n). Deterministic mode: a fixed
 * number of blocks (a function of n only) each add a fixed slice in a fixed
 * tree; the last block to finish adds the block sums in a fixed tree; one
 * launch. Atomic mode: the block sums are atomicAdd-ed. `d_ws` holds
 * lsk_sum_ws_bytes(n) bytes. */
cudaError_t lsk_sum_f32(lsk_mode mode, const float *d_x, size_t n, float *d_out, void *d_ws, cudaStream_t stream);

/* lsk_colsum_f32 - out[c] += sum over r of X[r * cols + c] (rows in
 * ascending order in deterministic mode): a bias gradient. */
cudaError_t lsk_colsum_f32(lsk_mode mode, const float *X, int rows, int cols, float *out, uint32_t rot,
                           cudaStream_t stream);

/* lsk_outer_f32 - dW[r * cols + c] += sum over s of D[s * rows + r] *
 * A[s * cols + c]: a weight gradient, summed over the batch. */
cudaError_t lsk_outer_f32(lsk_mode mode, const float *D, const float *A, int n, int rows, int cols, float *dW,
                          uint32_t rot, cudaStream_t stream);

/* lsk_scatter_ws_bytes - scratch lsk_scatter_add_f32 needs for n rows. */
size_t lsk_scatter_ws_bytes(int n, int vocab);

/* lsk_scatter_add_f32 - out[idx[j] * d + k] += src[j * ld + k] for j < n,
 * k < d: an embedding (index_add) gradient. Deterministic mode sorts the
 * row numbers by index (a stable radix sort) and adds each index's rows in
 * ascending j; atomic mode adds with atomicAdd. idx values must lie in
 * [0, vocab). `d_ws` holds lsk_scatter_ws_bytes(n, vocab) bytes. */
cudaError_t lsk_scatter_add_f32(lsk_mode mode, const float *src, int ld, const int32_t *idx, int n, int d, float *out,
                                int vocab, void *d_ws, uint32_t rot, cudaStream_t stream);

/* lsk_scatter_sort - the first half of the deterministic scatter-add: sort
 * the row numbers 0..n-1 by idx (stable) into `d_ws`. A caller whose
 * indices serve several scatter-adds (an embedding's forward pass knows them
 * before the backward pass) sorts once. */
cudaError_t lsk_scatter_sort(const int32_t *idx, int n, int vocab, void *d_ws, cudaStream_t stream);

/* lsk_scatter_add_sorted_f32 - the second half: out[idx[j] * d + k] +=
 * src[j * ld + k], each index's rows added in ascending j, with the order
 * lsk_scatter_sort left in `d_ws`. No atomics. */
cudaError_t lsk_scatter_add_sorted_f32(const float *src, int ld, int n, int d, float *out, const void *d_ws,
                                       cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* KERNELS_REDUCE_CUDA_H */
