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
 * LOCKSTEP_SHIM_BIT    which bit of the output, from 0 (default 0; taken modulo the output's bits)
 * LOCKSTEP_SHIM_ICALL  which of that rank's MPI_Iallreduce calls, from 0 (default none): every rank reduces that call
 *                      at once (a blocking PMPI_Allreduce: the ranks' calls must match) and hands back a request of an
 *                      PMPI_Ibarrier, so the flipped bit is in the output when the program's wait completes it */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default"))) /* the build hides symbols by default */

EXPORT int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
EXPORT int PMPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                           MPI_Request *req);

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

/* flip - flip the chosen bit of `count` elements of `dt` at `buf`, saying so. */
static void flip(void *buf, int count, MPI_Datatype dt, int me, const char *call, long n)
{
    int size = 0;
    PMPI_Type_size(dt, &size);
    long bits = (long)size * count * 8;
    if (bits <= 0)
        return;
    long bit = env_long("LOCKSTEP_SHIM_BIT", 0) % bits;
    ((unsigned char *)buf)[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    fprintf(stderr, "shim_corrupt: rank %d, %s call %ld: bit %ld flipped\n", me, call, n, bit);
}

int PMPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                    MPI_Request *req)
{
    static int (*real)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
    static int (*blocking)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
    static long calls;
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "PMPI_Iallreduce");
    if (!blocking)
        *(void **)&blocking = dlsym(RTLD_NEXT, "PMPI_Allreduce");
    if (!real || !blocking)
        abort();
    long n = calls++;
    if (n != env_long("LOCKSTEP_SHIM_ICALL", -1))
        return real(sendbuf, recvbuf, count, dt, op, comm, req);
    int rc = blocking(sendbuf, recvbuf, count, dt, op, comm), me = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (rc == MPI_SUCCESS && me == env_long("LOCKSTEP_SHIM_RANK", 1))
        flip(recvbuf, count, dt, me, "MPI_Iallreduce", n);
    return rc == MPI_SUCCESS ? PMPI_Ibarrier(comm, req) : rc;
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
    int me = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (rc != MPI_SUCCESS || me != env_long("LOCKSTEP_SHIM_RANK", 1))
        return rc;
    long want = env_long("LOCKSTEP_SHIM_CALL", 0);
    if (calls++ != want && want >= 0)
        return rc;
    flip(recvbuf, count, dt, me, "MPI_Allreduce", calls - 1);
    return rc;
}
