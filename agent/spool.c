/* spool.c - the on-disk spool of one rank: atomic files, batch listing, the meta file and the lock. */
#include "agent/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"

static int take_lock(spool *s, int *busy, char *why, size_t cap)
{
    char path[4200];
    if (busy)
        *busy = 0;
    snprintf(path, sizeof(path), "%s/lock", s->dir);
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
        snprintf(why, cap, "cannot open spool lock %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(s->lock_fd);
        s->lock_fd = -1;
        if (e == EWOULDBLOCK && busy)
            *busy = 1;
        snprintf(why, cap, "spool %s is in use by another process", s->dir);
        return -1;
    }
    return 0;
}

int spool_open(spool *s, const char *root, const char *key, unsigned rank, int *busy, char *why, size_t cap)
{
    s->lock_fd = -1;
    int n = snprintf(s->dir, sizeof(s->dir), "%s/%s/rank-%05u", root, key, rank);
    if (n < 0 || (size_t)n >= sizeof(s->dir)) {
        snprintf(why, cap, "spool path under %s is too long", root);
        return -1;
    }
    if (fs_mkdir_p(s->dir) < 0) {
        snprintf(why, cap, "cannot create spool directory %s: %s", s->dir, strerror(errno));
        return -1;
    }
    chmod(s->dir, 0700); /* it may hold the job's token */
    return take_lock(s, busy, why, cap);
}

int spool_open_dir(spool *s, const char *dir, int *busy, char *why, size_t cap)
{
    s->lock_fd = -1;
    if (strlen(dir) >= sizeof(s->dir)) {
        snprintf(why, cap, "spool path %s is too long", dir);
        return -1;
    }
    snprintf(s->dir, sizeof(s->dir), "%s", dir);
    return take_lock(s, busy, why, cap);
}

void spool_close(spool *s)
{
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    s->lock_fd = -1;
}

int spool_put(const spool *s, const char *name, const void *buf, size_t len, char *why, size_t cap)
{
    char tmp[4200], path[4200];
    snprintf(path, sizeof(path), "%s/%s", s->dir, name);
    snprintf(tmp, sizeof(tmp), "%s/.%s.%ld.tmp", s->dir, name, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, cap, "cannot create spool file %s: %s", tmp, strerror(errno));
        return -1;
    }
    if (fs_write_all(fd, buf, len) < 0) {
        snprintf(why, cap, "cannot write spool file %s: %s", tmp, strerror(errno));
        goto out_unlink;
    }
    if (close(fd) < 0) {
        fd = -1;
        snprintf(why, cap, "cannot write spool file %s: %s", tmp, strerror(errno));
        goto out_unlink;
    }
    fd = -1;
    if (rename(tmp, path) < 0) {
        snprintf(why, cap, "cannot rename spool file to %s: %s", path, strerror(errno));
        goto out_unlink;
    }
    return 0;

out_unlink:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return -1;
}

int spool_put_batch(const spool *s, uint64_t seq, const void *buf, size_t len, char *why, size_t cap)
{
    char name[64];
    snprintf(name, sizeof(name), SPOOL_BATCH_FMT, (unsigned long long)seq);
    return spool_put(s, name, buf, len, why, cap);
}

int spool_get(const spool *s, const char *name, unsigned char **buf, size_t *len, char *why, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", s->dir, name);
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, cap, "cannot open spool file %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        snprintf(why, cap, "cannot stat spool file %s: %s", path, strerror(errno));
        goto out_close;
    }
    unsigned char *b = malloc((size_t)st.st_size + 1);
    if (!b) {
        snprintf(why, cap, "out of memory reading %s", path);
        goto out_close;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(why, cap, "cannot read spool file %s: %s", path, r < 0 ? strerror(errno) : "short read");
            free(b);
            goto out_close;
        }
        got += (size_t)r;
    }
    b[got] = 0;
    close(fd);
    *buf = b;
    *len = got;
    return 1;

out_close:
    close(fd);
    return -1;
}

int spool_remove(const spool *s, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", s->dir, name);
    return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

long spool_batches(const spool *s, uint64_t **seqs, char *why, size_t cap)
{
    *seqs = NULL;
    DIR *d = opendir(s->dir);
    if (!d) {
        snprintf(why, cap, "cannot list spool %s: %s", s->dir, strerror(errno));
        return -1;
    }
    size_t n = 0, ncap = 0;
    uint64_t *v = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        unsigned long long seq;
        char tail[16];
        if (sscanf(e->d_name, "batch-%20llu.%15s", &seq, tail) != 2 || strcmp(tail, "lsbatch") != 0)
            continue;
        if (n == ncap) {
            size_t nc = ncap ? 2 * ncap : 64;
            uint64_t *nv = realloc(v, nc * sizeof(*nv));
            if (!nv) {
                free(v);
                closedir(d);
                snprintf(why, cap, "out of memory listing %s", s->dir);
                return -1;
            }
            v = nv;
            ncap = nc;
        }
        v[n++] = seq;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof(*v), cmp_u64);
    *seqs = v;
    return (long)n;
}

int spool_meta_write(const spool *s, const spool_meta *m, char *why, size_t cap)
{
    size_t need = sizeof(*m) + 256;
    char *buf = malloc(need);
    if (!buf) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    int n = snprintf(buf, need,
                     "server=%s\ntoken=%s\nca_file=%s\nrun_id=%s\nrank=%ld\njob_id=%s\nstep_id=%s\nregister=%s\n",
                     m->server, m->token, m->ca_file, m->run_id, m->rank, m->job_id, m->step_id, m->reg);
    int rc = spool_put(s, SPOOL_META, buf, (size_t)n, why, cap);
    free(buf);
    return rc;
}

static void set_field(char *dst, size_t cap, const char *v)
{
    snprintf(dst, cap, "%s", v);
}

int spool_meta_read(const spool *s, spool_meta *m, char *why, size_t cap)
{
    unsigned char *buf;
    size_t len;
    int rc = spool_get(s, SPOOL_META, &buf, &len, why, cap);
    if (rc <= 0)
        return rc;
    memset(m, 0, sizeof(*m));
    m->rank = -1;
    char *save = NULL;
    for (char *line = strtok_r((char *)buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        const char *v = eq + 1;
        if (!strcmp(line, "server"))
            set_field(m->server, sizeof(m->server), v);
        else if (!strcmp(line, "token"))
            set_field(m->token, sizeof(m->token), v);
        else if (!strcmp(line, "ca_file"))
            set_field(m->ca_file, sizeof(m->ca_file), v);
        else if (!strcmp(line, "run_id"))
            set_field(m->run_id, sizeof(m->run_id), v);
        else if (!strcmp(line, "job_id"))
            set_field(m->job_id, sizeof(m->job_id), v);
        else if (!strcmp(line, "step_id"))
            set_field(m->step_id, sizeof(m->step_id), v);
        else if (!strcmp(line, "register"))
            set_field(m->reg, sizeof(m->reg), v);
        else if (!strcmp(line, "rank"))
            m->rank = strtol(v, NULL, 10);
    }
    free(buf);
    if (m->rank < 0 || !m->server[0]) {
        snprintf(why, cap, "spool meta in %s lacks the server or the rank", s->dir);
        return -1;
    }
    return 1;
}

int spool_is_empty(const spool *s)
{
    uint64_t *seqs;
    char why[64];
    long n = spool_batches(s, &seqs, why, sizeof(why));
    free(seqs);
    if (n != 0)
        return 0;
    char path[4200];
    snprintf(path, sizeof(path), "%s/" SPOOL_MANIFEST, s->dir);
    if (access(path, F_OK) == 0)
        return 0;
    snprintf(path, sizeof(path), "%s/" SPOOL_END, s->dir);
    return access(path, F_OK) != 0;
}

int spool_has_held(const spool *s)
{
    DIR *d = opendir(s->dir);
    if (!d)
        return 0;
    struct dirent *e;
    int held = 0;
    while (!held && (e = readdir(d)))
        held = strncmp(e->d_name, SPOOL_HELD_PREFIX, strlen(SPOOL_HELD_PREFIX)) == 0;
    closedir(d);
    return held;
}

int spool_remove_dir(spool *s)
{
    int rc = 0;
    if (!spool_is_empty(s) || spool_has_held(s)) {
        spool_close(s);
        return -1;
    }
    spool_remove(s, SPOOL_META);
    spool_remove(s, "lock");
    spool_close(s);
    if (rmdir(s->dir) < 0)
        rc = -1;
    char parent[4096];
    snprintf(parent, sizeof(parent), "%s", s->dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = 0;
        rmdir(parent); /* only succeeds when no other rank is left */
    }
    return rc;
}
