/* fpfiles.c - LSFP-1 of many files at once (cli/fpfiles.h): a sorted directory walk and a thread pool over 64 MiB
 * pieces. */
#include "cli/fpfiles.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/lsfp1.h"

#define PIECE_BYTES ((uint64_t)64 << 20)
#define READ_BYTES ((size_t)256 << 10) /* small enough to stay in L2 between the read and the hash */

int fpf_add(fpf_list *l, const char *path)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 64;
        fpf_item *nv = realloc(l->v, nc * sizeof(*nv));
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = nc;
    }
    char *p = strdup(path);
    if (!p)
        return -1;
    memset(&l->v[l->n], 0, sizeof(l->v[0]));
    l->v[l->n].path = p;
    l->v[l->n].fd = -1;
    l->n++;
    return 0;
}

void fpf_release(fpf_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* walk - add the regular files under `dir`, sorted by name at each level (so the whole is in path order). */
static int walk(fpf_list *l, const char *dir, char *why, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(why, cap, "cannot read directory %s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, ncap = 0;
    int rc = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (n == ncap) {
            size_t nc = ncap ? 2 * ncap : 64;
            char **nn = realloc(names, nc * sizeof(*nn));
            if (!nn)
                goto out_oom;
            names = nn;
            ncap = nc;
        }
        if (!(names[n] = strdup(de->d_name)))
            goto out_oom;
        n++;
    }
    qsort(names, n, sizeof(*names), by_name);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(len);
        if (!path)
            goto out_oom;
        snprintf(path, len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", names[i]);
        struct stat st;
        int got = lstat(path, &st);
        int ok = 0;
        if (got < 0)
            snprintf(why, cap, "cannot stat %s: %s", path, strerror(errno));
        else if (S_ISDIR(st.st_mode))
            ok = walk(l, path, why, cap) == 0;
        else if (S_ISREG(st.st_mode))
            ok = fpf_add(l, path) == 0 || (snprintf(why, cap, "out of memory"), 0);
        else
            ok = 1; /* links, sockets, devices: not checkpoint content */
        free(path);
        if (!ok)
            goto out_free;
    }
    rc = 0;
    goto out_free;
out_oom:
    snprintf(why, cap, "out of memory listing %s", dir);
out_free:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return rc;
}

int fpf_walk(fpf_list *l, const char *dir, char *why, size_t cap)
{
    return walk(l, dir, why, cap);
}

/* The shared work queue: pieces in file order. */
typedef struct pool {
    fpf_list *l;
    size_t file;     /* the file whose next piece is handed out */
    uint64_t offset; /* the next piece's offset in it */
    pthread_mutex_t mu;
} pool;

/* next_piece - the next piece to hash; 0 when none is left. */
static int next_piece(pool *p, size_t *file, uint64_t *off, uint64_t *len)
{
    pthread_mutex_lock(&p->mu);
    int got = 0;
    while (p->file < p->l->n) {
        fpf_item *it = &p->l->v[p->file];
        if (it->skip || it->err || p->offset >= it->size) {
            p->file++;
            p->offset = 0;
            continue;
        }
        *file = p->file;
        *off = p->offset;
        *len = it->size - p->offset < PIECE_BYTES ? it->size - p->offset : PIECE_BYTES;
        p->offset += *len;
        got = 1;
        break;
    }
    pthread_mutex_unlock(&p->mu);
    return got;
}

static void *worker(void *arg)
{
    pool *p = arg;
    unsigned char *buf = malloc(READ_BYTES);
    size_t file;
    uint64_t off, len;
    while (next_piece(p, &file, &off, &len)) {
        fpf_item *it = &p->l->v[file];
        if (!buf) {
            __atomic_store_n(&it->err, ENOMEM, __ATOMIC_RELAXED);
            continue;
        }
        uint64_t acc = 0, done = 0;
        while (done < len) {
            size_t want = len - done < READ_BYTES ? (size_t)(len - done) : READ_BYTES;
            size_t have = 0;
            while (have < want) { /* whole reads, so every piece but a file's last is whole words */
                ssize_t r = pread(it->fd, buf + have, want - have, (off_t)(off + done + have));
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0) {
                    __atomic_store_n(&it->err, r < 0 ? errno : EIO, __ATOMIC_RELAXED); /* EIO: it shrank */
                    goto next;
                }
                have += (size_t)r;
            }
            acc += fp_acc(buf, have, (off + done) / 8);
            done += have;
        }
        __atomic_fetch_add(&it->acc, acc, __ATOMIC_RELAXED);
    next:;
    }
    free(buf);
    return NULL;
}

int fpf_hash(fpf_list *l, int threads)
{
    for (size_t i = 0; i < l->n; i++) {
        fpf_item *it = &l->v[i];
        if (it->skip)
            continue;
        it->acc = 0;
        it->err = 0;
        struct stat st;
        it->fd = open(it->path, O_RDONLY | O_CLOEXEC);
        if (it->fd < 0 || fstat(it->fd, &st) < 0) {
            it->err = errno;
            continue;
        }
        if (!S_ISREG(st.st_mode)) {
            it->err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
            continue;
        }
        it->size = (uint64_t)st.st_size;
        posix_fadvise(it->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    pool p = {.l = l};
    pthread_mutex_init(&p.mu, NULL);
    if (threads < 1)
        threads = 1;
    pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
    int started = 0, rc = 0;
    for (int t = 0; tids && t < threads; t++)
        if (pthread_create(&tids[t], NULL, worker, &p) == 0)
            started++;
        else
            break;
    if (!started) {
        rc = -1;
    } else {
        for (int t = 0; t < started; t++)
            pthread_join(tids[t], NULL);
    }
    free(tids);
    pthread_mutex_destroy(&p.mu);
    for (size_t i = 0; i < l->n; i++) {
        fpf_item *it = &l->v[i];
        if (it->skip)
            continue;
        if (it->fd >= 0) {
            struct stat st;
            if (!it->err && (fstat(it->fd, &st) < 0 || (uint64_t)st.st_size != it->size))
                it->err = EIO; /* it grew or shrank while read: the fingerprint would be of neither */
            close(it->fd);
            it->fd = -1;
        }
        if (!it->err)
            it->fp = fp_finish(it->acc, it->size);
    }
    return rc;
}

int fpf_default_threads(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 16 ? 16 : n;
}
