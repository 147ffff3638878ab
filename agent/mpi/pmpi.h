/* pmpi.h - what the C wrappers of liblockstep_mpi.so (pmpi.c) share with its Fortran entry points (fortran.c). */
#ifndef AGENT_MPI_PMPI_H
#define AGENT_MPI_PMPI_H

#include <stdint.h>

#include <mpi.h>

#include "include/lockstep.h"

/* mpi_resolve - the real entry point `name` (a PMPI_* function), found with dlsym so that this library never
 * links libmpi (it loads into programs without MPI, and into ones that dlopen it), cached in *slot. A program
 * that calls an MPI function has MPI: when `name` is missing the install is broken, said on stderr, and the
 * process aborts. */
void *mpi_resolve(void **slot, const char *name);

/* REAL - declares real_NAME, the PMPI_NAME entry point with that prototype, resolved at first use. */
#define REAL(type, name, ...)                                                                                          \
    static void *slot_##name;                                                                                          \
    type (*real_##name)(__VA_ARGS__) = (type(*)(__VA_ARGS__))mpi_resolve(&slot_##name, "P" #name)

/* mpi_fortran_caller - while a Fortran entry point calls the C wrapper that records for it, the address its
 * own caller returns to (the user's Fortran line), which the C wrapper then takes as the record's call site;
 * NULL otherwise. Per thread, set and cleared by fortran.c around the call. */
extern __thread const void *mpi_fortran_caller __attribute__((visibility("hidden")));

/* What pmpi.c's wrappers and nbc.c's share (hidden: the library exports only MPI's names). */
#define HIDDEN __attribute__((visibility("hidden")))

/* An MPI datatype as the wrappers hash it. */
typedef struct dt_info {
    int size;        /* bytes of data per element */
    MPI_Aint extent; /* bytes between elements */
    int contiguous;  /* count elements are size*count bytes from the buffer start */
    int named;       /* a predefined type (MPI_COMBINER_NAMED): it lives as long as MPI */
    ls_dtype dtype;
} dt_info;

/* dtype_info - `dt` looked up (predefined types cached). 0, or -1 when MPI cannot say. */
HIDDEN int dtype_info(MPI_Datatype dt, dt_info *out);

/* fp_of - LSFP-1 of `count` elements of `dt` at `buf` (packed with `comm` when the type has holes), the bytes hashed
 * into *nbytes (when not NULL). fp_segments - the same over `n` segments (counts[i] elements at displs[i] extents, or
 * at 0 when displs is NULL), as if packed end to end; the elements into *elems. */
HIDDEN uint64_t fp_of(const void *buf, int count, MPI_Datatype dt, const dt_info *d, uint64_t *nbytes, MPI_Comm comm);
HIDDEN uint64_t fp_segments(const void *buf, int n, const int *counts, const int *displs, MPI_Datatype dt,
                            const dt_info *d, uint64_t *nbytes, long *elems, MPI_Comm comm);

/* inputs_on - whether records carry their inputs' fingerprints (LOCKSTEP_MPI_INPUTS); in_of - fp_of of an input, 0
 * without hashing when they do not. */
HIDDEN int inputs_on(void);
HIDDEN uint64_t in_of(const void *buf, int count, MPI_Datatype dt, const dt_info *d, uint64_t *nbytes, MPI_Comm comm);

/* consensus_op - 1 when `op` is a predefined reduction (its allreduce hands every rank the same bytes). */
HIDDEN int consensus_op(MPI_Op op);

HIDDEN int comm_size(MPI_Comm comm);
HIDDEN int comm_rank(MPI_Comm comm);

/* recording_consensus - 1 when a call `name` on `comm` at `ret` is recorded (not paused, in the trace window, not
 * ignored; in the consensus mode only calls whose output is the same on every member (`cons`), one in
 * LOCKSTEP_CONSENSUS_EVERY of them). Counts the call for the sampling. */
HIDDEN int recording_consensus(ls_level level, const char *name, const void *ret, int cons, MPI_Comm comm);

/* RET - where the application called the wrapper this expands in: the Fortran caller's return address when
 * a Fortran entry point (fortran.c) called the wrapper on its behalf. */
#define RET (mpi_fortran_caller ? mpi_fortran_caller : __builtin_return_address(0))

#endif /* AGENT_MPI_PMPI_H */
