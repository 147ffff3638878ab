/* ckpt.c - lockstep-train checkpoints: fixed little-endian header, three float arrays, CRC32C trailer. */
#include "kernels/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/fsutil.h"
#include "include/lockstep.h"

#define HDR_BYTES 128

int ckpt_step_dir(const char *dir, int64_t step, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s/step-%08" PRId64, dir, step);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static unsigned char *put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    return p + 8;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* encode_header - the 128-byte header; unused bytes are zero. */
static void encode_header(const ckpt_state *s, unsigned char *h)
{
    memset(h, 0, HDR_BYTES);
    memcpy(h, CKPT_MAGIC, 8);
    unsigned char *p = h + 8;
    p = put64(p, (uint64_t)s->step);
    p = put64(p, (uint64_t)(uint32_t)s->rank | (uint64_t)(uint32_t)s->world << 32);
    p = put64(p, s->seed);
    p = put64(p, (uint64_t)(uint32_t)s->dims.d_in | (uint64_t)(uint32_t)s->dims.vocab << 32);
    p = put64(p, (uint64_t)(uint32_t)s->dims.d_emb | (uint64_t)(uint32_t)s->dims.hidden << 32);
    p = put64(p, (uint64_t)(uint32_t)s->dims.d_out | (uint64_t)(uint32_t)s->batch << 32);
    p = put64(p, s->dataset);
    p = put64(p, s->data_pos);
    p = put64(p, s->rng_ctr);
    p = put64(p, (uint64_t)s->adam_t);
    put64(p, s->n_params);
}

static void decode_header(const unsigned char *h, ckpt_state *s)
{
    const unsigned char *p = h + 8;
    uint64_t w;
    s->step = (int64_t)get64(p), p += 8;
    w = get64(p), p += 8;
    s->rank = (int)(uint32_t)w;
    s->world = (int)(uint32_t)(w >> 32);
    s->seed = get64(p), p += 8;
    w = get64(p), p += 8;
    s->dims.d_in = (int)(uint32_t)w;
    s->dims.vocab = (int)(uint32_t)(w >> 32);
    w = get64(p), p += 8;
    s->dims.d_emb = (int)(uint32_t)w;
    s->dims.hidden = (int)(uint32_t)(w >> 32);
    w = get64(p), p += 8;
    s->dims.d_out = (int)(uint32_t)w;
    s->batch = (int)(uint32_t)(w >> 32);
    s->dataset = get64(p), p += 8;
    s->data_pos = get64(p), p += 8;
    s->rng_ctr = get64(p), p += 8;
    s->adam_t = (int64_t)get64(p), p += 8;
    s->n_params = get64(p);
}

int ckpt_save(const char *dir, const ckpt_state *s, char *why, size_t cap)
{
    char sdir[4096], path[4200], tmp[4300];
    unsigned char h[HDR_BYTES];
    if (ckpt_step_dir(dir, s->step, sdir, sizeof(sdir)) < 0) {
        snprintf(why, cap, "checkpoint directory path is too long");
        return -1;
    }
    if (fs_mkdir_p(sdir) < 0) {
        snprintf(why, cap, "cannot create checkpoint directory %s: %s", sdir, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/rank-%05d.ckpt", sdir, s->rank);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(why, cap, "cannot create checkpoint %s: %s", tmp, strerror(errno));
        return -1;
    }
    encode_header(s, h);
    size_t n = (size_t)s->n_params * sizeof(float);
    uint32_t crc = crc32c_update(0, h, sizeof(h));
    crc = crc32c_update(crc, s->params, n);
    crc = crc32c_update(crc, s->m, n);
    crc = crc32c_update(crc, s->v, n);
    unsigned char trailer[4] = {(unsigned char)crc, (unsigned char)(crc >> 8), (unsigned char)(crc >> 16),
                                (unsigned char)(crc >> 24)};
    if (fs_write_all(fd, h, sizeof(h)) < 0 || fs_write_all(fd, s->params, n) < 0 || fs_write_all(fd, s->m, n) < 0 ||
        fs_write_all(fd, s->v, n) < 0 || fs_write_all(fd, trailer, 4) < 0 || fsync(fd) < 0) {
        snprintf(why, cap, "cannot write checkpoint %s: %s", tmp, strerror(errno));
        goto out_close;
    }
    if (close(fd) < 0) {
        snprintf(why, cap, "cannot write checkpoint %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) < 0) {
        snprintf(why, cap, "cannot rename %s into place: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;

out_close:
    close(fd);
    unlink(tmp);
    return -1;
}

int ckpt_mark_complete(const char *dir, int64_t step, char *why, size_t cap)
{
    char sdir[4096], path[4200];
    if (ckpt_step_dir(dir, step, sdir, sizeof(sdir)) < 0) {
        snprintf(why, cap, "checkpoint directory path is too long");
        return -1;
    }
    snprintf(path, sizeof(path), "%s/COMPLETE", sdir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || close(fd) < 0) {
        snprintf(why, cap, "cannot mark checkpoint %s complete: %s", sdir, strerror(errno));
        return -1;
    }
    return 0;
}

int64_t ckpt_latest(const char *dir, char *why, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(why, cap, "cannot read checkpoint directory %s: %s", dir, strerror(errno));
        return -1;
    }
    int64_t best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, "step-", 5) != 0)
            continue;
        errno = 0;
        long long st = strtoll(e->d_name + 5, &end, 10);
        if (errno || *end || st < 0 || st <= best)
            continue;
        char mark[4400];
        struct stat sb;
        snprintf(mark, sizeof(mark), "%s/%s/COMPLETE", dir, e->d_name);
        if (stat(mark, &sb) == 0)
            best = st;
    }
    closedir(d);
    if (best < 0)
        snprintf(why, cap, "no complete checkpoint in %s", dir);
    return best;
}

/* complete - 1 when step directory `sdir` holds its COMPLETE mark. */
static int complete(const char *sdir)
{
    char mark[4200];
    struct stat sb;
    snprintf(mark, sizeof(mark), "%s/COMPLETE", sdir);
    return stat(mark, &sb) == 0;
}

int64_t ckpt_resolve(const char *resume, int64_t want, char *dir, size_t dcap, char *why, size_t cap)
{
    char sdir[4096];
    if (strlen(resume) >= dcap) {
        snprintf(why, cap, "checkpoint directory path is too long");
        return -1;
    }
    if (want >= 0) {
        snprintf(dir, dcap, "%s", resume);
        if (ckpt_step_dir(resume, want, sdir, sizeof(sdir)) < 0 || !complete(sdir)) {
            snprintf(why, cap, "no complete checkpoint of step %lld in %s (%s/COMPLETE is missing)", (long long)want,
                     resume, sdir);
            return -1;
        }
        return want;
    }
    /* A step directory itself: .../step-NNNNNNNN with its mark. */
    size_t len = strlen(resume);
    while (len > 1 && resume[len - 1] == '/')
        len--;
    const char *base = resume + len;
    while (base > resume && base[-1] != '/')
        base--;
    char *end;
    long long st = -1;
    if (!strncmp(base, "step-", 5)) {
        errno = 0;
        st = strtoll(base + 5, &end, 10);
        if (errno || end != resume + len || st < 0)
            st = -1;
    }
    snprintf(sdir, sizeof(sdir), "%.*s", (int)len, resume);
    if (st >= 0 && complete(sdir)) {
        size_t dl = (size_t)(base - resume);
        while (dl > 1 && resume[dl - 1] == '/')
            dl--;
        snprintf(dir, dcap, "%.*s", dl ? (int)dl : 1, dl ? resume : ".");
        return st;
    }
    snprintf(dir, dcap, "%s", resume);
    return ckpt_latest(resume, why, cap);
}

int ckpt_load(const char *dir, int64_t step, int rank, ckpt_state *s, char *why, size_t cap)
{
    char sdir[4096], path[4200];
    fs_blob b;
    memset(s, 0, sizeof(*s));
    if (ckpt_step_dir(dir, step, sdir, sizeof(sdir)) < 0) {
        snprintf(why, cap, "checkpoint directory path is too long");
        return -1;
    }
    snprintf(path, sizeof(path), "%s/rank-%05d.ckpt", sdir, rank);
    if (fs_blob_load(&b, path) < 0) {
        snprintf(why, cap, "cannot read checkpoint %s: %s", path, strerror(errno));
        return -1;
    }
    const unsigned char *p = b.data;
    if (b.len < HDR_BYTES + 4 || memcmp(p, CKPT_MAGIC, 8) != 0) {
        snprintf(why, cap, "%s is not a lockstep-train checkpoint", path);
        goto out_release;
    }
    decode_header(p, s);
    size_t n = (size_t)s->n_params * sizeof(float);
    if (s->n_params > ((uint64_t)1 << 31) || b.len != HDR_BYTES + 3 * n + 4) {
        snprintf(why, cap, "%s: size %zu does not match its %" PRIu64 " parameters", path, b.len, s->n_params);
        goto out_release;
    }
    uint32_t want = (uint32_t)p[b.len - 4] | (uint32_t)p[b.len - 3] << 8 | (uint32_t)p[b.len - 2] << 16 |
                    (uint32_t)p[b.len - 1] << 24;
    if (crc32c(p, b.len - 4) != want) {
        snprintf(why, cap, "%s is corrupt: CRC32C mismatch", path);
        goto out_release;
    }
    if (s->rank != rank || s->step != step) {
        snprintf(why, cap, "%s holds rank %d step %" PRId64 ", not rank %d step %" PRId64, path, s->rank, s->step, rank,
                 step);
        goto out_release;
    }
    s->params = malloc(n ? n : 1);
    s->m = malloc(n ? n : 1);
    s->v = malloc(n ? n : 1);
    if (!s->params || !s->m || !s->v) {
        snprintf(why, cap, "out of memory loading %s", path);
        goto out_free;
    }
    memcpy(s->params, p + HDR_BYTES, n);
    memcpy(s->m, p + HDR_BYTES + n, n);
    memcpy(s->v, p + HDR_BYTES + 2 * n, n);
    fs_blob_release(&b);
    return 0;

out_free:
    free(s->params);
    free(s->m);
    free(s->v);
    s->params = s->m = s->v = NULL;
out_release:
    fs_blob_release(&b);
    return -1;
}

int ckpt_record_state(const ckpt_state *s, int kind, int optimizer)
{
    int64_t shape[1] = {(int64_t)s->n_params};
    size_t n = (size_t)s->n_params * sizeof(float);
    if (ls_state_begin(s->step, kind) < 0)
        return -1;
    int rc = ls_state("params", s->params, n, LS_F32, 1, shape) < 0 ||
                     (optimizer && (ls_state("adam.m", s->m, n, LS_F32, 1, shape) < 0 ||
                                    ls_state("adam.v", s->v, n, LS_F32, 1, shape) < 0 ||
                                    ls_state("adam_t", &s->adam_t, sizeof(s->adam_t), LS_I64, 0, NULL) < 0)) ||
                     ls_state("data_pos", &s->data_pos, sizeof(s->data_pos), LS_U64, 0, NULL) < 0 ||
                     ls_state("rng_ctr", &s->rng_ctr, sizeof(s->rng_ctr), LS_U64, 0, NULL) < 0
                 ? -1
                 : 0;
    if (ls_state_end() < 0)
        rc = -1;
    return rc;
}

void ckpt_resume_fault(ckpt_state *s, const char *what)
{
    if (!what)
        return;
    if (!strcmp(what, "moments") || !strcmp(what, "optimizer")) {
        memset(s->m, 0, (size_t)s->n_params * sizeof(float));
        memset(s->v, 0, (size_t)s->n_params * sizeof(float));
        if (!strcmp(what, "optimizer"))
            s->adam_t = 0;
    } else if (!strcmp(what, "rng")) {
        s->rng_ctr = 0;
    } else if (!strcmp(what, "data")) {
        s->data_pos = 0;
    }
}
