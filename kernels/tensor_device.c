/* tensor_device.c - ls_tensor_device: LSFP-1 of a device tensor on the GPU, recorded through ls_record_fp. */
#include "kernels/tensor_device.h"

#include <stdio.h>
#include <unistd.h>

#include "kernels/lsfp1_cuda.h"

static int warned;

int lsk_tensor_device_at(ls_level level, const char *name, const void *dptr, size_t nbytes, ls_dtype dtype, int ndim,
                         const int64_t *shape, cudaStream_t stream)
{
    /* Filtered out (or lockstep off, or not started): no GPU work. The
     * call below then checks the arguments and returns 0, or -1 outside
     * ls_init..ls_shutdown, without recording. */
    if (!ls_enabled(level) || (!dptr && nbytes))
        return ls_record_fp(level, name, 0, nbytes, dtype, ndim, shape, 0, NULL) < 0 || (!dptr && nbytes) ? -1 : 0;
    uint64_t fp;
    cudaError_t rc = lsk_lsfp1_sync(dptr, nbytes, &fp, NULL, stream);
    if (rc != cudaSuccess) {
        if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
            fprintf(stderr, "lockstep: cannot fingerprint device tensor %s: CUDA error: %s\n"
                            "  hint: records of device tensors are being lost; check the pointer and stream\n",
                    name ? name : "(null)", cudaGetErrorString(rc));
        return -1;
    }
    return ls_record_fp(level, name, fp, nbytes, dtype, ndim, shape, 0, NULL);
}

int ls_tensor_device(const char *name, const void *dptr, size_t nbytes, ls_dtype dtype, int ndim,
                     const int64_t *shape, cudaStream_t stream)
{
    return lsk_tensor_device_at(LS_LEVEL_MODULE, name, dptr, nbytes, dtype, ndim, shape, stream);
}
