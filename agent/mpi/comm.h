/* comm.h - which world ranks an MPI communicator spans, computed once per communicator and kept on it.
 *
 * The answer is cached as an MPI attribute of the communicator (MPI_Comm_create_keyval): MPI drops it with the
 * communicator however it is freed (MPI_Comm_free from C or Fortran, MPI_Finalize), so a handle reused for a new
 * communicator never reads an old answer. Never aborts, never blocks the job: when MPI refuses (a call before
 * MPI_Init, an implementation without a symbol) the communicator is simply not recorded. */
#ifndef AGENT_MPI_COMM_H
#define AGENT_MPI_COMM_H

#include <mpi.h>

#include "include/lockstep.h"

/* comm_of - `comm` as a record carries it: its local group's size and the world ranks of its members in its own
 * rank order (out->world_ranks borrowed from the cache, valid while the communicator lives). Returns 0, or -1 when
 * it is not known (then *out says nothing). */
int comm_of(MPI_Comm comm, ls_comm *out);

#endif /* AGENT_MPI_COMM_H */
