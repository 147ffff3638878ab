/* fortran.c - liblockstep_mpi.so's Fortran entry points: Open MPI's mpif.h, `use mpi` and `use mpi_f08` names
 * of the calls pmpi.c records, converted to C and recorded by pmpi.c's C wrappers.
 *
 * Open MPI's Fortran bindings (libmpi_mpifh, libmpi_usempif08) call PMPI_* directly, so a Fortran program never
 * reaches the C wrappers. Each function here takes the call in the program's place: it converts the Fortran
 * handles (MPI_Comm_f2c, MPI_Type_f2c, MPI_Op_f2c), the Fortran sentinels (MPI_IN_PLACE, MPI_BOTTOM,
 * MPI_STATUS_IGNORE are common blocks, recognized by address as Open MPI's OMPI_IS_FORTRAN_* macros do) and
 * the status, calls the C wrapper (which records and calls PMPI_*: Open MPI's own Fortran binding is not run,
 * so a call is recorded once), and sets ierror. The C wrapper takes the Fortran caller's return address as the
 * call site (mpi_fortran_caller), so the site is the user's Fortran line, not this file.
 *
 * Names: gfortran's mpif.h and `use mpi` call mpi_NAME_ (mpi_NAME__ with -fsecond-underscore, mpi_NAME with
 * -fno-underscoring; MPI_NAME for compilers that upper-case); `use mpi_f08` calls mpi_NAME_f08_, whose handles
 * are one-integer derived types (passed as the integer's address) and whose ierror is optional (NULL when
 * absent). The pmpi_* names stay Open MPI's: they are a profiling tool's own way in. Fortran INTEGER is C int
 * here (Open MPI built without -fdefault-integer-8, as Debian's is).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include <mpi.h>

#include "agent/mpi/pmpi.h"

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER must be C int");

__thread const void *mpi_fortran_caller;

/* --- sentinels --------------------------------------------------------------------------------------------- */

enum { S_IN_PLACE, S_BOTTOM, S_STATUS_IGNORE, S_N };

/* The four spellings of each common block (Open MPI's OMPI_IS_FORTRAN_* macros test all four), found in the
 * process's global scope, where the program's own references to the common block are bound. */
static const char *const sentinel_names[S_N][4] = {
    {"mpi_fortran_in_place_", "mpi_fortran_in_place", "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"},
    {"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__", "MPI_FORTRAN_BOTTOM"},
    {"mpi_fortran_status_ignore_", "mpi_fortran_status_ignore", "mpi_fortran_status_ignore__",
     "MPI_FORTRAN_STATUS_IGNORE"},
};
static const void *sentinels[S_N][4];
static pthread_once_t sentinels_once = PTHREAD_ONCE_INIT;

static void sentinels_find(void)
{
    for (int s = 0; s < S_N; s++)
        for (int i = 0; i < 4; i++)
            sentinels[s][i] = dlsym(RTLD_DEFAULT, sentinel_names[s][i]);
}

/* is_sentinel - 1 when `p` is the address of Fortran sentinel `s`. */
static int is_sentinel(const void *p, int s)
{
    pthread_once(&sentinels_once, sentinels_find);
    for (int i = 0; i < 4; i++)
        if (p && p == sentinels[s][i])
            return 1;
    return 0;
}

/* in_place / bottom - a Fortran buffer argument as C: the sentinel's C value, or the address as it is. */
static const void *in_place(const void *p)
{
    return is_sentinel(p, S_IN_PLACE) ? MPI_IN_PLACE : is_sentinel(p, S_BOTTOM) ? MPI_BOTTOM : p;
}

static void *bottom(const void *p)
{
    return is_sentinel(p, S_BOTTOM) ? MPI_BOTTOM : (void *)p;
}

/* --- handles ----------------------------------------------------------------------------------------------- */

static MPI_Comm comm_of(const MPI_Fint *f)
{
    REAL(MPI_Comm, MPI_Comm_f2c, MPI_Fint);
    return real_MPI_Comm_f2c(*f);
}

static MPI_Datatype type_of(const MPI_Fint *f)
{
    REAL(MPI_Datatype, MPI_Type_f2c, MPI_Fint);
    return real_MPI_Type_f2c(*f);
}

static MPI_Op op_of(const MPI_Fint *f)
{
    REAL(MPI_Op, MPI_Op_f2c, MPI_Fint);
    return real_MPI_Op_f2c(*f);
}

/* status_out - the C status into the Fortran one, unless the program passed MPI_STATUS_IGNORE. */
static void status_out(const MPI_Status *c, MPI_Fint *f)
{
    REAL(int, MPI_Status_c2f, const MPI_Status *, MPI_Fint *);
    if (f && !is_sentinel(f, S_STATUS_IGNORE))
        real_MPI_Status_c2f(c, f);
}

/* ENTER / leave - around the call of a C wrapper: ENTER makes this entry point's caller the record's call site;
 * leave clears it, sets ierror (optional in mpi_f08: NULL when absent) to the wrapper's result and returns it. */
#define ENTER() (mpi_fortran_caller = __builtin_return_address(0))

static int leave(MPI_Fint *ierr, int rc)
{
    mpi_fortran_caller = NULL;
    if (ierr)
        *ierr = (MPI_Fint)rc;
    return rc;
}

/* FORTRAN_NAMES - exports `fn` under the Fortran names of MPI function `lower` (mpi_allreduce) / `upper`. */
#define ALIAS(fn, sym) extern __typeof(fn) sym __attribute__((alias(#fn), visibility("default")))
#define FORTRAN_NAMES(fn, lower, upper)                                                                                \
    ALIAS(fn, lower##_);                                                                                               \
    ALIAS(fn, lower##__);                                                                                              \
    ALIAS(fn, lower);                                                                                                  \
    ALIAS(fn, upper);                                                                                                  \
    ALIAS(fn, lower##_f08_)

typedef MPI_Fint fint;

/* --- collectives ------------------------------------------------------------------------------------------- */

static void f_allreduce(const void *sbuf, void *rbuf, const fint *count, const fint *dt, const fint *op,
                        const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Allreduce(in_place(sbuf), bottom(rbuf), *count, type_of(dt), op_of(op), comm_of(comm)));
}
FORTRAN_NAMES(f_allreduce, mpi_allreduce, MPI_ALLREDUCE);

static void f_reduce(const void *sbuf, void *rbuf, const fint *count, const fint *dt, const fint *op,
                     const fint *root, const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Reduce(in_place(sbuf), bottom(rbuf), *count, type_of(dt), op_of(op), *root, comm_of(comm)));
}
FORTRAN_NAMES(f_reduce, mpi_reduce, MPI_REDUCE);

static void f_bcast(void *buf, const fint *count, const fint *dt, const fint *root, const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Bcast(bottom(buf), *count, type_of(dt), *root, comm_of(comm)));
}
FORTRAN_NAMES(f_bcast, mpi_bcast, MPI_BCAST);

static void f_allgather(const void *sbuf, const fint *scount, const fint *stype, void *rbuf, const fint *rcount,
                        const fint *rtype, const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Allgather(in_place(sbuf), *scount, type_of(stype), bottom(rbuf), *rcount, type_of(rtype),
                             comm_of(comm)));
}
FORTRAN_NAMES(f_allgather, mpi_allgather, MPI_ALLGATHER);

static void f_allgatherv(const void *sbuf, const fint *scount, const fint *stype, void *rbuf, const fint *rcounts,
                         const fint *displs, const fint *rtype, const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Allgatherv(in_place(sbuf), *scount, type_of(stype), bottom(rbuf), rcounts, displs,
                              type_of(rtype), comm_of(comm)));
}
FORTRAN_NAMES(f_allgatherv, mpi_allgatherv, MPI_ALLGATHERV);

static void f_reduce_scatter(const void *sbuf, void *rbuf, const fint *rcounts, const fint *dt, const fint *op,
                             const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Reduce_scatter(in_place(sbuf), bottom(rbuf), rcounts, type_of(dt), op_of(op), comm_of(comm)));
}
FORTRAN_NAMES(f_reduce_scatter, mpi_reduce_scatter, MPI_REDUCE_SCATTER);

static void f_reduce_scatter_block(const void *sbuf, void *rbuf, const fint *rcount, const fint *dt,
                                   const fint *op, const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Reduce_scatter_block(in_place(sbuf), bottom(rbuf), *rcount, type_of(dt), op_of(op),
                                        comm_of(comm)));
}
FORTRAN_NAMES(f_reduce_scatter_block, mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK);

static void f_alltoall(const void *sbuf, const fint *scount, const fint *stype, void *rbuf, const fint *rcount,
                       const fint *rtype, const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Alltoall(in_place(sbuf), *scount, type_of(stype), bottom(rbuf), *rcount, type_of(rtype),
                            comm_of(comm)));
}
FORTRAN_NAMES(f_alltoall, mpi_alltoall, MPI_ALLTOALL);

static void f_alltoallv(const void *sbuf, const fint *scounts, const fint *sdispls, const fint *stype, void *rbuf,
                        const fint *rcounts, const fint *rdispls, const fint *rtype, const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Alltoallv(in_place(sbuf), scounts, sdispls, type_of(stype), bottom(rbuf), rcounts, rdispls,
                             type_of(rtype), comm_of(comm)));
}
FORTRAN_NAMES(f_alltoallv, mpi_alltoallv, MPI_ALLTOALLV);

/* --- point to point ---------------------------------------------------------------------------------------- */

static void f_send(const void *buf, const fint *count, const fint *dt, const fint *dest, const fint *tag,
                   const fint *comm, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Send(bottom(buf), *count, type_of(dt), *dest, *tag, comm_of(comm)));
}
FORTRAN_NAMES(f_send, mpi_send, MPI_SEND);

static void f_recv(void *buf, const fint *count, const fint *dt, const fint *source, const fint *tag,
                   const fint *comm, fint *status, fint *ierr)
{
    MPI_Status c;
    ENTER();
    if (leave(ierr, MPI_Recv(bottom(buf), *count, type_of(dt), *source, *tag, comm_of(comm), &c)) == MPI_SUCCESS)
        status_out(&c, status);
}
FORTRAN_NAMES(f_recv, mpi_recv, MPI_RECV);

static void f_sendrecv(const void *sbuf, const fint *scount, const fint *stype, const fint *dest, const fint *stag,
                       void *rbuf, const fint *rcount, const fint *rtype, const fint *source, const fint *rtag,
                       const fint *comm, fint *status, fint *ierr)
{
    MPI_Status c;
    ENTER();
    if (leave(ierr, MPI_Sendrecv(bottom(sbuf), *scount, type_of(stype), *dest, *stag, bottom(rbuf), *rcount,
                                 type_of(rtype), *source, *rtag, comm_of(comm), &c)) == MPI_SUCCESS)
        status_out(&c, status);
}
FORTRAN_NAMES(f_sendrecv, mpi_sendrecv, MPI_SENDRECV);

/* --- the program's switches -------------------------------------------------------------------------------- */

static void f_abort(const fint *comm, const fint *errorcode, fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Abort(comm_of(comm), *errorcode));
}
FORTRAN_NAMES(f_abort, mpi_abort, MPI_ABORT);

static void f_pcontrol(const fint *level)
{
    MPI_Pcontrol(*level);
}
FORTRAN_NAMES(f_pcontrol, mpi_pcontrol, MPI_PCONTROL);
