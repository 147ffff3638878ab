/* toy_train.c - a small least-squares trainer that fingerprints its steps through the public API.
 *
 * usage: toy_train [--steps N] [--perturb-step K]
 * Each process is one rank (LOCKSTEP_RANK); its data come from a counter-based
 * generator seeded by the rank, so two runs compute the same bits unless
 * --perturb-step flips the lowest bit of one weight at step K.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lockstep.h>

#define DIM 64
#define BATCH 32

/* A counter-based generator: the same (seed, counter) always gives the same value. */
static double uniform(uint64_t seed, uint64_t counter)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + counter;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (double)(x >> 11) / 9007199254740992.0 - 0.5;
}

static int fail(const char *what)
{
    fprintf(stderr, "toy_train: %s: %s\n", what, ls_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    long steps = 20, perturb = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atol(argv[++i]);
        else if (strcmp(argv[i], "--perturb-step") == 0 && i + 1 < argc)
            perturb = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: toy_train [--steps N] [--perturb-step K]\n");
            return 2;
        }
    }
    if (ls_init() < 0)
        return fail("ls_init");
    uint64_t seed = 1000 + (uint64_t)ls_rank();

    double w[DIM] = {0}, truth[DIM], grad[DIM];
    for (int j = 0; j < DIM; j++)
        truth[j] = uniform(7, (uint64_t)j);
    int64_t shape[1] = {DIM};

    for (long step = 0; step < steps; step++) {
        ls_step_begin(step);
        double loss = 0;
        memset(grad, 0, sizeof(grad));
        for (int b = 0; b < BATCH; b++) {
            double x[DIM], pred = 0, target = 0;
            for (int j = 0; j < DIM; j++) {
                x[j] = uniform(seed, ((uint64_t)step * BATCH + (uint64_t)b) * DIM + (uint64_t)j);
                pred += w[j] * x[j];
                target += truth[j] * x[j];
            }
            double err = pred - target;
            loss += err * err / BATCH;
            for (int j = 0; j < DIM; j++)
                grad[j] += 2 * err * x[j] / BATCH;
        }
        double norm = 0;
        for (int j = 0; j < DIM; j++)
            norm += grad[j] * grad[j];
        if (ls_metric("loss", loss) < 0 || ls_metric("grad_norm", norm) < 0)
            return fail("ls_metric");
        if (ls_tensor("linear.grad", grad, sizeof(grad), LS_F64, 1, shape) < 0)
            return fail("ls_tensor");
        for (int j = 0; j < DIM; j++)
            w[j] -= 0.1 * grad[j];
        if (step == perturb) { /* a one-bit fault, as a flaky GPU would make */
            uint64_t bits;
            memcpy(&bits, &w[3], 8);
            bits ^= 1;
            memcpy(&w[3], &bits, 8);
        }
        if (ls_tensor("linear.weight", w, sizeof(w), LS_F64, 1, shape) < 0)
            return fail("ls_tensor");
        ls_step_end();
        if (step == steps - 1)
            printf("rank %d: final loss %.6g after %ld steps\n", ls_rank(), loss, steps);
    }
    ls_shutdown();
    return 0;
}
