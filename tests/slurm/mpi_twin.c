/* mpi_twin.c - the Slurm tier's MPI program: allreduces a fixed vector each step and records it through the public API.
 * MPI_TWIN_ABORT=R:S:C makes rank R call MPI_Abort(MPI_COMM_WORLD, C) at the start of step S.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "include/lockstep.h"

#define N 512

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 8;
    int rank = 0, size = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Under the SPANK plugin the agent is preloaded and already started; ls_init is then a no-op. */
    if (ls_init() != 0)
        fprintf(stderr, "rank %d: ls_init: %s\n", rank, ls_last_error());
    static double buf[N];
    int64_t shape[1] = {N};
    int abort_rank = -1, abort_step = -1, abort_code = 1;
    const char *ab = getenv("MPI_TWIN_ABORT");
    if (ab)
        sscanf(ab, "%d:%d:%d", &abort_rank, &abort_step, &abort_code);
    for (int s = 0; s < steps; s++) {
        ls_step_begin(s);
        if (rank == abort_rank && s == abort_step)
            MPI_Abort(MPI_COMM_WORLD, abort_code);
        for (int i = 0; i < N; i++)
            buf[i] = sin(0.001 * (rank * 7919 + s * 131 + i)) / (1 + i);
        MPI_Allreduce(MPI_IN_PLACE, buf, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        ls_tensor_at(LS_LEVEL_COLLECTIVE, "allreduce.out", buf, sizeof(buf), LS_F64, 1, shape);
        double loss = 0;
        for (int i = 0; i < N; i++)
            loss += buf[i] * buf[i];
        ls_metric("loss", loss);
        ls_step_end();
    }
    ls_shutdown();
    MPI_Finalize();
    if (rank == 0)
        printf("mpi_twin: %d ranks, %d steps\n", size, steps);
    return 0;
}
