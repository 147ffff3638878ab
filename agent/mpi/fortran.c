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
#include <stdlib.h>

#include <mpi.h>

#include "agent/mpi/fortran.h"
#include "agent/mpi/pmpi.h"

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER must be C int");

__thread const void *mpi_fortran_caller;

/* --- sentinels --------------------------------------------------------------------------------------------- */

enum { S_IN_PLACE, S_BOTTOM, S_STATUS_IGNORE, S_STATUSES_IGNORE, S_N };

/* The four spellings of each common block (Open MPI's OMPI_IS_FORTRAN_* macros test all four), found in the
 * process's global scope, where the program's own references to the common block are bound. */
static const char *const sentinel_names[S_N][4] = {
    {"mpi_fortran_in_place_", "mpi_fortran_in_place", "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"},
    {"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__", "MPI_FORTRAN_BOTTOM"},
    {"mpi_fortran_status_ignore_", "mpi_fortran_status_ignore", "mpi_fortran_status_ignore__",
     "MPI_FORTRAN_STATUS_IGNORE"},
    {"mpi_fortran_statuses_ignore_", "mpi_fortran_statuses_ignore", "mpi_fortran_statuses_ignore__",
     "MPI_FORTRAN_STATUSES_IGNORE"},
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

/* statuses_out - `n` C statuses into the Fortran array of statuses (MPI_STATUS_SIZE integers each: Open MPI's
 * Fortran status is its C status as integers), unless the program passed MPI_STATUSES_IGNORE. */
enum { F_STATUS_INTS = sizeof(MPI_Status) / sizeof(MPI_Fint) };
static void statuses_out(const MPI_Status *c, MPI_Fint *f, int n)
{
    REAL(int, MPI_Status_c2f, const MPI_Status *, MPI_Fint *);
    if (!f || is_sentinel(f, S_STATUSES_IGNORE))
        return;
    for (int i = 0; i < n; i++)
        real_MPI_Status_c2f(&c[i], f + (size_t)i * F_STATUS_INTS);
}

static MPI_Request request_of(MPI_Fint f)
{
    REAL(MPI_Request, MPI_Request_f2c, MPI_Fint);
    return real_MPI_Request_f2c(f);
}

static MPI_Fint request_out(MPI_Request c)
{
    REAL(MPI_Fint, MPI_Request_c2f, MPI_Request);
    return real_MPI_Request_c2f(c);
}

/* A completion call's requests and statuses in C: on the stack up to SMALL_N, else allocated. */
enum { SMALL_N = 16 };
typedef struct c_reqs {
    MPI_Request small[SMALL_N], *req;
    MPI_Status small_st[SMALL_N], *st;
} c_reqs;

/* reqs_in - the Fortran requests f[0..n) as C ones in `c`. 0, or -1 when out of memory. */
static int reqs_in(c_reqs *c, const MPI_Fint *f, int n)
{
    c->req = n <= SMALL_N ? c->small : malloc((size_t)n * sizeof(MPI_Request));
    c->st = n <= SMALL_N ? c->small_st : malloc((size_t)n * sizeof(MPI_Status));
    if (!c->req || !c->st) {
        if (c->req != c->small)
            free(c->req);
        if (c->st != c->small_st)
            free(c->st);
        return -1;
    }
    for (int i = 0; i < n; i++)
        c->req[i] = request_of(f[i]);
    return 0;
}

/* reqs_out - the C requests back into f[0..n) (a completed one is MPI_REQUEST_NULL's Fortran value), and free. */
static void reqs_out(c_reqs *c, MPI_Fint *f, int n)
{
    for (int i = 0; i < n; i++)
        f[i] = request_out(c->req[i]);
    if (c->req != c->small)
        free(c->req);
    if (c->st != c->small_st)
        free(c->st);
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

/* FORTRAN_ALIASES - the other names of mpi_NAME_ (`lower` mpi_NAME, `upper` MPI_NAME): the other manglings and
 * use mpi_f08's. */
#define ALIAS(fn, sym) extern __typeof(fn) sym __attribute__((alias(#fn), visibility("default")))
#define FORTRAN_ALIASES(lower, upper)                                                                                  \
    ALIAS(lower##_, lower##__);                                                                                        \
    ALIAS(lower##_, lower);                                                                                            \
    ALIAS(lower##_, upper);                                                                                            \
    ALIAS(lower##_, lower##_f08_)

/* --- collectives ------------------------------------------------------------------------------------------- */

void mpi_allreduce_(const void *sbuf, void *rbuf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *op,
                    const MPI_Fint *comm, MPI_Fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Allreduce(in_place(sbuf), bottom(rbuf), *count, type_of(dt), op_of(op), comm_of(comm)));
}
FORTRAN_ALIASES(mpi_allreduce, MPI_ALLREDUCE);

void mpi_reduce_(const void *sbuf, void *rbuf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *op,
                 const MPI_Fint *root, const MPI_Fint *comm, MPI_Fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Reduce(in_place(sbuf), bottom(rbuf), *count, type_of(dt), op_of(op), *root, comm_of(comm)));
}
FORTRAN_ALIASES(mpi_reduce, MPI_REDUCE);

void mpi_bcast_(void *buf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *root, const MPI_Fint *comm,
                MPI_Fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Bcast(bottom(buf), *count, type_of(dt), *root, comm_of(comm)));
}
FORTRAN_ALIASES(mpi_bcast, MPI_BCAST);

void mpi_allgather_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf, const MPI_Fint *rcount,
                    const MPI_Fint *rtype, const MPI_Fint *comm, MPI_Fint *ierr)
{
    ENTER();
    leave(ierr,
          MPI_Allgather(in_place(sbuf), *scount, type_of(stype), bottom(rbuf), *rcount, type_of(rtype), comm_of(comm)));
}
FORTRAN_ALIASES(mpi_allgather, MPI_ALLGATHER);

void mpi_allgatherv_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf,
                     const MPI_Fint *rcounts, const MPI_Fint *displs, const MPI_Fint *rtype, const MPI_Fint *comm,
                     MPI_Fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Allgatherv(in_place(sbuf), *scount, type_of(stype), bottom(rbuf), rcounts, displs, type_of(rtype),
                               comm_of(comm)));
}
FORTRAN_ALIASES(mpi_allgatherv, MPI_ALLGATHERV);

void mpi_reduce_scatter_(const void *sbuf, void *rbuf, const MPI_Fint *rcounts, const MPI_Fint *dt, const MPI_Fint *op,
                         const MPI_Fint *comm, MPI_Fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Reduce_scatter(in_place(sbuf), bottom(rbuf), rcounts, type_of(dt), op_of(op), comm_of(comm)));
}
FORTRAN_ALIASES(mpi_reduce_scatter, MPI_REDUCE_SCATTER);

void mpi_reduce_scatter_block_(const void *sbuf, void *rbuf, const MPI_Fint *rcount, const MPI_Fint *dt,
                               const MPI_Fint *op, const MPI_Fint *comm, MPI_Fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Reduce_scatter_block(in_place(sbuf), bottom(rbuf), *rcount, type_of(dt), op_of(op), comm_of(comm)));
}
FORTRAN_ALIASES(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK);

void mpi_alltoall_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf, const MPI_Fint *rcount,
                   const MPI_Fint *rtype, const MPI_Fint *comm, MPI_Fint *ierr)
{
    ENTER();
    leave(ierr,
          MPI_Alltoall(in_place(sbuf), *scount, type_of(stype), bottom(rbuf), *rcount, type_of(rtype), comm_of(comm)));
}
FORTRAN_ALIASES(mpi_alltoall, MPI_ALLTOALL);

void mpi_alltoallv_(const void *sbuf, const MPI_Fint *scounts, const MPI_Fint *sdispls, const MPI_Fint *stype,
                    void *rbuf, const MPI_Fint *rcounts, const MPI_Fint *rdispls, const MPI_Fint *rtype,
                    const MPI_Fint *comm, MPI_Fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Alltoallv(in_place(sbuf), scounts, sdispls, type_of(stype), bottom(rbuf), rcounts, rdispls,
                              type_of(rtype), comm_of(comm)));
}
FORTRAN_ALIASES(mpi_alltoallv, MPI_ALLTOALLV);

/* --- nonblocking collectives and the calls that complete them (recorded by nbc.c) ----------------------------- */

void mpi_iallreduce_(const void *sbuf, void *rbuf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *op,
                     const MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request c;
    ENTER();
    if (leave(ierr, MPI_Iallreduce(in_place(sbuf), bottom(rbuf), *count, type_of(dt), op_of(op), comm_of(comm), &c)) ==
        MPI_SUCCESS)
        *req = request_out(c);
}
FORTRAN_ALIASES(mpi_iallreduce, MPI_IALLREDUCE);

void mpi_ibcast_(void *buf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *root, const MPI_Fint *comm,
                 MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request c;
    ENTER();
    if (leave(ierr, MPI_Ibcast(bottom(buf), *count, type_of(dt), *root, comm_of(comm), &c)) == MPI_SUCCESS)
        *req = request_out(c);
}
FORTRAN_ALIASES(mpi_ibcast, MPI_IBCAST);

void mpi_iallgather_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf,
                     const MPI_Fint *rcount, const MPI_Fint *rtype, const MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request c;
    ENTER();
    if (leave(ierr, MPI_Iallgather(in_place(sbuf), *scount, type_of(stype), bottom(rbuf), *rcount, type_of(rtype),
                                   comm_of(comm), &c)) == MPI_SUCCESS)
        *req = request_out(c);
}
FORTRAN_ALIASES(mpi_iallgather, MPI_IALLGATHER);

void mpi_iallgatherv_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf,
                      const MPI_Fint *rcounts, const MPI_Fint *displs, const MPI_Fint *rtype, const MPI_Fint *comm,
                      MPI_Fint *req, MPI_Fint *ierr)
{
    MPI_Request c;
    ENTER();
    if (leave(ierr, MPI_Iallgatherv(in_place(sbuf), *scount, type_of(stype), bottom(rbuf), rcounts, displs,
                                    type_of(rtype), comm_of(comm), &c)) == MPI_SUCCESS)
        *req = request_out(c);
}
FORTRAN_ALIASES(mpi_iallgatherv, MPI_IALLGATHERV);

void mpi_wait_(MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Request c = request_of(*req);
    MPI_Status st;
    int rc = leave(ierr, MPI_Wait(&c, &st));
    *req = request_out(c);
    if (rc == MPI_SUCCESS)
        status_out(&st, status);
}
FORTRAN_ALIASES(mpi_wait, MPI_WAIT);

void mpi_test_(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Request c = request_of(*req);
    MPI_Status st;
    int f = 0, rc = leave(ierr, MPI_Test(&c, &f, &st));
    *req = request_out(c);
    if (rc == MPI_SUCCESS) {
        *flag = f != 0;
        if (f)
            status_out(&st, status);
    }
}
FORTRAN_ALIASES(mpi_test, MPI_TEST);

/* all - MPI_Waitall (`flag` NULL) or MPI_Testall from Fortran. */
static void all(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr)
{
    c_reqs c;
    if (reqs_in(&c, reqs, *n) < 0) {
        leave(ierr, MPI_ERR_NO_MEM);
        return;
    }
    int f = 1, rc = leave(ierr, flag ? MPI_Testall(*n, c.req, &f, c.st) : MPI_Waitall(*n, c.req, c.st));
    reqs_out(&c, reqs, *n);
    if (flag && rc == MPI_SUCCESS)
        *flag = f != 0;
    if (f && (rc == MPI_SUCCESS || (!flag && rc == MPI_ERR_IN_STATUS)))
        statuses_out(c.st, statuses, *n);
}

void mpi_waitall_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr)
{
    all(n, reqs, NULL, statuses, ierr);
}
FORTRAN_ALIASES(mpi_waitall, MPI_WAITALL);

void mpi_testall_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr)
{
    all(n, reqs, flag, statuses, ierr);
}
FORTRAN_ALIASES(mpi_testall, MPI_TESTALL);

void mpi_waitany_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr)
{
    c_reqs c;
    if (reqs_in(&c, reqs, *n) < 0) {
        leave(ierr, MPI_ERR_NO_MEM);
        return;
    }
    int i = MPI_UNDEFINED, rc = leave(ierr, MPI_Waitany(*n, c.req, &i, c.st));
    reqs_out(&c, reqs, *n);
    if (rc == MPI_SUCCESS) {
        *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1; /* Fortran counts from 1 */
        status_out(c.st, status);
    }
}
FORTRAN_ALIASES(mpi_waitany, MPI_WAITANY);

void mpi_testany_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    c_reqs c;
    if (reqs_in(&c, reqs, *n) < 0) {
        leave(ierr, MPI_ERR_NO_MEM);
        return;
    }
    int i = MPI_UNDEFINED, f = 0, rc = leave(ierr, MPI_Testany(*n, c.req, &i, &f, c.st));
    reqs_out(&c, reqs, *n);
    if (rc == MPI_SUCCESS) {
        *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
        *flag = f != 0;
        if (f)
            status_out(c.st, status);
    }
}
FORTRAN_ALIASES(mpi_testany, MPI_TESTANY);

/* some - MPI_Waitsome or MPI_Testsome from Fortran: indices counted from 1. */
static void some(int (*call)(int, MPI_Request *, int *, int *, MPI_Status *), const MPI_Fint *n, MPI_Fint *reqs,
                 MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    c_reqs c;
    int small_idx[SMALL_N], *idx = *n <= SMALL_N ? small_idx : malloc((size_t)*n * sizeof(int));
    if (!idx || reqs_in(&c, reqs, *n) < 0) {
        if (idx != small_idx)
            free(idx);
        leave(ierr, MPI_ERR_NO_MEM);
        return;
    }
    int out = MPI_UNDEFINED, rc = leave(ierr, call(*n, c.req, &out, idx, c.st));
    reqs_out(&c, reqs, *n);
    if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) {
        *outcount = out;
        for (int i = 0; out != MPI_UNDEFINED && i < out; i++)
            indices[i] = idx[i] + 1;
        statuses_out(c.st, statuses, out == MPI_UNDEFINED ? 0 : out);
    }
    if (idx != small_idx)
        free(idx);
}

void mpi_waitsome_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
                   MPI_Fint *ierr)
{
    some(MPI_Waitsome, n, reqs, outcount, indices, statuses, ierr);
}
FORTRAN_ALIASES(mpi_waitsome, MPI_WAITSOME);

void mpi_testsome_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
                   MPI_Fint *ierr)
{
    some(MPI_Testsome, n, reqs, outcount, indices, statuses, ierr);
}
FORTRAN_ALIASES(mpi_testsome, MPI_TESTSOME);

/* --- point to point ---------------------------------------------------------------------------------------- */

void mpi_send_(const void *buf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *dest, const MPI_Fint *tag,
               const MPI_Fint *comm, MPI_Fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Send(bottom(buf), *count, type_of(dt), *dest, *tag, comm_of(comm)));
}
FORTRAN_ALIASES(mpi_send, MPI_SEND);

void mpi_recv_(void *buf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *source, const MPI_Fint *tag,
               const MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Status c;
    ENTER();
    if (leave(ierr, MPI_Recv(bottom(buf), *count, type_of(dt), *source, *tag, comm_of(comm), &c)) == MPI_SUCCESS)
        status_out(&c, status);
}
FORTRAN_ALIASES(mpi_recv, MPI_RECV);

void mpi_sendrecv_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, const MPI_Fint *dest,
                   const MPI_Fint *stag, void *rbuf, const MPI_Fint *rcount, const MPI_Fint *rtype,
                   const MPI_Fint *source, const MPI_Fint *rtag, const MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Status c;
    ENTER();
    if (leave(ierr, MPI_Sendrecv(bottom(sbuf), *scount, type_of(stype), *dest, *stag, bottom(rbuf), *rcount,
                                 type_of(rtype), *source, *rtag, comm_of(comm), &c)) == MPI_SUCCESS)
        status_out(&c, status);
}
FORTRAN_ALIASES(mpi_sendrecv, MPI_SENDRECV);

/* --- the program's switches -------------------------------------------------------------------------------- */

void mpi_abort_(const MPI_Fint *comm, const MPI_Fint *errorcode, MPI_Fint *ierr)
{
    ENTER();
    leave(ierr, MPI_Abort(comm_of(comm), *errorcode));
}
FORTRAN_ALIASES(mpi_abort, MPI_ABORT);

void mpi_finalize_(MPI_Fint *ierr)
{
    leave(ierr, MPI_Finalize());
}
FORTRAN_ALIASES(mpi_finalize, MPI_FINALIZE);

void mpi_pcontrol_(const MPI_Fint *level)
{
    MPI_Pcontrol(*level);
}
FORTRAN_ALIASES(mpi_pcontrol, MPI_PCONTROL);
