/* spool.c - the on-disk spool of one rank: atomic files, batch listing, the meta file and the lock. */
#include "agent/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"

/* open_file - file `name` of the spool with `flags`, never through a link, never blocking on a FIFO; -1 with errno
 * when it cannot be opened or (EINVAL) is not a regular file, (EPERM) belongs to another user of an owned spool. */
static int open_file(const spool *s, const char *name, int flags)
{
    int fd = openat(s->dir_fd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0)
        return -1;
    int e = fstat(fd, &st) < 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : s->owned && st.st_uid != geteuid() ? EPERM : 0;
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* open_dir - s->dir_fd for s->dir, not through a link; -1 with `why`. */
static int open_dir(spool *s, char *why, size_t cap)
{
    s->dir_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s->dir_fd < 0) {
        snprintf(why, cap, "cannot open spool directory %s: %s", s->dir,
                 errno == ELOOP || errno == ENOTDIR ? "it is a link or not a directory" : strerror(errno));
        return -1;
    }
    return 0;
}

static int take_lock(spool *s, int *busy, char *why, size_t cap)
{
    if (busy)
        *busy = 0;
    s->lock_fd = open_file(s, "lock", O_RDWR | O_CREAT);
    if (s->lock_fd < 0) {
        snprintf(why, cap, "cannot open spool lock %s/lock: %s", s->dir,
                 errno == ELOOP    ? "it is a link"
                 : errno == EINVAL ? "not a regular file"
                                   : strerror(errno));
        spool_close(s);
        return -1;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(s->lock_fd);
        s->lock_fd = -1;
        if (e == EWOULDBLOCK && busy)
            *busy = 1;
        snprintf(why, cap, "spool %s is in use by another process", s->dir);
        spool_close(s);
        return -1;
    }
    return 0;
}

int spool_open(spool *s, const char *root, const char *key, unsigned rank, int *busy, char *why, size_t cap)
{
    s->lock_fd = s->dir_fd = -1;
    s->owned = 0;
    int n = snprintf(s->dir, sizeof(s->dir), "%s/%s/rank-%05u", root, key, rank);
    if (n < 0 || (size_t)n >= sizeof(s->dir)) {
        snprintf(why, cap, "spool path under %s is too long", root);
        return -1;
    }
    if (fs_mkdir_p(s->dir) < 0) {
        snprintf(why, cap, "cannot create spool directory %s: %s", s->dir, strerror(errno));
        return -1;
    }
    if (open_dir(s, why, cap) < 0)
        return -1;
    struct stat st;
    if (fstat(s->dir_fd, &st) < 0 || st.st_uid != geteuid()) { /* made by another user first: not for our token */
        snprintf(why, cap, "spool directory %s belongs to uid %u, not to this process's user", s->dir,
                 (unsigned)st.st_uid);
        spool_close(s);
        return -1;
    }
    fchmod(s->dir_fd, 0700); /* it may hold the job's token */
    return take_lock(s, busy, why, cap);
}

int spool_open_dir(spool *s, const char *dir, int force, int *busy, char *why, size_t cap)
{
    s->lock_fd = s->dir_fd = -1;
    s->owned = !force;
    if (busy)
        *busy = 0;
    if (strlen(dir) >= sizeof(s->dir)) {
        snprintf(why, cap, "spool path %s is too long", dir);
        return -1;
    }
    snprintf(s->dir, sizeof(s->dir), "%s", dir);
    size_t n = strlen(s->dir);
    while (n > 1 && s->dir[n - 1] == '/')
        s->dir[--n] = 0; /* "dir/" would follow a link named dir */
    if (open_dir(s, why, cap) < 0)
        return -1;
    struct stat st;
    if (s->owned && (fstat(s->dir_fd, &st) < 0 || st.st_uid != geteuid())) {
        snprintf(why, cap,
                 "spool %s belongs to uid %u, not to you: its files and the run it names are another "
                 "user's (replay it as that user, or with --force)",
                 s->dir, (unsigned)st.st_uid);
        spool_close(s);
        return -1;
    }
    return take_lock(s, busy, why, cap);
}

void spool_close(spool *s)
{
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    s->lock_fd = s->dir_fd = -1;
}

int spool_put(const spool *s, const char *name, const void *buf, size_t len, char *why, size_t cap)
{
    /* a new file under a name nobody can guess (mkstemp's rule, in the spool's own directory), renamed over `name` */
    char tmp[128];
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        unsigned long long r = 0;
        if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
            r = ((unsigned long long)getpid() << 32) ^ (unsigned long long)time(NULL) ^ (unsigned long long)attempt;
        snprintf(tmp, sizeof(tmp), ".%.60s.%016llx.tmp", name, r);
        fd = openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        snprintf(why, cap, "cannot create a spool file in %s: %s", s->dir, strerror(errno));
        return -1;
    }
    if (fs_write_all(fd, buf, len) < 0) {
        snprintf(why, cap, "cannot write spool file %s/%s: %s", s->dir, tmp, strerror(errno));
        goto out_unlink;
    }
    if (close(fd) < 0) {
        fd = -1;
        snprintf(why, cap, "cannot write spool file %s/%s: %s", s->dir, tmp, strerror(errno));
        goto out_unlink;
    }
    fd = -1;
    if (renameat(s->dir_fd, tmp, s->dir_fd, name) < 0) {
        snprintf(why, cap, "cannot rename spool file to %s/%s: %s", s->dir, name, strerror(errno));
        goto out_unlink;
    }
    return 0;

out_unlink:
    if (fd >= 0)
        close(fd);
    unlinkat(s->dir_fd, tmp, 0);
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
    int fd = open_file(s, name, O_RDONLY);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, cap, "cannot open spool file %s: %s", path,
                 errno == ELOOP    ? "it is a link"
                 : errno == EINVAL ? "not a regular file"
                 : errno == EPERM  ? "it belongs to another user"
                                   : strerror(errno));
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
    return unlinkat(s->dir_fd, name, 0) < 0 && errno != ENOENT ? -1 : 0;
}

int spool_rename(const spool *s, const char *from, const char *to)
{
    return renameat(s->dir_fd, from, s->dir_fd, to);
}

long long spool_size(const spool *s, const char *name)
{
    struct stat st;
    return fstatat(s->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
}

DIR *spool_list(const spool *s)
{
    int fd = openat(s->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    return d;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

long spool_batches(const spool *s, uint64_t **seqs, char *why, size_t cap)
{
    *seqs = NULL;
    DIR *d = spool_list(s);
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
    struct stat st;
    return fstatat(s->dir_fd, SPOOL_MANIFEST, &st, AT_SYMLINK_NOFOLLOW) != 0 &&
           fstatat(s->dir_fd, SPOOL_END, &st, AT_SYMLINK_NOFOLLOW) != 0;
}

int spool_has_held(const spool *s)
{
    DIR *d = spool_list(s);
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
