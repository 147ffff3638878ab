/* fortran.h - the Fortran entry points of liblockstep_mpi.so (fortran.c): gfortran's names for mpif.h and use mpi;
 * fortran.c gives each its other manglings and its use mpi_f08 name. Arguments as Open MPI's Fortran binding
 * takes them: every one by address, handles as Fortran integers (MPI_Fint), ierror last. */
#ifndef AGENT_MPI_FORTRAN_H
#define AGENT_MPI_FORTRAN_H

#include <mpi.h>

#define FORTRAN_API __attribute__((visibility("default")))

FORTRAN_API void mpi_allreduce_(const void *sbuf, void *rbuf, const MPI_Fint *count, const MPI_Fint *dt,
                                const MPI_Fint *op, const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_reduce_(const void *sbuf, void *rbuf, const MPI_Fint *count, const MPI_Fint *dt,
                             const MPI_Fint *op, const MPI_Fint *root, const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_bcast_(void *buf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *root,
                            const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_allgather_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf,
                                const MPI_Fint *rcount, const MPI_Fint *rtype, const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_allgatherv_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf,
                                 const MPI_Fint *rcounts, const MPI_Fint *displs, const MPI_Fint *rtype,
                                 const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_reduce_scatter_(const void *sbuf, void *rbuf, const MPI_Fint *rcounts, const MPI_Fint *dt,
                                     const MPI_Fint *op, const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_reduce_scatter_block_(const void *sbuf, void *rbuf, const MPI_Fint *rcount, const MPI_Fint *dt,
                                           const MPI_Fint *op, const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_alltoall_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf,
                               const MPI_Fint *rcount, const MPI_Fint *rtype, const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_alltoallv_(const void *sbuf, const MPI_Fint *scounts, const MPI_Fint *sdispls,
                                const MPI_Fint *stype, void *rbuf, const MPI_Fint *rcounts, const MPI_Fint *rdispls,
                                const MPI_Fint *rtype, const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_send_(const void *buf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *dest,
                           const MPI_Fint *tag, const MPI_Fint *comm, MPI_Fint *ierr);
FORTRAN_API void mpi_recv_(void *buf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *source,
                           const MPI_Fint *tag, const MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr);
FORTRAN_API void mpi_sendrecv_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, const MPI_Fint *dest,
                               const MPI_Fint *stag, void *rbuf, const MPI_Fint *rcount, const MPI_Fint *rtype,
                               const MPI_Fint *source, const MPI_Fint *rtag, const MPI_Fint *comm, MPI_Fint *status,
                               MPI_Fint *ierr);
FORTRAN_API void mpi_iallreduce_(const void *sbuf, void *rbuf, const MPI_Fint *count, const MPI_Fint *dt,
                                 const MPI_Fint *op, const MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr);
FORTRAN_API void mpi_ibcast_(void *buf, const MPI_Fint *count, const MPI_Fint *dt, const MPI_Fint *root,
                             const MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr);
FORTRAN_API void mpi_iallgather_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf,
                                 const MPI_Fint *rcount, const MPI_Fint *rtype, const MPI_Fint *comm, MPI_Fint *req,
                                 MPI_Fint *ierr);
FORTRAN_API void mpi_iallgatherv_(const void *sbuf, const MPI_Fint *scount, const MPI_Fint *stype, void *rbuf,
                                  const MPI_Fint *rcounts, const MPI_Fint *displs, const MPI_Fint *rtype,
                                  const MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr);
FORTRAN_API void mpi_wait_(MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr);
FORTRAN_API void mpi_test_(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr);
FORTRAN_API void mpi_waitall_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr);
FORTRAN_API void mpi_testall_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr);
FORTRAN_API void mpi_waitany_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr);
FORTRAN_API void mpi_testany_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
                              MPI_Fint *ierr);
FORTRAN_API void mpi_waitsome_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
                               MPI_Fint *statuses, MPI_Fint *ierr);
FORTRAN_API void mpi_testsome_(const MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
                               MPI_Fint *statuses, MPI_Fint *ierr);
FORTRAN_API void mpi_finalize_(MPI_Fint *ierr);
FORTRAN_API void mpi_abort_(const MPI_Fint *comm, const MPI_Fint *errorcode, MPI_Fint *ierr);
FORTRAN_API void mpi_pcontrol_(const MPI_Fint *level);

#endif /* AGENT_MPI_FORTRAN_H */
