/* tensor_device.c - ls_tensor_device, ls_state_device and ls_replica_device: LSFP-1 of device memory on the GPU,
 * recorded through ls_record_fp, ls_state_fp or ls_replica_fp. */
#include "kernels/tensor_device.h"

#include <stdio.h>
#include <unistd.h>

#include "agent/mode.h"
#include "kernels/lsfp1_cuda.h"

static int warned, warned_null;

/* Each thread keeps a small device result buffer and a pinned host word
 * per device, so a record costs three launches, an 8-byte copy and a wait,
 * and no allocation. They live as long as the thread's process. */
#define TD_MAX_DEVICES 64
static __thread struct td_cache {
    uint64_t *d_out; /* lsk_lsfp1_out_words(n, 0) == 2 words */
    uint64_t *h_out; /* pinned */
} cache[TD_MAX_DEVICES];

/* device_fp - LSFP-1 of device memory through the calling thread's cache. */
static cudaError_t device_fp(const void *dptr, size_t nbytes, cudaStream_t stream, uint64_t *fp)
{
    int dev = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc != cudaSuccess)
        return rc;
    if (dev < 0 || dev >= TD_MAX_DEVICES) /* an unusual machine: no cache */
        return lsk_lsfp1_sync(dptr, nbytes, fp, NULL, stream);
    struct td_cache *c = &cache[dev];
    if (!c->d_out && (rc = cudaMalloc((void **)&c->d_out, 2 * sizeof(uint64_t))) != cudaSuccess)
        return rc;
    if (!c->h_out && (rc = cudaMallocHost((void **)&c->h_out, sizeof(uint64_t))) != cudaSuccess)
        return rc;
    if ((rc = lsk_lsfp1_async(dptr, nbytes, 0, c->d_out, stream)) != cudaSuccess ||
        (rc = cudaMemcpyAsync(c->h_out, c->d_out, sizeof(uint64_t), cudaMemcpyDeviceToHost, stream)) != cudaSuccess ||
        (rc = cudaStreamSynchronize(stream)) != cudaSuccess)
        return rc;
    *fp = *c->h_out;
    return cudaSuccess;
}

/* refused - 1 (with one warning per process) when `dptr` is NULL for a non-empty `what` (a device tensor, state
 * entry or replica): refused before anything is recorded. */
static int refused(const char *what, const char *name, const void *dptr, size_t nbytes)
{
    if (dptr || !nbytes)
        return 0;
    if (!__atomic_exchange_n(&warned_null, 1, __ATOMIC_RELAXED))
        fprintf(stderr,
                "lockstep: %s %s: NULL pointer with %zu bytes; not recorded\n"
                "  hint: pass its device pointer (or nbytes 0 for an empty one)\n",
                what, name ? name : "(null)", nbytes);
    return 1;
}

/* hashed - LSFP-1 of `what` `name` on the device into *fp; 0, or -1 with one warning per process (`hint` says
 * what is being lost). */
static int hashed(const char *what, const char *name, const void *dptr, size_t nbytes, cudaStream_t stream,
                  const char *hint, uint64_t *fp)
{
    cudaError_t rc = device_fp(dptr, nbytes, stream, fp);
    if (rc == cudaSuccess)
        return 0;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        fprintf(stderr,
                "lockstep: cannot fingerprint %s %s: CUDA error: %s\n  hint: %s; check the pointer and stream\n", what,
                name ? name : "(null)", cudaGetErrorString(rc), hint);
    return -1;
}

int lsk_tensor_device_at(ls_level level, const char *name, const void *dptr, size_t nbytes, ls_dtype dtype, int ndim,
                         const int64_t *shape, cudaStream_t stream)
{
    if (refused("device tensor", name, dptr, nbytes))
        return -1;
    /* Filtered out (or lockstep off, or not started): no GPU work. The call below then checks the arguments and
     * returns 0, or -1 outside ls_init..ls_shutdown, without recording. */
    if (!ls_enabled(level))
        return ls_record_fp(level, name, 0, nbytes, dtype, ndim, shape, 0, NULL) < 0 ? -1 : 0;
    uint64_t fp;
    if (hashed("device tensor", name, dptr, nbytes, stream, "records of device tensors are being lost", &fp) < 0)
        return -1;
    return ls_record_fp(level, name, fp, nbytes, dtype, ndim, shape, 0, NULL);
}

int ls_tensor_device(const char *name, const void *dptr, size_t nbytes, ls_dtype dtype, int ndim, const int64_t *shape,
                     cudaStream_t stream)
{
    return lsk_tensor_device_at(LS_LEVEL_MODULE, name, dptr, nbytes, dtype, ndim, shape, stream);
}

int ls_state_device(const char *name, const void *dptr, size_t nbytes, ls_dtype dtype, int ndim, const int64_t *shape,
                    cudaStream_t stream)
{
    uint64_t fp;
    if (refused("device state entry", name, dptr, nbytes) ||
        hashed("device state entry", name, dptr, nbytes, stream, "the state block is incomplete", &fp) < 0)
        return -1;
    return ls_state_fp(name, fp, nbytes, dtype, ndim, shape);
}

int ls_replica_device(const char *name, const void *dptr, size_t nbytes, ls_dtype dtype, const ls_comm *group,
                      cudaStream_t stream)
{
    if (refused("device replica", name, dptr, nbytes))
        return -1;
    /* Launch nothing for a replica that would not be kept (collectives filtered out, outside the consensus mode);
     * ls_replica_fp then checks the arguments and decides, as ls_replica does. */
    if (!ls_enabled(LS_LEVEL_COLLECTIVE) && !mode_consensus_env())
        return ls_replica_fp(name, 0, nbytes, dtype, group);
    uint64_t fp;
    if (hashed("device replica", name, dptr, nbytes, stream, "replicas on the GPU are not being checked", &fp) < 0)
        return -1;
    return ls_replica_fp(name, fp, nbytes, dtype, group);
}
