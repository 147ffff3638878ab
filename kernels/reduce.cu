/* reduce.cu - deterministic (fixed-order) and atomic reductions: sum, column sum, outer product, scatter-add. */
#include "kernels/reduce_cuda.h"

#include <cub/device/device_radix_sort.cuh>

namespace
{

constexpr int kThreads = 256;
constexpr unsigned kMaxSumBlocks = 1024;

/* sum_blocks - how many blocks lsk_sum_f32 uses: a function of n alone, so
 * the same n is always cut the same way. */
unsigned sum_blocks(size_t n)
{
    size_t b = (n + kThreads * 16 - 1) / (kThreads * 16);
    return (unsigned)(b < 1 ? 1 : b > kMaxSumBlocks ? kMaxSumBlocks : b);
}

/* block_tree - the fixed-shape tree sum of one value per thread; thread 0
 * gets the total. */
__device__ float block_tree(float v, float *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s)
            sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

__global__ void __launch_bounds__(kThreads)
    sum_kernel(const float *__restrict__ x, size_t n, float *out, float *parts, unsigned *done, int atomic)
{
    __shared__ float sh[kThreads];
    __shared__ bool last;
    float acc = 0.0f;
    for (size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x; i < n; i += (size_t)gridDim.x * kThreads)
        acc += x[i];
    acc = block_tree(acc, sh);
    if (atomic) {
        if (threadIdx.x == 0)
            atomicAdd(out, acc);
        return;
    }
    if (threadIdx.x == 0) {
        parts[blockIdx.x] = acc;
        __threadfence();
        last = atomicInc(done, gridDim.x - 1) == gridDim.x - 1; /* wraps to 0 for the next call */
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    float p = 0.0f;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += kThreads)
        p += ((volatile float *)parts)[i];
    p = block_tree(p, sh);
    if (threadIdx.x == 0)
        *out = p;
}

__global__ void colsum_det_kernel(const float *__restrict__ X, int rows, int cols, float *out)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++)
        s += X[(size_t)r * cols + c];
    out[c] += s;
}

__global__ void colsum_atomic_kernel(const float *__restrict__ X, int rows, int cols, float *out, uint32_t rot)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)rows * cols)
        return;
    int r = (int)((t / cols + rot) % rows), c = (int)(t % cols);
    atomicAdd(&out[c], X[(size_t)r * cols + c]);
}

__global__ void outer_det_kernel(const float *__restrict__ D, const float *__restrict__ A, int n, int rows, int cols,
                                 float *dW)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)rows * cols)
        return;
    int r = (int)(t / cols), c = (int)(t % cols);
    float s = 0.0f;
    for (int k = 0; k < n; k++)
        s += D[(size_t)k * rows + r] * A[(size_t)k * cols + c];
    dW[t] += s;
}

__global__ void outer_atomic_kernel(const float *__restrict__ D, const float *__restrict__ A, int n, int rows, int cols,
                                    float *dW, uint32_t rot)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t rc = (size_t)rows * cols;
    if (t >= rc * n)
        return;
    int k = (int)((t / rc + rot) % n);
    size_t e = t % rc;
    int r = (int)(e / cols), c = (int)(e % cols);
    atomicAdd(&dW[e], D[(size_t)k * rows + r] * A[(size_t)k * cols + c]);
}

__global__ void iota_kernel(int32_t *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = i;
}

/* scatter_det_kernel - one warp per sorted position; the warp at the start
 * of an index's segment adds that index's rows in ascending row order, its
 * lanes covering the columns. The other warps return at once. */
__global__ void __launch_bounds__(kThreads)
    scatter_det_kernel(const float *__restrict__ src, int ld, const int32_t *__restrict__ keys,
                       const int32_t *__restrict__ rows, int n, int d, float *out)
{
    int i = (int)(((size_t)blockIdx.x * kThreads + threadIdx.x) / 32), lane = threadIdx.x & 31;
    if (i >= n || (i > 0 && keys[i] == keys[i - 1]))
        return;
    int key = keys[i], end = i + 1;
    while (end < n && keys[end] == key)
        end++;
    for (int k = lane; k < d; k += 32) {
        float s = 0.0f;
        for (int j = i; j < end; j++)
            s += src[(size_t)rows[j] * ld + k];
        out[(size_t)key * d + k] += s;
    }
}

__global__ void scatter_atomic_kernel(const float *__restrict__ src, int ld, const int32_t *__restrict__ idx, int n,
                                      int d, float *out, uint32_t rot)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)n * d)
        return;
    int j = (int)((t / d + rot) % n), k = (int)(t % d);
    atomicAdd(&out[(size_t)idx[j] * d + k], src[(size_t)j * ld + k]);
}

int key_bits(int vocab)
{
    int b = 1;
    while (b < 31 && (1 << b) < vocab)
        b++;
    return b;
}

size_t align256(size_t x)
{
    return (x + 255) & ~(size_t)255;
}

unsigned blocks_for(size_t n, int threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

} // namespace

extern "C" size_t lsk_sum_ws_bytes(size_t n)
{
    return align256(sum_blocks(n) * sizeof(float)) + 256;
}

extern "C" cudaError_t lsk_sum_f32(lsk_mode mode, const float *d_x, size_t n, float *d_out, void *d_ws,
                                   cudaStream_t stream)
{
    unsigned g = sum_blocks(n);
    float *parts = static_cast<float *>(d_ws);
    unsigned *done = reinterpret_cast<unsigned *>(static_cast<char *>(d_ws) + align256(g * sizeof(float)));
    cudaError_t rc = mode == LSK_ATOMIC ? cudaMemsetAsync(d_out, 0, sizeof(float), stream)
                                        : cudaMemsetAsync(done, 0, sizeof(unsigned), stream);
    if (rc != cudaSuccess)
        return rc;
    sum_kernel<<<g, kThreads, 0, stream>>>(d_x, n, d_out, parts, done, mode == LSK_ATOMIC);
    return cudaGetLastError();
}

extern "C" cudaError_t lsk_colsum_f32(lsk_mode mode, const float *X, int rows, int cols, float *out, uint32_t rot,
                                      cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0)
        return cudaSuccess;
    if (mode == LSK_ATOMIC)
        colsum_atomic_kernel<<<blocks_for((size_t)rows * cols, kThreads), kThreads, 0, stream>>>(X, rows, cols, out,
                                                                                                 rot);
    else
        colsum_det_kernel<<<blocks_for((size_t)cols, 128), 128, 0, stream>>>(X, rows, cols, out);
    return cudaGetLastError();
}

extern "C" cudaError_t lsk_outer_f32(lsk_mode mode, const float *D, const float *A, int n, int rows, int cols,
                                     float *dW, uint32_t rot, cudaStream_t stream)
{
    if (n <= 0 || rows <= 0 || cols <= 0)
        return cudaSuccess;
    size_t rc = (size_t)rows * cols;
    if (mode == LSK_ATOMIC)
        outer_atomic_kernel<<<blocks_for(rc * n, kThreads), kThreads, 0, stream>>>(D, A, n, rows, cols, dW, rot);
    else
        outer_det_kernel<<<blocks_for(rc, kThreads), kThreads, 0, stream>>>(D, A, n, rows, cols, dW);
    return cudaGetLastError();
}

extern "C" size_t lsk_scatter_ws_bytes(int n, int vocab)
{
    size_t temp = 0;
    cub::DeviceRadixSort::SortPairs(nullptr, temp, (const int32_t *)nullptr, (int32_t *)nullptr,
                                    (const int32_t *)nullptr, (int32_t *)nullptr, n, 0, key_bits(vocab));
    return 3 * align256((size_t)n * sizeof(int32_t)) + align256(temp);
}

/* scatter_parts - the workspace's pieces. */
static void scatter_parts(void *d_ws, int n, int32_t **keys, int32_t **rows_in, int32_t **rows, void **temp)
{
    char *ws = static_cast<char *>(d_ws);
    size_t a = align256((size_t)n * sizeof(int32_t));
    *keys = reinterpret_cast<int32_t *>(ws);
    *rows_in = reinterpret_cast<int32_t *>(ws + a);
    *rows = reinterpret_cast<int32_t *>(ws + 2 * a);
    *temp = ws + 3 * a;
}

extern "C" cudaError_t lsk_scatter_sort(const int32_t *idx, int n, int vocab, void *d_ws, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    int32_t *keys, *rows_in, *rows;
    void *temp;
    scatter_parts(d_ws, n, &keys, &rows_in, &rows, &temp);
    size_t temp_bytes = lsk_scatter_ws_bytes(n, vocab) - 3 * align256((size_t)n * sizeof(int32_t));
    iota_kernel<<<blocks_for((size_t)n, kThreads), kThreads, 0, stream>>>(rows_in, n);
    return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, idx, keys, rows_in, rows, n, 0, key_bits(vocab), stream);
}

extern "C" cudaError_t lsk_scatter_add_sorted_f32(const float *src, int ld, int n, int d, float *out, const void *d_ws,
                                                  cudaStream_t stream)
{
    if (n <= 0 || d <= 0)
        return cudaSuccess;
    int32_t *keys, *rows_in, *rows;
    void *temp;
    scatter_parts(const_cast<void *>(d_ws), n, &keys, &rows_in, &rows, &temp);
    scatter_det_kernel<<<blocks_for((size_t)n * 32, kThreads), kThreads, 0, stream>>>(src, ld, keys, rows, n, d, out);
    return cudaGetLastError();
}

extern "C" cudaError_t lsk_scatter_add_f32(lsk_mode mode, const float *src, int ld, const int32_t *idx, int n, int d,
                                           float *out, int vocab, void *d_ws, uint32_t rot, cudaStream_t stream)
{
    if (n <= 0 || d <= 0)
        return cudaSuccess;
    if (mode == LSK_ATOMIC) {
        scatter_atomic_kernel<<<blocks_for((size_t)n * d, kThreads), kThreads, 0, stream>>>(src, ld, idx, n, d, out,
                                                                                            rot);
        return cudaGetLastError();
    }
    cudaError_t rc = lsk_scatter_sort(idx, n, vocab, d_ws, stream);
    return rc != cudaSuccess ? rc : lsk_scatter_add_sorted_f32(src, ld, n, d, out, d_ws, stream);
}
