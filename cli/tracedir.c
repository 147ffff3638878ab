/* tracedir.c - load every rank file of a trace directory and decode its records. */
#include "cli/tracedir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* load_rank - map and decode one trace file into `r`. */
static int load_rank(td_rank *r, const char *path, char *why, size_t cap)
{
    rec_reader rd;
    size_t cap_recs = 1024, cap_words = 0, n_words = 0;

    memset(r, 0, sizeof(*r));
    snprintf(r->path, sizeof(r->path), "%s", path);
    if (fs_blob_load(&r->blob, path) < 0) {
        snprintf(why, cap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    if (rec_reader_init(&rd, r->blob.data, r->blob.len) < 0) {
        snprintf(why, cap, "%s is not a readable trace: %s", path, rd.err);
        goto out_release;
    }
    r->hdr = rd.hdr;
    r->recs = malloc(cap_recs * sizeof(*r->recs));
    if (!r->recs)
        goto out_oom;
    rec_record rec;
    int got;
    while ((got = rec_reader_next(&rd, &rec)) == 1) {
        if (r->n == cap_recs) {
            rec_record *nr = realloc(r->recs, 2 * cap_recs * sizeof(*r->recs));
            if (!nr)
                goto out_oom;
            r->recs = nr;
            cap_recs *= 2;
        }
        /* inputs, chunks and the extension fields other than the site live in the reader's scratch: copied
         * (the name and the site's strings point into the blob, which stays) */
        size_t w = (size_t)rec.n_inputs + rec.n_chunks + ((size_t)rec.ext_len + 7) / 8;
        if (n_words + w > cap_words) {
            size_t nc = cap_words ? cap_words * 2 : 4096;
            while (nc < n_words + w)
                nc *= 2;
            uint64_t *nw = realloc(r->words, nc * sizeof(uint64_t));
            if (!nw)
                goto out_oom;
            r->words = nw;
            cap_words = nc;
        }
        size_t nw = (size_t)rec.n_inputs + rec.n_chunks;
        if (nw)
            memcpy(r->words + n_words, rec.inputs ? rec.inputs : rec.chunks, nw * sizeof(uint64_t));
        if (rec.ext_len)
            memcpy(r->words + n_words + nw, rec.ext, rec.ext_len);
        /* Store offsets now; turned into pointers once `words` stops moving. */
        rec.inputs = (const uint64_t *)(uintptr_t)n_words;
        rec.chunks = (const uint64_t *)(uintptr_t)(n_words + rec.n_inputs);
        rec.ext = (const unsigned char *)(uintptr_t)(n_words + nw);
        n_words += w;
        r->recs[r->n++] = rec;
    }
    if (got < 0)
        goto out_oom;
    for (size_t i = 0; i < r->n; i++) {
        rec_record *x = &r->recs[i];
        x->inputs = x->n_inputs ? r->words + (uintptr_t)x->inputs : NULL;
        x->chunks = x->n_chunks ? r->words + (uintptr_t)x->chunks : NULL;
        x->ext = x->ext_len ? (const unsigned char *)(r->words + (uintptr_t)x->ext) : NULL;
    }
    r->status = rd.status;
    r->err_off = rd.err_off;
    snprintf(r->err, sizeof(r->err), "%s", rd.err);
    rec_reader_release(&rd);
    return 0;

out_oom:
    snprintf(why, cap, "out of memory reading %s", path);
    rec_reader_release(&rd);
out_release:
    free(r->recs);
    free(r->words);
    fs_blob_release(&r->blob);
    r->recs = NULL;
    r->words = NULL;
    return -1;
}

static int by_rank(const void *a, const void *b)
{
    const td_rank *x = a, *y = b;
    return x->hdr.rank < y->hdr.rank ? -1 : x->hdr.rank > y->hdr.rank;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

int td_load(td_run *run, const char *path, char *why, size_t cap)
{
    struct stat st;
    size_t cap_ranks = 8;

    memset(run, 0, sizeof(*run));
    snprintf(run->path, sizeof(run->path), "%s", path);
    run->ranks = calloc(cap_ranks, sizeof(*run->ranks));
    if (!run->ranks) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    if (stat(path, &st) < 0) {
        snprintf(why, cap, "cannot read %s: %s", path, strerror(errno));
        goto out_release;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (load_rank(&run->ranks[0], path, why, cap) < 0)
            goto out_release;
        run->n_ranks = 1;
        run->n_records = run->ranks[0].n;
        return 0;
    }

    DIR *d = opendir(path);
    if (!d) {
        snprintf(why, cap, "cannot open directory %s: %s", path, strerror(errno));
        goto out_release;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!has_suffix(de->d_name, ".lstrace"))
            continue;
        if (run->n_ranks == cap_ranks) {
            td_rank *nr = realloc(run->ranks, 2 * cap_ranks * sizeof(*nr));
            if (!nr) {
                snprintf(why, cap, "out of memory");
                closedir(d);
                goto out_release;
            }
            run->ranks = nr;
            cap_ranks *= 2;
        }
        char file[4096];
        snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
        if (load_rank(&run->ranks[run->n_ranks], file, why, cap) < 0) {
            closedir(d);
            goto out_release;
        }
        run->n_records += run->ranks[run->n_ranks].n;
        run->n_ranks++;
    }
    closedir(d);
    if (run->n_ranks == 0) {
        snprintf(why, cap, "%s holds no trace files (*.lstrace)", path);
        goto out_release;
    }
    qsort(run->ranks, run->n_ranks, sizeof(*run->ranks), by_rank);
    for (size_t i = 1; i < run->n_ranks; i++) {
        if (run->ranks[i].hdr.rank == run->ranks[i - 1].hdr.rank) {
            snprintf(why, cap, "%s and %s both hold rank %u: one directory must hold one run", run->ranks[i - 1].path,
                     run->ranks[i].path, run->ranks[i].hdr.rank);
            goto out_release;
        }
    }
    return 0;

out_release:
    td_release(run);
    return -1;
}

void td_release(td_run *run)
{
    for (size_t i = 0; i < run->n_ranks; i++) {
        free(run->ranks[i].recs);
        free(run->ranks[i].words);
        fs_blob_release(&run->ranks[i].blob);
    }
    free(run->ranks);
    run->ranks = NULL;
    run->n_ranks = 0;
}

const td_rank *td_rank_find(const td_run *run, uint32_t rank)
{
    size_t lo = 0, hi = run->n_ranks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (run->ranks[mid].hdr.rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < run->n_ranks && run->ranks[lo].hdr.rank == rank ? &run->ranks[lo] : NULL;
}
