/* shard_train.c - a tensor-parallel layer whose weight is split by rows over the ranks, recorded as shards, so that
 * runs with different rank counts compare as one logical tensor.
 *
 * usage: shard_train --world N [--steps S] [--flip-step K --flip-byte B]
 * Each process is one rank (LOCKSTEP_RANK) of N. The logical weight is ROWS x COLS f32 (about 3 MiB);
 * rank r holds a block of rows (an uneven split when N does not divide ROWS) and updates every element
 * from its global index only, so the logical tensor is the same bits whatever N is. Each step records the
 * block with ls_tensor_shard at its byte offset in the whole. --flip-step/--flip-byte flips one bit of the
 * byte at global offset B at step K, on whichever rank holds it. `lockstep diff --logical` of a 2-rank and a
 * 4-rank run then matches, and names the tensor and the MiB when a bit was flipped.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lockstep.h>

#define ROWS 1000
#define COLS 800

static int fail(const char *what)
{
    fprintf(stderr, "shard_train: %s: %s\n", what, ls_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    long world = 0, steps = 6, flip_step = -1, flip_byte = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--world") == 0 && i + 1 < argc)
            world = atol(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atol(argv[++i]);
        else if (strcmp(argv[i], "--flip-step") == 0 && i + 1 < argc)
            flip_step = atol(argv[++i]);
        else if (strcmp(argv[i], "--flip-byte") == 0 && i + 1 < argc)
            flip_byte = atol(argv[++i]);
        else
            world = -1;
    }
    if (world < 1) {
        fprintf(stderr, "usage: shard_train --world N [--steps S] [--flip-step K --flip-byte B]\n");
        return 2;
    }
    if (ls_init() < 0)
        return fail("ls_init");
    long rank = ls_rank();
    /* rows [lo, hi) of this rank: the first ROWS % world ranks take one row more */
    long base = ROWS / world, extra = ROWS % world;
    long lo = rank * base + (rank < extra ? rank : extra), hi = lo + base + (rank < extra ? 1 : 0);
    size_t row_bytes = COLS * sizeof(float);
    size_t n = (size_t)(hi - lo) * COLS;
    float *w = malloc(n ? n * sizeof(float) : 1);
    if (!w)
        return 1;
    for (size_t i = 0; i < n; i++) {
        size_t g = (size_t)lo * COLS + i; /* the global element index */
        w[i] = (float)(g % 977) * 0.001f;
    }
    int64_t full[2] = {ROWS, COLS};
    uint64_t total = (uint64_t)ROWS * row_bytes, offset = (uint64_t)lo * row_bytes;
    for (long step = 0; step < steps; step++) {
        ls_step_begin(step);
        for (size_t i = 0; i < n; i++) {
            size_t g = (size_t)lo * COLS + i;
            w[i] = w[i] * 0.99f + (float)((g * 31 + (size_t)step) % 101) * 0.0001f;
        }
        if (step == flip_step && flip_byte >= (long)offset && flip_byte < (long)(offset + n * sizeof(float)))
            ((unsigned char *)w)[flip_byte - (long)offset] ^= 0x01;
        if (ls_tensor_shard("tp.weight", w, n * sizeof(float), offset, total, LS_F32, 2, full) < 0)
            return fail("ls_tensor_shard");
        if (ls_metric("rank_rows", (double)(hi - lo)) < 0) /* a per-rank fact: not a shard, not compared */
            return fail("ls_metric");
        ls_step_end();
    }
    if (getenv("SHARD_TRAIN_DUMP")) { /* the whole tensor of the last step, for `lockstep fp` (one rank per file) */
        char path[512];
        snprintf(path, sizeof(path), "%s.%05ld", getenv("SHARD_TRAIN_DUMP"), rank);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(w, 1, n * sizeof(float), f) != n * sizeof(float) || fclose(f) != 0)
            return 1;
    }
    free(w);
    ls_shutdown();
    return 0;
}
