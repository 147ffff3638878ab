/* fsutil.c - small file-system helpers: mkdir -p, whole-file mapping, full writes, files private to a user. */
#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int fs_mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);

    if (n == 0 || n >= sizeof(buf)) {
        errno = n ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(buf, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int read_all(fs_blob *b, int fd)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return -1;
    for (;;) {
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            errno = e;
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    b->data = buf;
    b->len = len;
    b->mapped = 0;
    return 0;
}

int fs_blob_load(fs_blob *b, const char *path)
{
    memset(b, 0, sizeof(*b));
    if (strcmp(path, "-") == 0)
        return read_all(b, STDIN_FILENO);

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        errno = EISDIR;
        return -1;
    }
    int rc;
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            rc = read_all(b, fd);
        } else {
            madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
            b->data = p;
            b->len = (size_t)st.st_size;
            b->mapped = 1;
            rc = 0;
        }
    } else {
        rc = read_all(b, fd);
    }
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

void fs_blob_release(fs_blob *b)
{
    if (b->mapped)
        munmap(b->data, b->len);
    else
        free(b->data);
    memset(b, 0, sizeof(*b));
}

int fs_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int fs_private_check(int fd, int strict, char *why, size_t cap)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        snprintf(why, cap, "cannot stat it: %s", strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, cap, "it is not a regular file");
        return -1;
    }
    if (strict && st.st_uid != geteuid()) {
        snprintf(why, cap, "it belongs to uid %u, not to you (uid %u)", (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & (strict ? 077 : 007)) {
        snprintf(why, cap, "its mode %04o lets %s read or write it", (unsigned)(st.st_mode & 07777),
                 (st.st_mode & 007) ? "every user" : "its group");
        return -1;
    }
    return 0;
}
