// solver.h - the interface of libsolver.so, a small C++ MPI library (shipped stripped) used by tests/apps/solver.cpp.
#ifndef TESTS_APPS_SOLVER_H
#define TESTS_APPS_SOLVER_H

#include <mpi.h>

#include <vector>

class Solver
{
  public:
    Solver(MPI_Comm comm, int n);
    // iterate - `steps` conjugate-gradient-like sweeps, each ending in an MPI_Allreduce of the dot product.
    void iterate(int steps);
    // finish - reduce the run's timings to rank 0 and print them (through a static helper of the library).
    void finish();
    double residual() const
    {
        return residual_;
    }

  private:
    MPI_Comm comm_;
    int rank_, size_;
    std::vector<double> x_;
    double residual_, started_;
    bool finished_ = false;
};

#endif
