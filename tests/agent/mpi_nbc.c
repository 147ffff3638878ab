/* mpi_nbc.c - an unmodified MPI program (no Lockstep calls) whose collectives are nonblocking: each iteration starts
 * an MPI_Iallreduce, an MPI_Ibcast of a type with holes (freed at once), an MPI_Iallgather and, on a duplicate of
 * MPI_COMM_WORLD, an MPI_Iallgatherv, and completes them in an order that depends on the rank (MPI_Waitall, MPI_Wait
 * in reverse, MPI_Testany polls, MPI_Waitsome). Then a small MPI_Iallreduce stays open across an MPI_Reduce (which
 * opens a step under LOCKSTEP_STEP_ON=mpi.reduce) and is completed after it, by MPI_Wait or MPI_Test polls.
 * With "late": rank 0 starts two MPI_Iallreduce and then sends to rank 1, which starts its own only after receiving
 * (a legal order; under LOCKSTEP_STEP_ON=mpi.iallreduce rank 0's second start opens a step while its first is open,
 * and that one cannot complete before rank 1 receives).
 * usage: mpi_nbc [ITERATIONS [late]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 1024 };

/* complete - the four requests, in this rank's way. */
static void complete(int way, MPI_Request r[4])
{
    switch (way) {
    case 0: MPI_Waitall(4, r, MPI_STATUSES_IGNORE); break;
    case 1:
        for (int k = 3; k >= 0; k--)
            MPI_Wait(&r[k], MPI_STATUS_IGNORE);
        break;
    case 2:
        for (int left = 4; left > 0;) {
            int idx, flag = 0;
            MPI_Testany(4, r, &idx, &flag, MPI_STATUS_IGNORE);
            if (flag && idx != MPI_UNDEFINED)
                left--;
            else if (flag)
                break;
        }
        break;
    default:
        for (;;) {
            int out, idx[4];
            MPI_Waitsome(4, r, &out, idx, MPI_STATUSES_IGNORE);
            if (out == MPI_UNDEFINED)
                break;
        }
    }
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 2 && strcmp(argv[2], "late") == 0) {
        int x = rank + 1, y = 0, z = 0, token = 7;
        MPI_Request rl[2];
        if (rank == 1)
            MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rl[0]);
        MPI_Iallreduce(&x, &z, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rl[1]);
        if (rank == 0 && size > 1)
            MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Waitall(2, rl, MPI_STATUSES_IGNORE);
        if (rank == 0)
            printf("mpi_nbc late: %d ranks, sum %d\n", size, y);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    double *a = malloc(sizeof(double) * N), *b = malloc(sizeof(double) * N), *c = malloc(sizeof(double) * N);
    double *g = malloc(sizeof(double) * N), *gv = malloc(sizeof(double) * N);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) {
        counts[i] = N / size - i;
        displs[i] = i * (N / size);
    }
    for (int i = 0; i < N; i++) {
        a[i] = (rank + 1) * 0.25 + i * 1e-3;
        c[i] = rank == 0 ? i * 0.5 : -1.0;
    }
    double sum = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Request r[4];
        MPI_Datatype every_other; /* freed while the broadcast is open: MPI keeps it until completion */
        MPI_Type_vector(N / 2, 1, 2, MPI_DOUBLE, &every_other);
        MPI_Type_commit(&every_other);
        MPI_Iallreduce(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[0]);
        MPI_Ibcast(c, 1, every_other, it % size, MPI_COMM_WORLD, &r[1]);
        MPI_Type_free(&every_other);
        MPI_Iallgather(a, N / size, MPI_DOUBLE, g, N / size, MPI_DOUBLE, MPI_COMM_WORLD, &r[2]);
        MPI_Iallgatherv(a, counts[rank], MPI_DOUBLE, gv, counts, displs, MPI_DOUBLE, dup, &r[3]);
        complete((rank + it) % 4, r);
        for (int i = 0; i < N; i++)
            a[i] = b[i] / size + g[i] * 1e-3 + c[i] * 1e-6;
        /* open across a step change */
        int x = rank + it, y = 0;
        MPI_Request rs;
        MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rs);
        MPI_Reduce(a, b, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank % 2) {
            MPI_Wait(&rs, MPI_STATUS_IGNORE);
        } else {
            int flag = 0;
            while (!flag)
                MPI_Test(&rs, &flag, MPI_STATUS_IGNORE);
        }
        sum += y;
    }
    if (rank == 0)
        printf("mpi_nbc: %d ranks, %d iterations, a[0]=%.17g, sum %.0f\n", size, iters, a[0], sum);
    free(a);
    free(b);
    free(c);
    free(g);
    free(gv);
    free(counts);
    free(displs);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
