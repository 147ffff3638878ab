/* mpi_pmpi.c - an MPI program whose calls take a way in that liblockstep_mpi.so does not interpose (PMPI_* directly,
 * as another binding or a tool would): it initializes MPI, reduces three times, once more without blocking, and
 * records nothing.
 * usage: mpi_pmpi */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x = rank + 1, sum = 0;
    for (int i = 0; i < 3; i++)
        PMPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Request req;
    PMPI_Iallreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    PMPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == 0)
        printf("sum %g\n", sum);
    MPI_Finalize();
    return 0;
}
