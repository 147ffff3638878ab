/* nccl_allreduce.c - an unmodified single-process NCCL program for the agent's GPU check: allreduce, broadcast,
 * reduce-scatter and allgather over every visible GPU (one rank per GPU), a group of send/recv on two or more;
 * writes GPU 0's allreduce output to OUT so `lockstep fp OUT` can be compared with the recorded fingerprint.
 * With FAULT (a step, from 0), bit 12 of GPU 0's first input float is flipped before that step's allreduce, as a
 * corrupted buffer would be.
 * usage: nccl_allreduce OUT [STEPS [FAULT]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        if ((x) != 0) {                                                                                                \
            fprintf(stderr, "nccl_allreduce: %s failed\n", #x);                                                        \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: nccl_allreduce OUT [STEPS [FAULT]]\n");
        return 2;
    }
    int steps = argc > 2 ? atoi(argv[2]) : 3, fault = argc > 3 ? atoi(argv[3]) : -1, ndev = 0;
    CHECK(cudaGetDeviceCount(&ndev));
    if (ndev > 8)
        ndev = 8;
    enum { N = 1 << 20 };
    ncclComm_t comms[8];
    int devs[8];
    float *in[8], *out[8];
    cudaStream_t st[8];
    for (int i = 0; i < ndev; i++)
        devs[i] = i;
    /* one communicator over the GPUs, as a program of one process per GPU makes it: a unique id, then
     * ncclCommInitRank for each (in a group, since this one process initialises them all) */
    ncclUniqueId id;
    CHECK(ncclGetUniqueId(&id));
    CHECK(ncclGroupStart());
    for (int i = 0; i < ndev; i++) {
        CHECK(cudaSetDevice(devs[i]));
        CHECK(ncclCommInitRank(&comms[i], ndev, id, i));
    }
    CHECK(ncclGroupEnd());
    float *h = malloc(sizeof(float) * N);
    for (int i = 0; i < ndev; i++) {
        for (int k = 0; k < N; k++)
            h[k] = (float)((k * 7 + i * 13) % 1000) * 0.001f;
        CHECK(cudaSetDevice(i));
        CHECK(cudaMalloc((void **)&in[i], sizeof(float) * N));
        CHECK(cudaMalloc((void **)&out[i], sizeof(float) * N));
        CHECK(cudaStreamCreate(&st[i]));
        CHECK(cudaMemcpy(in[i], h, sizeof(float) * N, cudaMemcpyHostToDevice));
    }
    for (int s = 0; s < steps; s++) {
        if (s == fault) {
            uint32_t v;
            CHECK(cudaSetDevice(0));
            CHECK(cudaStreamSynchronize(st[0]));
            CHECK(cudaMemcpy(&v, in[0], sizeof(v), cudaMemcpyDeviceToHost));
            v ^= 1u << 12;
            CHECK(cudaMemcpy(in[0], &v, sizeof(v), cudaMemcpyHostToDevice));
        }
        CHECK(ncclGroupStart());
        for (int i = 0; i < ndev; i++)
            CHECK(ncclAllReduce(in[i], out[i], N, ncclFloat, ncclSum, comms[i], st[i]));
        CHECK(ncclGroupEnd());
        CHECK(ncclGroupStart());
        for (int i = 0; i < ndev; i++)
            CHECK(ncclBroadcast(out[i], in[i], N, ncclFloat, 0, comms[i], st[i]));
        for (int i = 0; i < ndev; i++)
            CHECK(ncclReduceScatter(in[i], out[i], N / ndev, ncclFloat, ncclSum, comms[i], st[i]));
        for (int i = 0; i < ndev; i++)
            CHECK(ncclAllGather(out[i], in[i], N / ndev, ncclFloat, comms[i], st[i]));
        CHECK(ncclGroupEnd());
        if (ndev >= 2) {
            CHECK(ncclGroupStart());
            for (int i = 0; i < ndev; i++) {
                CHECK(ncclSend(in[i], 1024, ncclFloat, (i + 1) % ndev, comms[i], st[i]));
                CHECK(ncclRecv(out[i], 1024, ncclFloat, (i + ndev - 1) % ndev, comms[i], st[i]));
            }
            CHECK(ncclGroupEnd());
        }
    }
    /* the last allreduce's output on GPU 0, for `lockstep fp` */
    CHECK(ncclGroupStart());
    for (int i = 0; i < ndev; i++)
        CHECK(ncclAllReduce(in[i], out[i], N, ncclFloat, ncclSum, comms[i], st[i]));
    CHECK(ncclGroupEnd());
    for (int i = 0; i < ndev; i++) {
        CHECK(cudaSetDevice(i));
        CHECK(cudaStreamSynchronize(st[i]));
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaMemcpy(h, out[0], sizeof(float) * N, cudaMemcpyDeviceToHost));
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(h, sizeof(float), N, f) != N || fclose(f) != 0)
        return 1;
    for (int i = 0; i < ndev; i++)
        ncclCommDestroy(comms[i]);
    printf("nccl_allreduce: %d GPU(s), %d steps\n", ndev, steps);
    free(h);
    return 0;
}
