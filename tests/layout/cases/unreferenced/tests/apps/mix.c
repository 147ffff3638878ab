/* mix.c - the C half of mix.f90: a function only Fortran calls (kept), and one nothing calls (found). */
double from_fortran(double x);
double from_fortran(double x)
{
    return x * 2;
}

double fortran_never(double x);
double fortran_never(double x)
{
    return x;
}
