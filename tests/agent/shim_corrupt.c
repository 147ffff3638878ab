/* shim_corrupt.c - a fault shim for the consensus tests: preloaded after liblockstep_mpi.so, it flips one bit of one
 * rank's MPI_Allreduce output after the real reduction, as a bad NIC or memory would.
 *
 * liblockstep_mpi.so reaches MPI through dlsym(RTLD_NEXT, "PMPI_Allreduce"): with LD_PRELOAD listing this library
 * after it, that lookup finds the PMPI_Allreduce below, which calls libmpi's own and then corrupts the output. The
 * agent fingerprints what the program sees: the corrupted bytes.
 *
 * LOCKSTEP_SHIM_RANK   the world rank to corrupt (default 1)
 * LOCKSTEP_SHIM_CALL   which of that rank's MPI_Allreduce calls, from 0 (default 0); -1: every one (a NIC that
 *                      stays bad)
 * LOCKSTEP_SHIM_BIT    which bit of the output, from 0 (default 0; taken modulo the output's bits) */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default"))) /* the build hides symbols by default */

EXPORT int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    static int (*real)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
    static long calls;
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "PMPI_Allreduce");
    if (!real)
        abort();
    int rc = real(sendbuf, recvbuf, count, dt, op, comm);
    int me = -1, size = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (rc != MPI_SUCCESS || me != env_long("LOCKSTEP_SHIM_RANK", 1))
        return rc;
    long want = env_long("LOCKSTEP_SHIM_CALL", 0);
    if (calls++ != want && want >= 0)
        return rc;
    PMPI_Type_size(dt, &size);
    long bits = (long)size * count * 8;
    if (bits <= 0)
        return rc;
    long bit = env_long("LOCKSTEP_SHIM_BIT", 0) % bits;
    ((unsigned char *)recvbuf)[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    fprintf(stderr, "shim_corrupt: rank %d, MPI_Allreduce call %ld: bit %ld flipped\n", me, calls - 1, bit);
    return rc;
}
