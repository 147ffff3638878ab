! fortran_f08.f90 - fortran_mpifh.f90 through `use mpi_f08` (handles are derived types; some calls without ierror), for the agent tier: every collective
! Lockstep records, in place and not, with a derived datatype, from a module procedure and an external one.
! usage: fortran_f08 STEPS; FORTRAN_FLIP=RANK:STEP flips bit 40 of one element of that rank's allreduce input at
! that step. Checks each result and ierror itself: prints "ok" on rank 0, or stops with code 2.
module physics
  use mpi_f08
  implicit none
contains
  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(*), intent(in) :: what
    integer :: ierr
    if (.not. cond) then
      print *, 'FAIL ', what
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
    end if
  end subroutine check

  subroutine exchange(step, flip)
    integer, intent(in) :: step
    logical, intent(in) :: flip
    double precision :: x(8), y(8), g(64), gv(256)
    double precision, volatile :: col(4, 3) ! MPI_BOTTOM writes it behind the compiler's back
    integer(kind=MPI_ADDRESS_KIND) :: addr(3)
    integer :: ierr, rank, nproc, i, counts(16), displs(16), got
    type(MPI_Datatype) :: row
    type(MPI_Status) :: st
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
    do i = 1, 8
      x(i) = 1.0d0 / dble(rank + step + i)
    end do
    if (flip) x(3) = transfer(ieor(transfer(x(3), 0_8), ishft(1_8, 40)), x(3))
    ierr = -1 ! the binding must set it
    call MPI_Allreduce(x, y, 8, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. abs(y(1) - sum([(1.0d0 / dble(i + step + 1), i = 0, nproc - 1)])) < 1d-12, &
               'allreduce')
    y = x
    call MPI_Allreduce(MPI_IN_PLACE, y, 8, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. y(1) == 1.0d0 / dble(step + 1), 'allreduce in place')
    col = dble(rank)
    if (rank == 0) col(1, :) = [1.5d0, 2.5d0, 3.5d0]
    call MPI_Type_vector(3, 1, 4, MPI_DOUBLE_PRECISION, row, ierr)
    call MPI_Type_commit(row, ierr)
    call MPI_Bcast(col, 1, row, 0, MPI_COMM_WORLD)
    ierr = MPI_SUCCESS
    call check(ierr == MPI_SUCCESS .and. col(1, 3) == 3.5d0 .and. col(2, 1) == dble(rank), 'bcast of a derived type')
    call MPI_Type_free(row, ierr)
    ! the same row from MPI_BOTTOM, through a type of absolute addresses
    col(1, :) = dble(rank)
    if (rank == 0) col(1, :) = [4.5d0, 5.5d0, 6.5d0]
    do i = 1, 3
      call MPI_Get_address(col(1, i), addr(i), ierr)
    end do
    call MPI_Type_create_hindexed(3, [1, 1, 1], addr, MPI_DOUBLE_PRECISION, row, ierr)
    call MPI_Type_commit(row, ierr)
    call MPI_Bcast(MPI_BOTTOM, 1, row, 0, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. col(1, 2) == 5.5d0 .and. col(2, 2) == dble(rank), 'bcast from MPI_BOTTOM')
    call MPI_Type_free(row, ierr)
    call MPI_Allgather(x, 2, MPI_DOUBLE_PRECISION, g, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. g(2 * nproc - 1) == 1.0d0 / dble(nproc + step), 'allgather')
    do i = 1, nproc
      counts(i) = i
      displs(i) = (i - 1) * i / 2
    end do
    gv(displs(rank + 1) + 1:displs(rank + 1) + rank + 1) = x(1)
    call MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE_PRECISION, gv, counts, displs, MPI_DOUBLE_PRECISION, &
                        MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. gv(displs(nproc) + 1) == 1.0d0 / dble(nproc + step), 'allgatherv in place')
    call MPI_Reduce(x, y, 8, MPI_DOUBLE_PRECISION, MPI_MIN, 0, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. (rank /= 0 .or. y(8) == 1.0d0 / dble(nproc - 1 + step + 8)), 'reduce')
    call MPI_Sendrecv(x, 8, MPI_DOUBLE_PRECISION, mod(rank + 1, nproc), 7, y, 8, MPI_DOUBLE_PRECISION, &
                      mod(rank + nproc - 1, nproc), 7, MPI_COMM_WORLD, st, ierr)
    call MPI_Get_count(st, MPI_DOUBLE_PRECISION, got, ierr)
    call check(ierr == MPI_SUCCESS .and. got == 8 .and. st%MPI_SOURCE == mod(rank + nproc - 1, nproc), 'sendrecv status')
  end subroutine exchange
end module physics

subroutine closing(total)
  use mpi_f08
  implicit none
  double precision, intent(inout) :: total
  call MPI_Allreduce(MPI_IN_PLACE, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
end subroutine closing

program fortran_f08
  use physics
  implicit none
  integer :: ierr, rank, steps, step, frank, fstep, colon
  character(64) :: arg, env
  double precision :: total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  steps = 3
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) steps
  end if
  frank = -1
  fstep = -1
  call get_environment_variable('FORTRAN_FLIP', env)
  colon = index(env, ':')
  if (colon > 0) then
    read (env(1:colon - 1), *) frank
    read (env(colon + 1:), *) fstep
  end if
  do step = 0, steps - 1
    call exchange(step, rank == frank .and. step == fstep)
  end do
  total = dble(rank)
  call closing(total)
  if (rank == 0) print '(a)', 'ok'
  call MPI_Finalize(ierr)
end program fortran_f08
