/* manifest.c - benchmark: `lockstep fp -r` (cli/fpfiles.c) against a plain read of the same files, one thread and all
 * threads, in one run.
 *
 * Writes a checkpoint-like tree (one 512 MiB file and sixteen of 32 MiB) in a temporary directory, reads it
 * once to bring it into the page cache, then measures in interleaved rounds (median of the rounds): a plain
 * read with the same thread pool shape (64 MiB pieces, 256 KiB preads, nothing computed), and fpf_hash,
 * each with 1 thread and with every CPU. Prints one JSON line; fp_vs_read near 1 means LSFP-1 keeps up
 * with reading. env: MANIFEST_DIR (where to write; default /tmp), MANIFEST_MB (total, default 1024).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/fpfiles.h"

#define ROUNDS 5
#define PIECE ((uint64_t)64 << 20)
#define READ ((size_t)256 << 10) /* as cli/fpfiles.c reads */

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

/* The plain read: the same pieces as fpf_hash, read and touched, not hashed. */
typedef struct rd_pool {
    fpf_list *l;
    size_t file;
    uint64_t off;
    pthread_mutex_t mu;
    uint64_t sink;
} rd_pool;

static void *rd_worker(void *arg)
{
    rd_pool *p = arg;
    unsigned char *buf = malloc(READ);
    uint64_t local = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->file < p->l->n && p->off >= p->l->v[p->file].size) {
            p->file++;
            p->off = 0;
        }
        if (p->file >= p->l->n) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        fpf_item *it = &p->l->v[p->file];
        uint64_t off = p->off, len = it->size - off < PIECE ? it->size - off : PIECE;
        p->off += len;
        int fd = it->fd;
        pthread_mutex_unlock(&p->mu);
        for (uint64_t done = 0; done < len;) {
            size_t want = len - done < READ ? (size_t)(len - done) : READ;
            ssize_t r = pread(fd, buf, want, (off_t)(off + done));
            if (r <= 0)
                break;
            local += buf[0] + buf[r - 1];
            done += (uint64_t)r;
        }
    }
    __atomic_fetch_add(&p->sink, local, __ATOMIC_RELAXED);
    free(buf);
    return NULL;
}

static void plain_read(fpf_list *l, int threads)
{
    rd_pool p = {.l = l};
    pthread_mutex_init(&p.mu, NULL);
    for (size_t i = 0; i < l->n; i++)
        l->v[i].fd = open(l->v[i].path, O_RDONLY | O_CLOEXEC);
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, rd_worker, &p);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    for (size_t i = 0; i < l->n; i++)
        close(l->v[i].fd);
    pthread_mutex_destroy(&p.mu);
}

static int write_file(const char *path, uint64_t bytes, uint64_t *seed)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    uint64_t *buf = malloc(READ);
    for (uint64_t done = 0; done < bytes;) {
        size_t n = bytes - done < READ ? (size_t)(bytes - done) : READ;
        for (size_t i = 0; i < n / 8; i++) {
            *seed ^= *seed << 13, *seed ^= *seed >> 7, *seed ^= *seed << 17;
            buf[i] = *seed;
        }
        if (write(fd, buf, n) != (ssize_t)n) {
            free(buf);
            close(fd);
            return -1;
        }
        done += n;
    }
    free(buf);
    return close(fd);
}

int main(void)
{
    const char *base = getenv("MANIFEST_DIR") ? getenv("MANIFEST_DIR") : "/tmp";
    long mb = getenv("MANIFEST_MB") ? atol(getenv("MANIFEST_MB")) : 1024;
    if (mb < 64)
        mb = 64;
    char dir[512], path[600];
    snprintf(dir, sizeof(dir), "%s/ls-bench-manifest-XXXXXX", base);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bench/manifest: cannot create a directory under %s: %s\n", base, strerror(errno));
        return 1;
    }
    uint64_t seed = 88172645463325252ULL, big = (uint64_t)mb / 2 << 20, small = (uint64_t)mb / 32 << 20;
    int rc = 1;
    snprintf(path, sizeof(path), "%s/model.bin", dir);
    if (write_file(path, big, &seed) < 0)
        goto out_rm;
    snprintf(path, sizeof(path), "%s/shards", dir);
    mkdir(path, 0755);
    for (int i = 0; i < 16; i++) {
        snprintf(path, sizeof(path), "%s/shards/optim-%02d.bin", dir, i);
        if (write_file(path, small, &seed) < 0)
            goto out_rm;
    }
    fpf_list l = {0};
    char why[600];
    if (fpf_walk(&l, dir, why, sizeof(why)) < 0) {
        fprintf(stderr, "bench/manifest: %s\n", why);
        goto out_rm;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < l.n; i++) {
        struct stat st;
        stat(l.v[i].path, &st);
        l.v[i].size = (uint64_t)st.st_size;
        total += l.v[i].size;
    }
    int all = fpf_default_threads();
    plain_read(&l, all); /* into the page cache */
    double t_read1[ROUNDS], t_fp1[ROUNDS], t_read[ROUNDS], t_fp[ROUNDS];
    uint64_t first_fp = 0;
    int stable = 1;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now();
        plain_read(&l, 1);
        double t1 = now();
        fpf_hash(&l, 1);
        double t2 = now();
        plain_read(&l, all);
        double t3 = now();
        fpf_hash(&l, all);
        double t4 = now();
        t_read1[r] = t1 - t0, t_fp1[r] = t2 - t1, t_read[r] = t3 - t2, t_fp[r] = t4 - t3;
        uint64_t x = 0;
        for (size_t i = 0; i < l.n; i++)
            x ^= l.v[i].fp + i;
        if (r == 0)
            first_fp = x;
        stable &= x == first_fp;
    }
    qsort(t_read1, ROUNDS, sizeof(double), cmp_double);
    qsort(t_fp1, ROUNDS, sizeof(double), cmp_double);
    qsort(t_read, ROUNDS, sizeof(double), cmp_double);
    qsort(t_fp, ROUNDS, sizeof(double), cmp_double);
    double gb = (double)total / 1e9;
    printf("{\"bench\": \"fp_manifest\", \"files\": %zu, \"bytes\": %llu, \"threads\": %d, \"rounds\": %d, "
           "\"read_GBps_1t\": %.2f, \"fp_GBps_1t\": %.2f, \"fp_vs_read_1t\": %.2f, "
           "\"read_GBps\": %.2f, \"fp_GBps\": %.2f, \"fp_vs_read\": %.2f, \"fp_speedup_threads\": %.2f, "
           "\"same_fingerprints_every_round\": %s}\n",
           l.n, (unsigned long long)total, all, ROUNDS, gb / t_read1[ROUNDS / 2], gb / t_fp1[ROUNDS / 2],
           t_read1[ROUNDS / 2] / t_fp1[ROUNDS / 2], gb / t_read[ROUNDS / 2], gb / t_fp[ROUNDS / 2],
           t_read[ROUNDS / 2] / t_fp[ROUNDS / 2], t_fp1[ROUNDS / 2] / t_fp[ROUNDS / 2], stable ? "true" : "false");
    rc = stable ? 0 : 1;
    fpf_release(&l);
out_rm:
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    if (system(path) != 0)
        fprintf(stderr, "bench/manifest: could not remove %s\n", dir);
    return rc;
}
