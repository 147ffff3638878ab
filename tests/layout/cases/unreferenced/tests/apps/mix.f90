! mix.f90 - calls from_fortran through its bind(C) name; fortran_never appears only in this comment.
program mix
  use iso_c_binding
  interface
    function from_fortran(x) bind(C, name='from_fortran')
      import :: c_double
      real(c_double), value :: x
      real(c_double) :: from_fortran
    end function from_fortran
  end interface
  print *, from_fortran(1.0d0)
end program mix
