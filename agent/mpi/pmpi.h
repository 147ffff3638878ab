/* pmpi.h - what the C wrappers of liblockstep_mpi.so (pmpi.c) share with its Fortran entry points (fortran.c). */
#ifndef AGENT_MPI_PMPI_H
#define AGENT_MPI_PMPI_H

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

#endif /* AGENT_MPI_PMPI_H */
