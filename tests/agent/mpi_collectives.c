/* mpi_collectives.c - an unmodified MPI program (no Lockstep calls) that exercises every interposed collective. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { N = 1000 };
    double *a = malloc(sizeof(double) * N * size), *b = malloc(sizeof(double) * N * size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) {
        counts[i] = N / size;
        displs[i] = i * (N / size);
    }
    for (int i = 0; i < N * size; i++)
        a[i] = (rank + 1) * 0.1 + i * 1e-3;
    MPI_Datatype every_other; /* a type with holes: the agent packs it before hashing */
    MPI_Type_vector(N / 2, 1, 2, MPI_DOUBLE, &every_other);
    MPI_Type_commit(&every_other);
    for (int s = 0; s < steps; s++) {
        MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Reduce(a, b, N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Bcast(b, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Bcast(a, 1, every_other, 0, MPI_COMM_WORLD);
        MPI_Allgather(a, N / size, MPI_DOUBLE, b, N / size, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Allgatherv(a, N / size, MPI_DOUBLE, b, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Reduce_scatter(a, b, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Reduce_scatter_block(a, b, N / size, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Alltoall(a, N / size, MPI_DOUBLE, b, N / size, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Alltoallv(a, counts, displs, MPI_DOUBLE, b, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
        int x = rank * 10 + s, sum = 0;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, a, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (size > 1) { /* a ring of point-to-point messages */
            double out = a[s], in = 0;
            MPI_Sendrecv(&out, 1, MPI_DOUBLE, (rank + 1) % size, 7, &in, 1, MPI_DOUBLE, (rank + size - 1) % size, 7,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            a[0] += in;
        }
    }
    MPI_Type_free(&every_other);
    if (rank == 0)
        printf("mpi_collectives: %d ranks, %d steps, a[0]=%.17g\n", size, steps, a[0]);
    free(a);
    free(b);
    free(counts);
    free(displs);
    MPI_Finalize();
    return 0;
}
