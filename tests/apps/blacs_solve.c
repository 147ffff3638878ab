/* blacs_solve.c - an unmodified MPI program (no Lockstep calls) over Debian's ScaLAPACK, the pattern of the
 * electronic-structure codes that use it: a 1x1 BLACS process grid on rank 0 of however many ranks, a dense solve
 * on it (pdgesv), and a parameter block broadcast over the grid with BLACS (dgebs2d_) whose last word is scratch the
 * program never reads (here the wall clock's nanoseconds, so it differs from run to run). On a 1x1 grid BLACS
 * broadcasts on a communicator of one process: nothing is sent. Every rank then agrees on a checksum (MPI_Allreduce).
 *
 * usage: blacs_solve [N]   (the order of the system, 8 by default)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* ScaLAPACK and BLACS (libscalapack-openmpi) declare no C header of their own in Debian. */
extern void Cblacs_pinfo(int *me, int *np);
extern void Cblacs_get(int ctx, int what, int *val);
extern void Cblacs_gridinit(int *ctx, const char *order, int nprow, int npcol);
extern void Cblacs_gridinfo(int ctx, int *nprow, int *npcol, int *myrow, int *mycol);
extern void Cblacs_gridexit(int ctx);
extern void dgebs2d_(int *ctx, const char *scope, const char *top, int *m, int *n, double *a, int *lda);
extern void dgebr2d_(int *ctx, const char *scope, const char *top, int *m, int *n, double *a, int *lda, int *rsrc,
                     int *csrc);
extern void descinit_(int *desc, int *m, int *n, int *mb, int *nb, int *irsrc, int *icsrc, int *ctx, int *lld,
                      int *info);
extern void pdgesv_(int *n, int *nrhs, double *a, int *ia, int *ja, int *desca, int *ipiv, double *b, int *ib, int *jb,
                    int *descb, int *info);

/* solve - the grid's dense solve; x[0] of the answer. */
static double solve(int ctx, int n)
{
    int nrhs = 1, nb = 4, zero = 0, one = 1, lld = n, info = 0, desca[9], descb[9];
    double *a = malloc(sizeof(double) * (size_t)n * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
    int *ipiv = malloc(sizeof(int) * (size_t)(n + nb));
    if (!a || !b || !ipiv)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            a[(size_t)j * (size_t)n + (size_t)i] = i == j ? n + 1.0 : 1.0 / (1 + i + j);
    for (int i = 0; i < n; i++)
        b[i] = i + 1.0;
    descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
    descinit_(descb, &n, &nrhs, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
    pdgesv_(&n, &nrhs, a, &one, &one, desca, ipiv, b, &one, &one, descb, &info);
    double x0 = info == 0 ? b[0] : -1.0;
    free(a);
    free(b);
    free(ipiv);
    return x0;
}

/* share_params - the grid's root broadcasts its parameter block to the grid; the block's last word is scratch. */
static void share_params(int ctx, int myrow, int mycol, double *params, int len)
{
    int one = 1, zero = 0;
    if (myrow == 0 && mycol == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        params[len - 1] = (double)ts.tv_nsec; /* scratch, never read */
        dgebs2d_(&ctx, "All", " ", &len, &one, params, &len);
    } else {
        dgebr2d_(&ctx, "All", " ", &len, &one, params, &len, &zero, &zero);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 8, me, np, ctx, nprow = 1, npcol = 1, myrow = -1, mycol = -1;
    Cblacs_pinfo(&me, &np);
    Cblacs_get(-1, 0, &ctx);
    Cblacs_gridinit(&ctx, "Row", 1, 1);
    Cblacs_gridinfo(ctx, &nprow, &npcol, &myrow, &mycol);
    double x0 = 0;
    if (myrow >= 0) {
        double params[4] = {n, 1e-12, 4, 0};
        share_params(ctx, myrow, mycol, params, 4);
        x0 = solve(ctx, (int)params[0]);
        Cblacs_gridexit(ctx);
    }
    double sum = 0;
    MPI_Allreduce(&x0, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("x0 %.17g\n", sum);
    MPI_Finalize();
    return 0;
}
