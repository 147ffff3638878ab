/* fpfiles.h - LSFP-1 of many files at once: a directory walk and a pool of threads that hashes pieces of files (LSFP-1
 * is a sum over positioned words, so the pieces of a large file add up). */
#ifndef CLI_FPFILES_H
#define CLI_FPFILES_H

#include <stddef.h>
#include <stdint.h>

/* One file to fingerprint. */
typedef struct fpf_item {
    char *path;    /* owned */
    uint64_t size; /* bytes, from fstat when hashing starts */
    uint64_t acc;  /* the LSFP-1 accumulator, summed over the pieces */
    uint64_t fp;   /* LSFP-1, once done without error */
    int err;       /* an errno of opening or reading it; 0 when fp is valid */
    int skip;      /* left alone by fpf_hash (stdin, which the caller reads itself) */
    int fd;        /* internal */
} fpf_item;

typedef struct fpf_list {
    fpf_item *v;
    size_t n, cap;
} fpf_list;

/* fpf_add - append `path` (copied). Returns 0, or -1 when out of memory. */
int fpf_add(fpf_list *l, const char *path);

/* fpf_walk - append every regular file under directory `dir`, recursively:
 * a depth-first walk with the names of each directory in byte order, so a
 * manifest lists the same files in the same order on every machine.
 * Symbolic links are not followed. Returns 0, or -1 with a sentence in
 * `why` (a directory that cannot be read, out of memory). */
int fpf_walk(fpf_list *l, const char *dir, char *why, size_t cap);

/* fpf_hash - fingerprint every item with `threads` threads (at least 1).
 * Files are cut into 64 MiB pieces at multiples of 8 bytes, each hashed at
 * its global word position from its own reads, so one large file keeps
 * every thread busy and many small ones do too. Each item gets its fp, or
 * its err (a file that cannot be opened, read, or that changed size while
 * read). Returns 0, or -1 when out of memory or no thread could start. */
int fpf_hash(fpf_list *l, int threads);

void fpf_release(fpf_list *l);

/* fpf_default_threads - the thread count `lockstep fp -r` uses unless told:
 * the CPUs this process may run on, at most 16. */
int fpf_default_threads(void);

#endif /* CLI_FPFILES_H */
