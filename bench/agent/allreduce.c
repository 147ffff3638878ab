/* allreduce.c - bench/agent's workload: an unmodified MPI program that does little but MPI_Allreduce. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    int count = argc > 2 ? atoi(argv[2]) : 16384;
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    float *in = malloc(sizeof(float) * (size_t)count), *out = malloc(sizeof(float) * (size_t)count);
    for (int i = 0; i < count; i++)
        in[i] = (float)((rank * 131 + i * 7) % 1000) * 0.001f;
    /* One warm-up call: connections, and the agent's one-time start (libcurl, spool, thread), happen here. */
    MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        in[it % count] = out[(it * 13) % count] * 0.5f;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        printf("%.6f\n", t);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
