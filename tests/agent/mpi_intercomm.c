/* mpi_intercomm.c - an unmodified MPI program (no Lockstep calls) whose collectives run on an intercommunicator:
 * MPI_COMM_WORLD split into the even and the odd ranks, joined by MPI_Intercomm_create. Each iteration, on the
 * intercommunicator: an MPI_Allreduce (each group receives the other group's sum), an MPI_Allgather (each group
 * receives the other group's blocks, into a buffer as long as the other group's count), and an MPI_Bcast from rank 0
 * of the even group (MPI_ROOT there, MPI_PROC_NULL on the other even ranks, whose buffers MPI leaves as they are),
 * then the same reduction on MPI_COMM_WORLD. The copies an intercommunicator's collectives leave differ across its
 * local group by design: a root's buffer against the untouched ones, a buffer the other group's count fills.
 * usage: mpi_intercomm [ITERATIONS] (4 ranks or more, an even number) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 64 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, steps = argc > 1 ? atoi(argv[1]) : 10;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 4 || size % 2) {
        if (rank == 0)
            fprintf(stderr, "mpi_intercomm: run on an even number of ranks, 4 or more\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int color = rank % 2, local_rank;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    MPI_Comm_rank(half, &local_rank);
    /* the other group's leader is world rank 1 (for the even group) or 0 (for the odd one) */
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color ? 0 : 1, 17, &inter);
    int remote = 0;
    MPI_Comm_remote_size(inter, &remote);
    double a[N], sum[N], all[N * 8], b[N];
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < N; i++) {
            a[i] = rank * 0.5 + s + i * 1e-3;
            b[i] = color ? -1.0 - rank : 100.0 + s + rank; /* each rank's own bytes before the broadcast */
        }
        MPI_Allreduce(a, sum, N, MPI_DOUBLE, MPI_SUM, inter);
        MPI_Allgather(a, N / 8, MPI_DOUBLE, all, N / 8, MPI_DOUBLE, inter);
        int root = color ? 0 : (local_rank == 0 ? MPI_ROOT : MPI_PROC_NULL);
        MPI_Bcast(b, N, MPI_DOUBLE, root, inter);
        MPI_Allreduce(MPI_IN_PLACE, a, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("mpi_intercomm: %d ranks, %d steps, remote group of %d, a[0]=%.17g\n", size, steps, remote, a[0]);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
