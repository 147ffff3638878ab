/* lsfp1.cu - LSFP-1 over device memory: tiles summed per block, chunk partials by integer atomics, one finish kernel.
 */
#include "kernels/lsfp1_cuda.h"

#include "kernels/lsfp1_dev.h"

#include <stdlib.h>

namespace
{

/* block_sum - the sum of every thread's `v`, valid in thread 0. Integer
 * addition: the order of the tree does not matter. */
__device__ unsigned long long block_sum(unsigned long long v, unsigned long long *sh)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    v = 0;
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? sh[lane] : 0;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
    }
    __syncthreads(); /* sh is reused by the next tile */
    return v;
}

/* ALIGN is the buffer's alignment: 16 (two words per load), 8 (one) or 1
 * (byte loads). Whole tiles inside the buffer take the wide loads; the last,
 * partial tile goes through the byte path shared with the host test. */
template <int ALIGN>
__global__ void __launch_bounds__(LSK_THREADS)
    tiles_kernel(const unsigned char *__restrict__ p, uint64_t nbytes, uint64_t ntiles,
                 unsigned long long *__restrict__ parts, int per_chunk)
{
    __shared__ unsigned long long sh[LSK_THREADS / 32];
    const uint64_t full_words = nbytes / 8;
    for (uint64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const uint64_t lo = tile * LSK_TILE_WORDS;
        unsigned long long acc = 0;
        if (ALIGN >= 8 && lo + LSK_TILE_WORDS <= full_words) {
            if (ALIGN == 16) {
                const ulonglong2 *q = reinterpret_cast<const ulonglong2 *>(p) + lo / 2;
#pragma unroll 4
                for (unsigned j = threadIdx.x; j < LSK_TILE_WORDS / 2; j += LSK_THREADS) {
                    ulonglong2 v = __ldcs(q + j);
                    uint64_t i = lo + 2 * (uint64_t)j;
                    acc += lsk_term(v.x, i) + lsk_term(v.y, i + 1);
                }
            } else {
                const unsigned long long *q = reinterpret_cast<const unsigned long long *>(p) + lo;
#pragma unroll 4
                for (unsigned j = threadIdx.x; j < LSK_TILE_WORDS; j += LSK_THREADS)
                    acc += lsk_term(__ldcs(q + j), lo + j);
            }
        } else {
            acc = lsk_tile_thread_acc(p, nbytes, tile, threadIdx.x, LSK_THREADS);
        }
        acc = block_sum(acc, sh);
        if (threadIdx.x == 0)
            atomicAdd(&parts[per_chunk ? lsk_tile_chunk(tile) : 0], acc);
    }
}

/* finish_kernel - out[0] = fp_finish(sum of the nparts partials at out+1). */
__global__ void __launch_bounds__(LSK_THREADS) finish_kernel(unsigned long long *out, uint64_t nparts, uint64_t nbytes)
{
    __shared__ unsigned long long sh[LSK_THREADS / 32];
    unsigned long long acc = 0;
    for (uint64_t i = threadIdx.x; i < nparts; i += LSK_THREADS)
        acc += out[1 + i];
    acc = block_sum(acc, sh);
    if (threadIdx.x == 0)
        out[0] = lsk_fmix64(acc ^ (nbytes * FP_LEN_KEY) ^ FP_DOMAIN);
}

/* grid_for - blocks for `ntiles` tiles: enough to fill the device, no more. */
unsigned grid_for(uint64_t ntiles)
{
    static int sms[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
        dev = 0;
    if (!sms[dev]) {
        int n = 0;
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
        sms[dev] = n > 0 ? n : 16;
    }
    uint64_t want = (uint64_t)sms[dev] * 8;
    return (unsigned)(ntiles < want ? ntiles : want);
}

} // namespace

extern "C" size_t lsk_lsfp1_out_words(size_t nbytes, int with_chunks)
{
    return 1 + (with_chunks ? fp_chunk_count(nbytes) : 1);
}

extern "C" cudaError_t lsk_lsfp1_async(const void *d_data, size_t nbytes, int with_chunks, uint64_t *d_out,
                                       cudaStream_t stream)
{
    const unsigned char *p = static_cast<const unsigned char *>(d_data);
    unsigned long long *out = reinterpret_cast<unsigned long long *>(d_out);
    uint64_t nparts = lsk_lsfp1_out_words(nbytes, with_chunks) - 1;
    uint64_t ntiles = lsk_tiles(nbytes);
    cudaError_t rc;

    if (nparts && (rc = cudaMemsetAsync(out + 1, 0, nparts * sizeof(uint64_t), stream)) != cudaSuccess)
        return rc;
    if (ntiles) {
        unsigned grid = grid_for(ntiles);
        uintptr_t a = reinterpret_cast<uintptr_t>(p);
        if (a % 16 == 0)
            tiles_kernel<16><<<grid, LSK_THREADS, 0, stream>>>(p, nbytes, ntiles, out + 1, with_chunks);
        else if (a % 8 == 0)
            tiles_kernel<8><<<grid, LSK_THREADS, 0, stream>>>(p, nbytes, ntiles, out + 1, with_chunks);
        else
            tiles_kernel<1><<<grid, LSK_THREADS, 0, stream>>>(p, nbytes, ntiles, out + 1, with_chunks);
        if ((rc = cudaGetLastError()) != cudaSuccess)
            return rc;
    }
    finish_kernel<<<1, LSK_THREADS, 0, stream>>>(out, nparts, nbytes);
    return cudaGetLastError();
}

extern "C" cudaError_t lsk_lsfp1_sync(const void *d_data, size_t nbytes, uint64_t *fp, uint64_t *chunks,
                                      cudaStream_t stream)
{
    size_t words = lsk_lsfp1_out_words(nbytes, chunks != NULL);
    uint64_t *d_out = NULL, *h_out = static_cast<uint64_t *>(malloc(words * sizeof(uint64_t)));
    cudaError_t rc = h_out ? cudaSuccess : cudaErrorMemoryAllocation;
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(reinterpret_cast<void **>(&d_out), words * sizeof(uint64_t), stream);
    if (rc == cudaSuccess) {
        rc = lsk_lsfp1_async(d_data, nbytes, chunks != NULL, d_out, stream);
        if (rc == cudaSuccess)
            rc = cudaMemcpyAsync(h_out, d_out, words * sizeof(uint64_t), cudaMemcpyDeviceToHost, stream);
        cudaError_t rc2 = cudaFreeAsync(d_out, stream);
        if (rc == cudaSuccess)
            rc = rc2;
        rc2 = cudaStreamSynchronize(stream);
        if (rc == cudaSuccess)
            rc = rc2;
    }
    if (rc == cudaSuccess) {
        *fp = h_out[0];
        for (size_t c = 0; chunks && c + 1 < words; c++)
            chunks[c] = h_out[1 + c];
    }
    free(h_out);
    return rc;
}
