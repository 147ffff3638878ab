/* heat.c - an unmodified MPI program (no Lockstep calls): 2D heat diffusion on a process grid that ends, as real codes
 * do, by reducing its timings.
 *
 * usage: [HEAT_PERTURB=RANK:K] heat [--grid PxQ] [--n N] [--steps S] [--input FILE] [--no-timings]
 *
 * Each step exchanges halo rows and columns with its neighbours (MPI_Sendrecv), relaxes its block, and
 * reduces the residual (relax_step: one MPI_Allreduce); every 5th step also reduces a checksum (checksum:
 * MPI_Allreduce). At the end it reduces its timings (MPI_Wtime spans, run-specific by nature) to rank 0
 * (report_timings: MPI_Reduce and MPI_Allreduce). HEAT_PERTURB=R:K makes rank R change its share of the
 * residual (by a part in 10^9) just before the K-th residual allreduce (K counted from 0): a fault injected
 * from the environment, which leaves the twins' command lines and recorded settings equal, as a real one would. --input
 * FILE reads a scale factor from FILE after broadcasting the parameters, and aborts the job (MPI_Abort) when FILE
 * cannot be read.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct grid {
    int p, q, pi, qi, rank, size;
    int nx, ny; /* this rank's block, without halos */
    int up, down, left, right;
    double *u, *v; /* (nx + 2) x (ny + 2) */
} grid;

/* The steps of the program stay functions of their own, as in a code of real size (at -O2 GCC would fold
 * these small once-called ones into main, and a call site names the function the call ends up in). */
#define NOINLINE __attribute__((noinline))

#define AT(g, a, i, j) (a)[(size_t)(i) * (size_t)((g)->ny + 2) + (size_t)(j)]

static void exchange(grid *g)
{
    double *sbuf = malloc(sizeof(double) * (size_t)(g->nx + 2)), *rbuf = malloc(sizeof(double) * (size_t)(g->nx + 2));
    /* rows: contiguous */
    MPI_Sendrecv(&AT(g, g->u, 1, 1), g->ny, MPI_DOUBLE, g->up, 1, &AT(g, g->u, g->nx + 1, 1), g->ny, MPI_DOUBLE,
                 g->down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&AT(g, g->u, g->nx, 1), g->ny, MPI_DOUBLE, g->down, 2, &AT(g, g->u, 0, 1), g->ny, MPI_DOUBLE, g->up, 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* columns: packed by hand */
    for (int i = 0; i < g->nx; i++)
        sbuf[i] = AT(g, g->u, i + 1, 1);
    MPI_Sendrecv(sbuf, g->nx, MPI_DOUBLE, g->left, 3, rbuf, g->nx, MPI_DOUBLE, g->right, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (g->right != MPI_PROC_NULL)
        for (int i = 0; i < g->nx; i++)
            AT(g, g->u, i + 1, g->ny + 1) = rbuf[i];
    for (int i = 0; i < g->nx; i++)
        sbuf[i] = AT(g, g->u, i + 1, g->ny);
    MPI_Sendrecv(sbuf, g->nx, MPI_DOUBLE, g->right, 4, rbuf, g->nx, MPI_DOUBLE, g->left, 4, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (g->left != MPI_PROC_NULL)
        for (int i = 0; i < g->nx; i++)
            AT(g, g->u, i + 1, 0) = rbuf[i];
    free(sbuf);
    free(rbuf);
}

/* relax_step - one Jacobi sweep and the global residual; `perturb`: this rank's share changes (by a part in
 * 10^9) just before it is reduced (after the halo exchange, so no neighbour sees it first). */
NOINLINE static double relax_step(grid *g, int perturb)
{
    double local = 0, global = 0;
    exchange(g);
    for (int i = 1; i <= g->nx; i++)
        for (int j = 1; j <= g->ny; j++) {
            double nv =
                0.25 * (AT(g, g->u, i - 1, j) + AT(g, g->u, i + 1, j) + AT(g, g->u, i, j - 1) + AT(g, g->u, i, j + 1));
            double d = nv - AT(g, g->u, i, j);
            local += d * d;
            AT(g, g->v, i, j) = nv;
        }
    for (int i = 1; i <= g->nx; i++)
        for (int j = 1; j <= g->ny; j++)
            AT(g, g->u, i, j) = AT(g, g->v, i, j);
    if (perturb)
        local *= 1.0 + 1e-9; /* large enough to survive the sum (one ulp of a share is lost in rounding) */
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sqrt(global);
}

/* checksum - the sum of the whole field. */
NOINLINE static double checksum(const grid *g)
{
    double local = 0, global = 0;
    for (int i = 1; i <= g->nx; i++)
        for (int j = 1; j <= g->ny; j++)
            local += AT(g, g->u, i, j);
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return global;
}

/* report_timings - what every real code prints at the end: the slowest, fastest and mean rank. */
NOINLINE static void report_timings(const grid *g, double seconds)
{
    double mx = 0, mn = 0, sum = 0;
    MPI_Reduce(&seconds, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&seconds, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&seconds, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (g->rank == 0)
        printf("heat: time max %.6f s, min %.6f s, mean %.6f s\n", mx, mn, sum / g->size);
}

static int neighbour(const grid *g, int dpi, int dqi)
{
    int pi = g->pi + dpi, qi = g->qi + dqi;
    if (pi < 0 || pi >= g->p || qi < 0 || qi >= g->q)
        return MPI_PROC_NULL;
    return pi * g->q + qi;
}

int main(int argc, char **argv)
{
    int n = 64, steps = 30, perturb_rank = -1, perturb_at = -1, timings = 1;
    const char *input = NULL;
    grid g;
    memset(&g, 0, sizeof(g));
    g.p = 2;
    g.q = 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--grid") && i + 1 < argc)
            sscanf(argv[++i], "%dx%d", &g.p, &g.q);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--input") && i + 1 < argc)
            input = argv[++i];
        else if (!strcmp(argv[i], "--no-timings"))
            timings = 0;
    }
    if (g.p * g.q != g.size || n % g.p || n % g.q) {
        if (g.rank == 0)
            fprintf(stderr, "heat: a %dx%d grid does not fit %d ranks and n = %d\n", g.p, g.q, g.size, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *perturb = getenv("HEAT_PERTURB");
    if (perturb)
        sscanf(perturb, "%d:%d", &perturb_rank, &perturb_at);
    double t0 = MPI_Wtime();
    /* Rank 0 owns the parameters: everyone gets them by broadcast, as codes read one input deck. */
    int params[3] = {n, steps, 0};
    MPI_Bcast(params, 3, MPI_INT, 0, MPI_COMM_WORLD);
    double scale = 1.0;
    if (input) {
        FILE *f = fopen(input, "r");
        int ok = f && fscanf(f, "%lf", &scale) == 1;
        if (f)
            fclose(f);
        if (!ok) {
            fprintf(stderr, "heat: rank %d: cannot read the input file %s\n", g.rank, input);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    g.pi = g.rank / g.q;
    g.qi = g.rank % g.q;
    g.nx = n / g.p;
    g.ny = n / g.q;
    g.up = neighbour(&g, -1, 0);
    g.down = neighbour(&g, 1, 0);
    g.left = neighbour(&g, 0, -1);
    g.right = neighbour(&g, 0, 1);
    g.u = calloc((size_t)(g.nx + 2) * (size_t)(g.ny + 2), sizeof(double));
    g.v = calloc((size_t)(g.nx + 2) * (size_t)(g.ny + 2), sizeof(double));
    for (int i = 1; i <= g.nx; i++)
        for (int j = 1; j <= g.ny; j++) {
            int gi = g.pi * g.nx + i - 1, gj = g.qi * g.ny + j - 1;
            AT(&g, g.u, i, j) = scale * sin(0.05 * gi) * cos(0.07 * gj) + (gi == n / 2 && gj == n / 2 ? 100.0 : 0.0);
        }
    double res = 0, sum = 0;
    for (int s = 0; s < steps; s++) {
        res = relax_step(&g, s == perturb_at && g.rank == perturb_rank);
        if (s % 5 == 4)
            sum = checksum(&g);
    }
    if (g.rank == 0)
        printf("heat: %dx%d grid, n %d, %d steps, residual %.17g, checksum %.17g\n", g.p, g.q, n, steps, res, sum);
    if (timings)
        report_timings(&g, MPI_Wtime() - t0);
    free(g.u);
    free(g.v);
    MPI_Finalize();
    return 0;
}
