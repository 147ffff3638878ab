/* fsutil.h - small file-system helpers: mkdir -p, whole-file mapping, full writes. */
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

#endif /* COMMON_FSUTIL_H */
