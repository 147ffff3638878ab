/* mpi_dtypes.c - an unmodified MPI program that frees a derived datatype and builds another, which MPI
 * usually hands the same handle: the agent must fingerprint each call with the type it was given. It prints
 * "expect <occurrence> <fp>" for every MPI_Bcast, from its own packing and its own LSFP-1 (docs/design.md),
 * which the agent tier compares with the trace. A broadcast between MPI_Pcontrol(0) and MPI_Pcontrol(1) must
 * leave no record. */
#include <inttypes.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint64_t fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* lsfp1 - the spec, word by word (8-byte words, the last one zero-padded). */
static uint64_t lsfp1(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t acc = 0;
    for (size_t i = 0; i * 8 < n; i++) {
        uint64_t w = 0;
        memcpy(&w, p + i * 8, n - i * 8 < 8 ? n - i * 8 : 8);
        acc += fmix64(w + (i + 1) * 0x9e3779b97f4a7c15ULL);
    }
    return fmix64(acc ^ (n * 0xc2b2ae3d27d4eb4fULL) ^ 0x4c53465031000000ULL);
}

enum { N = 1024 };

/* bcast_strided - broadcast every `stride`-th double of a through a vector type, print the expected fp, and
 * free the type. */
static MPI_Datatype bcast_strided(double *a, int stride, int occ)
{
    MPI_Datatype t;
    if (stride == 1)
        MPI_Type_contiguous(N, MPI_DOUBLE, &t);
    else
        MPI_Type_vector(N / stride, 1, stride, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    MPI_Bcast(a, 1, t, 0, MPI_COMM_WORLD);
    double packed[N];
    int n = 0;
    for (int i = 0; i < N; i += stride)
        packed[n++] = a[i];
    printf("expect %d %016" PRIx64 " %zu\n", occ, lsfp1(packed, (size_t)n * sizeof(double)),
           (size_t)n * sizeof(double));
    MPI_Datatype handle = t;
    MPI_Type_free(&t);
    return handle;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static double a[N];
    for (int i = 0; i < N; i++)
        a[i] = i * 0.25 + 1.0 / (i + 1);
    /* Contiguous, then holes, then contiguous again: a stale entry for a reused handle would hash the wrong
     * bytes (a contiguous type's size over a strided buffer, or the other way round). */
    MPI_Datatype h[4];
    h[0] = bcast_strided(a, 1, 0);
    h[1] = bcast_strided(a, 2, 1);
    h[2] = bcast_strided(a, 1, 2);
    h[3] = bcast_strided(a, 4, 3);
    int reused = 0;
    for (int i = 1; i < 4; i++)
        reused += h[i] == h[i - 1];
    printf("handles reused: %d of 3\n", reused);
    /* MPI_Pcontrol(0) pauses the recording: this broadcast leaves no record and takes no occurrence */
    MPI_Pcontrol(0);
    MPI_Bcast(a, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Pcontrol(1);
    bcast_strided(a, 1, 4);
    MPI_Finalize();
    return 0;
}
