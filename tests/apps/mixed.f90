! mixed.f90 - a mixed Fortran/C MPI program: each step a Fortran module procedure reduces a residual through
! `use mpi` and a C function (mixed_energy.c) sums an energy through the C API. usage: mixed STEPS
module solver
  use mpi
  use iso_c_binding
  implicit none
  interface
    function mixed_energy(x, n, comm) bind(C, name='mixed_energy')
      import :: c_double, c_int
      real(c_double), intent(in) :: x(*)
      integer(c_int), value :: n, comm
      real(c_double) :: mixed_energy
    end function mixed_energy
  end interface
contains
  subroutine residual(x, r)
    double precision, intent(in) :: x(:)
    double precision, intent(out) :: r
    integer :: ierr
    call MPI_Allreduce(maxval(abs(x)), r, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  end subroutine residual
end module solver

program mixed
  use solver
  implicit none
  integer :: ierr, rank, steps, step, i
  double precision :: x(16), r, e
  character(16) :: arg
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  steps = 3
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) steps
  end if
  x = [(1.0d0 / dble(rank + i), i = 1, 16)]
  do step = 1, steps
    call residual(x, r)
    e = mixed_energy(x, 16, MPI_COMM_WORLD)
    x = 0.5d0 * x + 0.1d0 * r / e
  end do
  if (rank == 0) print '(a)', 'ok'
  call MPI_Finalize(ierr)
end program mixed
