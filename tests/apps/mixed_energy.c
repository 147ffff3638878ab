/* mixed_energy.c - the C half of tests/apps/mixed.f90: an energy summed with the C MPI API, called from Fortran. */
#include <mpi.h>

double mixed_energy(const double *x, int n, MPI_Fint fcomm);

/* mixed_energy - the sum over every rank of x[0..n) squared, on the Fortran communicator `fcomm`. */
double mixed_energy(const double *x, int n, MPI_Fint fcomm)
{
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    double local = 0, total = 0;
    for (int i = 0; i < n; i++)
        local += x[i] * x[i];
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
    return total;
}
