! fortran_nbc.f90 - nonblocking collectives from Fortran (use mpi_f08): each iteration starts an MPI_Iallreduce, an
! MPI_Ibcast and an MPI_Iallgather and completes them in a way that depends on the rank (MPI_Waitall, MPI_Waitany,
! MPI_Testsome polls), then a small MPI_Iallreduce completed by MPI_Test polls or MPI_Wait.
! usage: fortran_nbc [ITERATIONS]
program fortran_nbc
  use mpi_f08
  implicit none
  integer :: rank, nranks, it, iters, k, idx, outcount, i, x, y
  type(MPI_Request) :: r(3)
  integer :: indices(3)
  logical :: flag
  double precision :: a(64), b(64), c(64), g(1024)
  character(len=16) :: arg

  iters = 10
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) iters
  end if
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  do i = 1, 64
    a(i) = rank + i * 0.001d0
    c(i) = -1d0
  end do
  g = 0
  y = 0
  do it = 1, iters
    if (rank == mod(it, nranks)) c = a
    call MPI_Iallreduce(a, b, 64, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, r(1))
    call MPI_Ibcast(c, 64, MPI_DOUBLE_PRECISION, mod(it, nranks), MPI_COMM_WORLD, r(2))
    call MPI_Iallgather(a, 16, MPI_DOUBLE_PRECISION, g, 16, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, r(3))
    select case (mod(rank + it, 3))
    case (0)
      call MPI_Waitall(3, r, MPI_STATUSES_IGNORE)
    case (1)
      do k = 1, 3
        call MPI_Waitany(3, r, idx, MPI_STATUS_IGNORE)
      end do
    case default
      outcount = 0
      do while (outcount /= MPI_UNDEFINED)
        call MPI_Testsome(3, r, outcount, indices, MPI_STATUSES_IGNORE)
      end do
    end select
    a = b / nranks + g(1:64) * 1d-3 + c * 1d-6
    x = rank + it
    call MPI_Iallreduce(x, y, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, r(1))
    if (mod(rank, 2) == 0) then
      flag = .false.
      do while (.not. flag)
        call MPI_Test(r(1), flag, MPI_STATUS_IGNORE)
      end do
    else
      call MPI_Wait(r(1), MPI_STATUS_IGNORE)
    end if
  end do
  if (rank == 0) print '(a,i0,a,i0,a,es24.16,a,i0)', 'fortran_nbc: ', nranks, ' ranks, ', iters, ' iterations, a(1)=', &
    a(1), ', y=', y
  call MPI_Finalize()
end program fortran_nbc
