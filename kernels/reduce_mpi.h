/* reduce_mpi.h - lockstep-train's gradient sum over MPI ranks: fixed rank order, or message-arrival order. */
#ifndef KERNELS_REDUCE_MPI_H
#define KERNELS_REDUCE_MPI_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

/* Pieces each rank sends in arrival-order mode: with two per rank even two
 * ranks give four summands, enough for the order to change the bits. */
#define RED_PIECES 2

/* red_sum_fixed - g := sum over ranks of g, added on rank 0 in rank order
 * (g_0 + g_1) + g_2 ... and broadcast, so every rank and every run gets
 * the same bits. `tmp` holds n floats. Returns 0, or -1 on an MPI error. */
int red_sum_fixed(float *g, size_t n, float *tmp, MPI_Comm comm);

/* red_sum_arrival - out := sum over every rank's RED_PIECES pieces
 * (pieces[k], n floats each), added on rank 0 in the order the messages
 * arrive (MPI_ANY_SOURCE), then broadcast. Each piece is sent after a delay
 * drawn from (run_seed, step, rank, piece), up to 8 slots of 200 us, so
 * runs with different seeds see different orders. On rank 0, order[] gets
 * the pieces' ids (rank * RED_PIECES + piece) in the order they were added
 * (world * RED_PIECES entries). `tmp` holds n floats. Returns 0 or -1. */
int red_sum_arrival(float *const *pieces, size_t n, float *out, float *tmp, uint64_t run_seed, int64_t step, int *order,
                    MPI_Comm comm);

/* red_run_seed - a seed that differs from run to run (time and pid on rank
 * 0, broadcast). */
uint64_t red_run_seed(MPI_Comm comm);

#endif /* KERNELS_REDUCE_MPI_H */
