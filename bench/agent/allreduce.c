/* allreduce.c - bench/agent's workload: an unmodified MPI program that does little but MPI_Allreduce.
 *
 * usage: allreduce ITERS COUNT [BLOCK]   prints, on rank 0: "<seconds of the timed loop> <on> <off>"
 * With BLOCK > 0 the loop runs in blocks of BLOCK calls that alternate recording on and off (blocks.h), and
 * <on> and <off> are the microseconds per iteration in each half. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench/agent/blocks.h"

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    int count = argc > 2 ? atoi(argv[2]) : 16384;
    int block = argc > 3 ? atoi(argv[3]) : 0;
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    float *in = malloc(sizeof(float) * (size_t)count), *out = malloc(sizeof(float) * (size_t)count);
    for (int i = 0; i < count; i++)
        in[i] = (float)((rank * 131 + i * 7) % 1000) * 0.001f;
    /* One warm-up call: connections, and the agent's one-time start (libcurl, spool, thread), happen here; the
     * pause lets the start's background work (the manifest hashes every mapped library) finish, as a job's
     * own setup would, so the loop measures the steady state. */
    MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    usleep(300000);
    MPI_Barrier(MPI_COMM_WORLD);
    bench_blocks k = {.size = block};
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        blocks_tick(&k, it);
        MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        in[it % count] = out[(it * 13) % count] * 0.5f;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    blocks_end(&k, iters, t1);
    if (rank == 0)
        printf("%.6f %.4f %.4f\n", t1 - t0, blocks_us(&k, 1), blocks_us(&k, 0));
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
