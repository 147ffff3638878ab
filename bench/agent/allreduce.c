/* allreduce.c - bench/agent's workload: an unmodified MPI program that does little but MPI_Allreduce.
 *
 * usage: allreduce ITERS COUNT [BLOCK]   prints, on rank 0: "<seconds of the timed loop> <on> <off>"
 * With BLOCK > 0 the loop runs in blocks of BLOCK calls, alternately with MPI_Pcontrol(1) and MPI_Pcontrol(0)
 * (after four warm-up blocks; on, off, off, on, ...: a drift in speed favours neither), and <on> and <off> are
 * the microseconds per iteration in each half: under the agent, the cost of recording measured within one
 * process, its blocks milliseconds apart. Without the agent MPI_Pcontrol does nothing, and their ratio is the
 * measurement's own noise. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* block_on - whether block b records: blocks 0-3 warm up (recording, counted in neither half: the first
 * iterations after the pause run slower, on cold caches), then on, off, off, on repeats every four blocks */
#define WARM_BLOCKS 4
static int block_on(int b)
{
    return b < WARM_BLOCKS || (b - WARM_BLOCKS) % 4 == 0 || (b - WARM_BLOCKS) % 4 == 3;
}

/* half - the two halves of the timed loop: seconds and iterations with recording on [1] and off [0] */
static double half_s[2];
static long half_n[2];

/* count_block - add block b (n iterations, s seconds) to its half; the warm-up blocks to neither */
static void count_block(int b, long n, double s)
{
    if (b < WARM_BLOCKS)
        return;
    half_s[block_on(b)] += s;
    half_n[block_on(b)] += n;
}

/* half_us - microseconds per iteration in a half (0 when it had none) */
static double half_us(int on)
{
    return half_n[on] ? 1e6 * half_s[on] / (double)half_n[on] : 0.0;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    int count = argc > 2 ? atoi(argv[2]) : 16384;
    int block = argc > 3 ? atoi(argv[3]) : 0;
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    float *in = malloc(sizeof(float) * (size_t)count), *out = malloc(sizeof(float) * (size_t)count);
    for (int i = 0; i < count; i++)
        in[i] = (float)((rank * 131 + i * 7) % 1000) * 0.001f;
    /* One warm-up call: connections, and the agent's one-time start (libcurl, spool, thread), happen here; the
     * pause lets the start's background work (the manifest hashes every mapped library) finish, as a job's
     * own setup would, so the loop measures the steady state. */
    MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    usleep(300000);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), tb = t0;
    for (int it = 0; it < iters; it++) {
        if (block > 0 && it % block == 0) {
            double now = MPI_Wtime();
            if (it > 0)
                count_block(it / block - 1, block, now - tb);
            tb = now;
            MPI_Pcontrol(block_on(it / block));
        }
        MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        in[it % count] = out[(it * 13) % count] * 0.5f;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    if (block > 0 && iters > 0)
        count_block((iters - 1) / block, iters - (iters - 1) / block * block, t1 - tb);
    MPI_Pcontrol(1);
    if (rank == 0)
        printf("%.6f %.4f %.4f\n", t1 - t0, half_us(1), half_us(0));
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
