/* trace.c - the per-rank trace file: a buffered writer of framed records. */
#include "agent/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/fsutil.h"

int trace_open(trace_writer *w, const char *dir, const rec_header *h, char *why, size_t cap)
{
    memset(w, 0, sizeof(*w));
    w->fd = -1;
    if (fs_mkdir_p(dir) < 0) {
        snprintf(why, cap, "cannot create trace directory %s: %s", dir, strerror(errno));
        return -1;
    }
    int n = snprintf(w->path, sizeof(w->path), "%s/" TRACE_FILE_FMT, dir, h->rank);
    if (n < 0 || (size_t)n >= sizeof(w->path)) {
        snprintf(why, cap, "trace directory path is too long");
        return -1;
    }
    w->cap = TRACE_BUF_BYTES;
    w->buf = malloc(w->cap);
    if (!w->buf) {
        snprintf(why, cap, "out of memory for the trace buffer");
        return -1;
    }
    /* Truncate only once this process holds the file: two live processes that claim one
     * rank must not write over each other's trace. */
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        snprintf(why, cap, "cannot create trace file %s: %s", w->path, strerror(errno));
        goto out_free_buf;
    }
    if (flock(w->fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK)
            snprintf(why, cap,
                     "another live process is writing rank %u's trace %s; give each process its own rank "
                     "(LOCKSTEP_RANK) or its own LOCKSTEP_TRACE_DIR",
                     h->rank, w->path);
        else
            snprintf(why, cap, "cannot lock trace file %s: %s", w->path, strerror(errno));
        goto out_close;
    }
    if (ftruncate(w->fd, 0) < 0) {
        snprintf(why, cap, "cannot truncate trace file %s: %s", w->path, strerror(errno));
        goto out_close;
    }
    w->len = rec_header_encode(h, w->buf);
    if (trace_flush(w, why, cap) < 0)
        goto out_close;
    return 0;

out_close:
    close(w->fd);
    w->fd = -1;
out_free_buf:
    free(w->buf);
    w->buf = NULL;
    return -1;
}

int trace_flush(trace_writer *w, char *why, size_t cap)
{
    if (w->fd < 0 || w->len == 0)
        return 0;
    if (fs_write_all(w->fd, w->buf, w->len) < 0) {
        snprintf(why, cap, "cannot write trace file %s: %s", w->path, strerror(errno));
        w->len = 0;
        return -1;
    }
    w->len = 0;
    return 0;
}

int trace_append(trace_writer *w, const rec_record *r, char *why, size_t cap)
{
    if (w->fd < 0) {
        snprintf(why, cap, "trace file is closed");
        return -1;
    }
    size_t need = rec_encoded_size(r);
    if (w->len + need > w->cap && trace_flush(w, why, cap) < 0)
        return -1;
    if (need > w->cap) { /* a record with many chunk partials: grow once */
        unsigned char *nb = realloc(w->buf, need);
        if (!nb) {
            snprintf(why, cap, "out of memory for a %zu-byte record", need);
            return -1;
        }
        w->buf = nb;
        w->cap = need;
    }
    if (rec_encode(r, w->buf + w->len) == 0) {
        rec_check(r, why, cap);
        return -1;
    }
    w->len += need;
    return 0;
}

int trace_close(trace_writer *w, char *why, size_t cap)
{
    int rc = 0;
    if (w->fd >= 0) {
        rc = trace_flush(w, why, cap);
        if (close(w->fd) < 0 && rc == 0) {
            snprintf(why, cap, "cannot close trace file %s: %s", w->path, strerror(errno));
            rc = -1;
        }
    }
    free(w->buf);
    w->buf = NULL;
    w->fd = -1;
    w->len = w->cap = 0;
    return rc;
}
