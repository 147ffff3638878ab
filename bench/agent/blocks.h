/* blocks.h - the timed loop of bench/agent's programs, cut into blocks of iterations that alternate recording
 * on and off with MPI_Pcontrol, so that the agent's cost is measured within one process, its two halves
 * milliseconds apart. Four warm-up blocks first (recording, counted in neither half: the first iterations after
 * the programs' pause run slower, on cold caches), then on, off, off, on, ... so that a drift in speed favours
 * neither half. Without the agent MPI_Pcontrol does nothing and the halves differ by the measurement's noise. */
#ifndef BENCH_AGENT_BLOCKS_H
#define BENCH_AGENT_BLOCKS_H

#include <mpi.h>

#define WARM_BLOCKS 4

typedef struct bench_blocks {
    int size;    /* iterations a block; 0: no blocks, recording stays on */
    double t0;   /* when the open block began */
    double s[2]; /* seconds with recording off [0] and on [1] */
    long n[2];   /* iterations in each */
} bench_blocks;

/* block_on - whether block b records */
static inline int block_on(int b)
{
    return b < WARM_BLOCKS || (b - WARM_BLOCKS) % 4 == 0 || (b - WARM_BLOCKS) % 4 == 3;
}

static inline void blocks_close(bench_blocks *k, int b, long n, double now)
{
    if (b >= WARM_BLOCKS) {
        k->s[block_on(b)] += now - k->t0;
        k->n[block_on(b)] += n;
    }
    k->t0 = now;
}

/* blocks_tick - call before iteration `it`: at a block's first iteration, close the one before and switch. */
static inline void blocks_tick(bench_blocks *k, int it)
{
    if (k->size <= 0 || it % k->size != 0)
        return;
    double now = MPI_Wtime();
    if (it > 0)
        blocks_close(k, it / k->size - 1, k->size, now);
    else
        k->t0 = now;
    MPI_Pcontrol(block_on(it / k->size));
}

/* blocks_end - after `iters` iterations: close the last block and leave recording on. */
static inline void blocks_end(bench_blocks *k, int iters, double now)
{
    if (k->size > 0 && iters > 0)
        blocks_close(k, (iters - 1) / k->size, iters - (long)(iters - 1) / k->size * k->size, now);
    MPI_Pcontrol(1);
}

/* blocks_us - microseconds per iteration with recording on (1) or off (0); 0 when there were none */
static inline double blocks_us(const bench_blocks *k, int on)
{
    return k->n[on] ? 1e6 * k->s[on] / (double)k->n[on] : 0.0;
}

#endif /* BENCH_AGENT_BLOCKS_H */
