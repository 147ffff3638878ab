/* test_lsfp1_dev.c - the GPU kernel's work split (kernels/lsfp1_dev.h), run on the host: tiles, byte loads and
 * chunk partials must give fp_lsfp1_chunks' bits for every vector and random buffers of any size and alignment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/lsfp1.h"
#include "kernels/lsfp1_dev.h"
#include "kernels/vectors.h"

/* emulate - what lsk_lsfp1_async computes, block by block and thread by
 * thread, with `nthreads` threads per block. */
static uint64_t emulate(const unsigned char *p, size_t nbytes, unsigned nthreads, uint64_t *chunks)
{
    size_t nparts = chunks ? fp_chunk_count(nbytes) : 1;
    uint64_t parts[64] = {0};
    assert_true(nparts <= 64);
    uint64_t ntiles = lsk_tiles(nbytes);
    for (uint64_t t = 0; t < ntiles; t++) {
        uint64_t acc = 0;
        for (unsigned tid = 0; tid < nthreads; tid++)
            acc += lsk_tile_thread_acc(p, nbytes, t, tid, nthreads);
        parts[chunks ? lsk_tile_chunk(t) : 0] += acc;
    }
    uint64_t acc = 0;
    for (size_t c = 0; c < nparts; c++) {
        acc += parts[c];
        if (chunks)
            chunks[c] = parts[c];
    }
    return lsk_fmix64(acc ^ (nbytes * FP_LEN_KEY) ^ FP_DOMAIN);
}

static void test_tiles_fit_chunks(void **state)
{
    (void)state;
    assert_int_equal(FP_CHUNK_WORDS % LSK_TILE_WORDS, 0);
    assert_int_equal(lsk_tiles(0), 0);
    assert_int_equal(lsk_tiles(1), 1);
    assert_int_equal(lsk_tiles(LSK_TILE_WORDS * 8), 1);
    assert_int_equal(lsk_tiles(LSK_TILE_WORDS * 8 + 1), 2);
    assert_int_equal(lsk_tile_chunk(LSK_TILES_PER_CHUNK - 1), 0);
    assert_int_equal(lsk_tile_chunk(LSK_TILES_PER_CHUNK), 1);
    for (uint64_t x = 1; x < 1000000; x = x * 3 + 1)
        assert_true(lsk_fmix64(x) == fp_fmix64(x));
}

static void test_vectors(void **state)
{
    (void)state;
    lsk_vector *v;
    char why[512];
    int n = lsk_vectors_load("tests/data/lsfp1-vectors.json", &v, why, sizeof(why));
    if (n < 0)
        fail_msg("%s (run from the repository root)", why);
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) {
        uint64_t chunks[64];
        assert_true(v[i].n_chunks <= 64);
        uint64_t got = emulate(v[i].data, v[i].nbytes, LSK_THREADS, chunks);
        if (got != v[i].fp)
            fail_msg("vector %s: %016llx, want %016llx", v[i].name, (unsigned long long)got,
                     (unsigned long long)v[i].fp);
        for (size_t c = 0; c < v[i].n_chunks; c++)
            assert_true(chunks[c] == v[i].chunks[c]);
        assert_true(emulate(v[i].data, v[i].nbytes, 96, NULL) == v[i].fp); /* any block size */
    }
    lsk_vectors_free(v, n);
}

static void test_random_sizes_and_alignments(void **state)
{
    (void)state;
    const size_t max = 3 * FP_CHUNK_BYTES + 4096;
    unsigned char *buf = malloc(max + 16);
    assert_non_null(buf);
    lsk_fill_random(buf, max + 16, 11);
    uint64_t s = 99;
    for (int k = 0; k < 60; k++) {
        s = fp_fmix64(s + 1);
        size_t n = k < 40 ? s % 70000 : s % max; /* mostly small; some spanning chunks */
        size_t align = (s >> 40) % 16;
        uint64_t want_chunks[8], got_chunks[8];
        uint64_t want = fp_lsfp1_chunks(buf + align, n, want_chunks);
        uint64_t got = emulate(buf + align, n, LSK_THREADS, got_chunks);
        if (got != want)
            fail_msg("%zu bytes at offset %zu: %016llx, want %016llx", n, align, (unsigned long long)got,
                     (unsigned long long)want);
        assert_memory_equal(got_chunks, want_chunks, fp_chunk_count(n) * sizeof(uint64_t));
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiles_fit_chunks),
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_random_sizes_and_alignments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
