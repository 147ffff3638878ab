/* comm.h - which world ranks an MPI communicator spans, computed once per communicator and kept on it.
 *
 * The answer is cached as an MPI attribute of the communicator (MPI_Comm_create_keyval): MPI drops it with the
 * communicator however it is freed (MPI_Comm_free from C or Fortran, MPI_Finalize), so a handle reused for a new
 * communicator never reads an old answer. Never aborts, never blocks the job: when MPI refuses (a call before
 * MPI_Init, an implementation without a symbol) the communicator is simply not recorded. */
#ifndef AGENT_MPI_COMM_H
#define AGENT_MPI_COMM_H

#include <mpi.h>
#include <stdint.h>

#include "include/lockstep.h"

/* comm_of - `comm` as a record carries it: its local group's size and the world ranks of its members in its own
 * rank order (out->world_ranks borrowed from the cache, valid while the communicator lives). Returns 0, or -1 when
 * it is not known (then *out says nothing). */
int comm_of(MPI_Comm comm, ls_comm *out);

/* comm_key_of - comm_of, and the communicator's consensus key (cons_key of its world ranks, common/consensus.h),
 * computed with the ranks, once per communicator. Returns 0, or -1 when there is no key: the ranks are not known,
 * or `comm` is an intercommunicator (*out then holds its local group). An intercommunicator's collectives leave
 * its local group unlike copies by design: a broadcast writes the other group's buffers, not the root's peers' (MPI
 * leaves an MPI_PROC_NULL caller's buffer as it was), and an allgather fills as many blocks as the other group has
 * members; so none of its calls is a consensus place. */
int comm_key_of(MPI_Comm comm, ls_comm *out, uint64_t *key);

/* comm_consensus - 1 when `comm`'s collectives can be consensus places: its ranks are known, all in
 * MPI_COMM_WORLD, and it is not an intercommunicator (comm_key_of). */
int comm_consensus(MPI_Comm comm);

/* comm_sampled - mode_sampled (agent/mode.h) for the next consensus collective on `comm`, counted on the
 * communicator (every member counts the same calls). 1 when `every` is 1 or the communicator is not known. */
int comm_sampled(MPI_Comm comm, unsigned every);

/* comm_world - MPI_COMM_WORLD (looked up: this library names no symbol of libmpi), or NULL when not found. */
MPI_Comm comm_world(void);

#endif /* AGENT_MPI_COMM_H */
