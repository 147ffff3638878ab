/* fsutil.h - small file-system helpers: mkdir -p, whole-file mapping, full writes, files private to a user. */
#ifndef COMMON_FSUTIL_H
#define COMMON_FSUTIL_H

#include <stddef.h>

/* fs_mkdir_p - create `path` and its missing parents (mode 0755 minus umask).
 * Returns 0 (also when it exists as a directory) or -1 with errno set. */
int fs_mkdir_p(const char *path);

/* A file's bytes in memory, mapped read-only (or read, for pipes). */
typedef struct fs_blob {
    void *data;
    size_t len;
    int mapped;
} fs_blob;

/* fs_blob_load - map (or read) the whole of `path`; "-" reads stdin. Returns
 * 0, or -1 with errno set. Release with fs_blob_release. */
int fs_blob_load(fs_blob *b, const char *path);
void fs_blob_release(fs_blob *b);

/* fs_write_all - write `n` bytes, retrying short writes and EINTR. Returns 0
 * or -1 with errno set. */
int fs_write_all(int fd, const void *buf, size_t n);

/* fs_private_check - 0 when the open file `fd` may hold this user's secret: a regular file that others (neither
 * its owner nor its group) can neither read nor write and, when `strict`, owned by the effective user and closed to
 * its group too (mode 0600 or 0400). Else -1 with a user-facing reason in `why` naming the mode or owner found. */
int fs_private_check(int fd, int strict, char *why, size_t cap);

#endif /* COMMON_FSUTIL_H */
