// libsolver.cpp - libsolver.so: a C++ MPI library whose timing report goes through a file-static helper.
// The tier builds it with -g and strips it (strip --strip-unneeded), as distributions ship libraries: the
// helper then has no symbol at all, while Solver's methods stay in the dynamic symbol table.
#include "solver.h"

#include <cmath>
#include <cstdio>

namespace {
int verbose = 1;
}

// reduce_timings - the slowest and the total of every rank's seconds: run-specific values by nature.
// (noinline: at -O2 GCC would fold this one-caller helper into Solver::finish; in a real library such
// helpers serve several callers and stay functions of their own, with no symbol once stripped.)
__attribute__((noinline)) static void reduce_timings(MPI_Comm comm, int rank, int size, double seconds)
{
    double slowest = 0, total = 0;
    MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Allreduce(&seconds, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
    if (rank == 0 && verbose)
        std::printf("solver: slowest rank %.6f s, mean %.6f s\n", slowest, total / size);
}

Solver::Solver(MPI_Comm comm, int n) : comm_(comm), x_(n), residual_(0)
{
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    for (int i = 0; i < n; i++)
        x_[i] = std::sin(0.01 * (i + 1) * (rank_ + 1));
    started_ = MPI_Wtime();
}

void Solver::iterate(int steps)
{
    for (int s = 0; s < steps; s++) {
        double local = 0, global = 0;
        for (double &v : x_) {
            v = 0.5 * v + 0.25 * std::cos(v);
            local += v * v;
        }
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, comm_);
        residual_ = std::sqrt(global);
    }
}

void Solver::finish()
{
    reduce_timings(comm_, rank_, size_, MPI_Wtime() - started_);
    finished_ = true; // (work after the call: without it GCC turns the call into a jump, and Solver::finish
                      // leaves the stack before its helper runs)
}
