/* tensor_device_test.c - ls_tensor_device's and ls_state_device's host logic, with or without a GPU: filtered records
 * launch nothing, misuse fails, a missing GPU is an error (not a crash), and with a GPU the recorded fingerprint is
 * ls_tensor's (ls_state's).
 * usage: tensor_device_test TRACE_DIR     (exit 0 when every check holds; one line per check) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define LOCKSTEP_CUDA 1
#include "include/lockstep.h"

static int fails;

static void expect(int cond, const char *what)
{
    printf("%s %s\n", cond ? "ok  " : "FAIL", what);
    if (!cond)
        fails++;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int ngpu = 0;
    int have_gpu = cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu > 0;
    static unsigned char host[4099];
    for (size_t i = 0; i < sizeof(host); i++)
        host[i] = (unsigned char)(i * 7 + 1);
    int64_t shape[1] = {(int64_t)sizeof(host)};
    void *dev = NULL;
    if (have_gpu && (cudaMalloc(&dev, sizeof(host)) != cudaSuccess ||
                     cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice) != cudaSuccess))
        return 2;
    const void *dptr = have_gpu ? dev : (const void *)0x1000; /* never dereferenced without a GPU */

    setenv("LOCKSTEP_TRACE_DIR", argv[1], 1);
    setenv("LOCKSTEP_RANK", "0", 1);
    unsetenv("LOCKSTEP_MODE");
    expect(ls_tensor_device("x", dptr, sizeof(host), LS_U8, 1, shape, 0) == -1, "before ls_init: -1");

    setenv("LOCKSTEP_TRACE", "metrics", 1);
    expect(ls_init() == 0, "ls_init (metrics)");
    ls_step_begin(1);
    expect(ls_tensor_device("x", dptr, sizeof(host), LS_U8, 1, shape, 0) == 0, "filtered out: 0, no GPU work");
    expect(ls_tensor_device("", dptr, sizeof(host), LS_U8, 1, shape, 0) == -1, "empty name: -1");
    expect(ls_tensor_device("x", NULL, 8, LS_U8, 1, shape, 0) == -1, "NULL data with bytes: -1");
    ls_step_end();
    ls_shutdown();

    setenv("LOCKSTEP_TRACE", "modules", 1);
    expect(ls_init() == 0, "ls_init (modules)");
    ls_step_begin(2);
    expect(ls_tensor_device("null", NULL, 8, LS_U8, 1, shape, 0) == -1, "NULL data at a kept level: -1");
    int rc = ls_tensor_device("x", dptr, sizeof(host), LS_U8, 1, shape, 0);
    if (have_gpu) {
        expect(rc == 0, "with a GPU: recorded");
        expect(ls_tensor("x", host, sizeof(host), LS_U8, 1, shape) == 0, "the host copy: recorded");
    } else {
        expect(rc == -1, "without a GPU: -1 and a warning, no crash");
    }
    ls_step_end();
    /* state entries on the device: a block must be open; with a GPU the entry is ls_state's fingerprint */
    expect(ls_state_device("s", NULL, 8, LS_U8, 1, shape, 0) == -1, "state entry, NULL data: -1");
    expect(ls_state_begin(2, LS_STATE_SAVED) == 0, "ls_state_begin");
    rc = ls_state_device("s", dptr, sizeof(host), LS_U8, 1, shape, 0);
    if (have_gpu) {
        expect(rc == 0, "with a GPU: state entry recorded");
        expect(ls_state("s", host, sizeof(host), LS_U8, 1, shape) == 0, "the host state entry: recorded");
    } else {
        expect(rc == -1, "state entry without a GPU: -1 and a warning, no crash");
    }
    expect(ls_state_end() == 0, "ls_state_end");
    /* replicas on the device: with a GPU the record is ls_replica's of the host copy */
    expect(ls_replica_device("r", NULL, 8, LS_U8, NULL, 0) == -1, "replica, NULL data: -1");
    rc = ls_replica_device("r", dptr, sizeof(host), LS_U8, NULL, 0);
    if (have_gpu) {
        expect(rc == 0, "with a GPU: replica recorded");
        expect(ls_replica("r", host, sizeof(host), LS_U8, NULL) == 0, "the host replica: recorded");
    } else {
        expect(rc == -1, "replica without a GPU: -1 and a warning, no crash");
    }
    ls_shutdown();

    setenv("LOCKSTEP_MODE", "off", 1);
    expect(ls_init() == 0, "ls_init (off)");
    expect(ls_tensor_device("x", dptr, sizeof(host), LS_U8, 1, shape, 0) == 0, "lockstep off: 0");
    ls_shutdown();
    printf("gpu %d\n", have_gpu);
    if (dev)
        cudaFree(dev);
    return fails ? 1 : 0;
}
