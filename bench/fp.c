/* fp.c - benchmark: LSFP-1 against memcpy and XXH3-64 over one 256 MiB buffer, and the API's cost per record.
 *
 * Prints one JSON line. The three throughputs are measured in interleaved
 * rounds over the same buffer (median of the rounds), so a noisy neighbour
 * slows all three alike and the ratios stay meaningful.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/lsfp1.h"
#include "include/lockstep.h"

#define BUF_BYTES ((size_t)256 << 20)
#define ROUNDS 7

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

static volatile uint64_t sink;

int main(void)
{
    unsigned char *src = aligned_alloc(64, BUF_BYTES), *dst = aligned_alloc(64, BUF_BYTES);
    if (!src || !dst) {
        fprintf(stderr, "bench/fp: cannot allocate 2 x 256 MiB\n");
        return 1;
    }
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < BUF_BYTES / 8; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(src + 8 * i, &x, 8);
    }
    memset(dst, 1, BUF_BYTES); /* fault the pages in before timing */

    double t_fp[ROUNDS], t_cp[ROUNDS], t_xx[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now();
        sink += fp_lsfp1(src, BUF_BYTES);
        double t1 = now();
        memcpy(dst, src, BUF_BYTES);
        sink += dst[r * 4099];
        double t2 = now();
        sink += XXH3_64bits(src, BUF_BYTES);
        double t3 = now();
        t_fp[r] = t1 - t0, t_cp[r] = t2 - t1, t_xx[r] = t3 - t2;
    }
    double gb = (double)BUF_BYTES / 1e9;
    double fp_gbs = gb / median(t_fp, ROUNDS), cp_gbs = gb / median(t_cp, ROUNDS), xx_gbs = gb / median(t_xx, ROUNDS);
    free(dst);

    /* The API writing a real trace file. */
    char dir[] = "/tmp/ls-bench-fp-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("LOCKSTEP_TRACE_DIR", dir, 1);
    setenv("LOCKSTEP_TRACE", "modules", 1);
    setenv("LOCKSTEP_RANK", "0", 1);
    if (ls_init() < 0) {
        fprintf(stderr, "bench/fp: ls_init: %s\n", ls_last_error());
        return 1;
    }
    const long metric_calls = 2000000;
    double t0 = now();
    for (long i = 0; i < metric_calls; i++) {
        if (i % 100 == 0)
            ls_step_begin(i / 100);
        ls_metric("loss", (double)i);
        if (i % 100 == 99)
            ls_step_end();
    }
    double metric_ns = (now() - t0) * 1e9 / (double)metric_calls;

    const size_t tensor_bytes = (size_t)16 << 20;
    const int tensor_calls = 64;
    int64_t shape[1] = {(int64_t)(tensor_bytes / 4)};
    t0 = now();
    for (int i = 0; i < tensor_calls; i++)
        ls_tensor("layer.out", src + (size_t)(i % 8) * tensor_bytes, tensor_bytes, LS_F32, 1, shape);
    double tensor_us_per_mib = (now() - t0) * 1e6 / ((double)tensor_calls * (double)(tensor_bytes >> 20));
    ls_shutdown();
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench/fp: could not remove %s\n", dir);

    printf("{\"bench\":\"fp\",\"buffer_mib\":%zu,\"rounds\":%d,\"lsfp1_gbs\":%.2f,\"memcpy_gbs\":%.2f,"
           "\"xxh3_gbs\":%.2f,\"lsfp1_vs_memcpy\":%.2f,\"lsfp1_vs_xxh3\":%.2f,\"ls_metric_ns\":%.1f,"
           "\"ls_tensor_us_per_mib\":%.1f}\n",
           BUF_BYTES >> 20, ROUNDS, fp_gbs, cp_gbs, xx_gbs, fp_gbs / cp_gbs, fp_gbs / xx_gbs, metric_ns,
           tensor_us_per_mib);
    free(src);
    return 0;
}
