// solver.cpp - an unmodified C++ MPI application (no Lockstep calls) that uses libsolver.so and ends, as
// real codes do, by reducing its timings - here inside the stripped library, from a static helper.
// usage: solver [STEPS] [N]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "solver.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int steps = argc > 1 ? std::atoi(argv[1]) : 20, n = argc > 2 ? std::atoi(argv[2]) : 1000, rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    {
        Solver s(MPI_COMM_WORLD, n);
        s.iterate(steps);
        if (rank == 0)
            std::printf("solver: %d steps, residual %.17g\n", steps, s.residual());
        s.finish();
    }
    MPI_Finalize();
    return 0;
}
