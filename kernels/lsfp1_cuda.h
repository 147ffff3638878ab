/* lsfp1_cuda.h - LSFP-1 over device memory: stream-ordered, asynchronous, bit-identical to common/lsfp1.c. */
#ifndef KERNELS_LSFP1_CUDA_H
#define KERNELS_LSFP1_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* lsk_lsfp1_out_words - how many uint64 a result buffer needs: the
 * fingerprint, then (with chunks) one partial per 1 MiB chunk. */
size_t lsk_lsfp1_out_words(size_t nbytes, int with_chunks);

/* lsk_lsfp1_async - enqueue LSFP-1 of device buffer `d_data` (nbytes, any
 * alignment) on `stream`. Writes out[0] = fingerprint and, when
 * `with_chunks`, out[1 + c] = chunk c's partial (fp_lsfp1_chunks' values).
 * `d_out` is device (or mapped pinned) memory of lsk_lsfp1_out_words
 * uint64; it is also the scratch space. Nothing is waited for: the values
 * are there once the stream reaches this point. Returns cudaSuccess or the
 * launch error. */
cudaError_t lsk_lsfp1_async(const void *d_data, size_t nbytes, int with_chunks, uint64_t *d_out, cudaStream_t stream);

/* lsk_lsfp1_sync - the same, waiting for the result: *fp and (when chunks
 * is not NULL) chunks[0 .. fp_chunk_count(nbytes)). Allocates its scratch
 * stream-ordered. Returns cudaSuccess or the first error. */
cudaError_t lsk_lsfp1_sync(const void *d_data, size_t nbytes, uint64_t *fp, uint64_t *chunks, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* KERNELS_LSFP1_CUDA_H */
