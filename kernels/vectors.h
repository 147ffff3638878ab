/* vectors.h - the LSFP-1 test vectors (tests/data/lsfp1-vectors.json) as buffers, for the kernel checks. */
#ifndef KERNELS_VECTORS_H
#define KERNELS_VECTORS_H

#include <stddef.h>
#include <stdint.h>

typedef struct lsk_vector {
    char name[64];
    unsigned char *data; /* nbytes (+1) bytes, owned */
    size_t nbytes;
    uint64_t fp;
    uint64_t *chunks; /* fp_chunk_count(nbytes) partials, owned */
    size_t n_chunks;
} lsk_vector;

/* lsk_vectors_load - every case of the JSON file at `path`, with the
 * generated ones ("pattern_*") built from their formulas. Returns the count
 * and an array in *out (free with lsk_vectors_free), or -1 with `why`. */
int lsk_vectors_load(const char *path, lsk_vector **out, char *why, size_t cap);

/* lsk_vector_pattern - fill p[0..n) for a case given by formula rather than hex ("pattern_4096",
 * "pattern_3MiB_plus_5": see their "desc"). Returns 0, or -1 for a name it does not know. */
int lsk_vector_pattern(const char *name, unsigned char *p, size_t n);

/* lsk_vectors_free - free the `n` vectors of `v` and the array itself. */
void lsk_vectors_free(lsk_vector *v, int n);

/* lsk_fill_random - deterministic pseudo-random bytes from `seed`. */
void lsk_fill_random(unsigned char *p, size_t n, uint64_t seed);

#endif /* KERNELS_VECTORS_H */
