/* tensor_device.h - recording device tensors: ls_tensor_device and its explicit-level form. */
#ifndef KERNELS_TENSOR_DEVICE_H
#define KERNELS_TENSOR_DEVICE_H

#ifndef LOCKSTEP_CUDA
#define LOCKSTEP_CUDA 1
#endif
#include "include/lockstep.h"

#ifdef __cplusplus
extern "C" {
#endif

/* lsk_tensor_device_at - ls_tensor_device at an explicit level. The
 * fingerprint is computed on the device, in `stream` (after the work already
 * queued there), and the call waits for that result only (16 bytes come
 * back, never the tensor). When the trace window filters the record out,
 * nothing is launched. Returns 0 when recorded or filtered out; -1 on a bad
 * argument, outside ls_init..ls_shutdown, or on a CUDA error (one warning
 * on stderr says which). */
LS_API int lsk_tensor_device_at(ls_level level, const char *name, const void *dptr, size_t nbytes, ls_dtype dtype,
                                int ndim, const int64_t *shape, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* KERNELS_TENSOR_DEVICE_H */
