/* test_lsfp1.c - LSFP-1 against the shared vectors, a reference loop, and its promised properties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/lsfp1.h"
#include "kernels/vectors.h"

/* The spec, written as plainly as possible: the fast kernels must agree. */
static uint64_t ref_lsfp1(const unsigned char *p, size_t n, uint64_t *chunks)
{
    uint64_t acc = 0;
    for (size_t i = 0; i * 8 < n; i++) {
        uint64_t w = 0;
        for (size_t b = 0; b < 8 && i * 8 + b < n; b++)
            w |= (uint64_t)p[i * 8 + b] << (8 * b);
        uint64_t t = fp_fmix64(w + (uint64_t)(i + 1) * FP_WORD_KEY);
        acc += t;
        if (chunks)
            chunks[i / FP_CHUNK_WORDS] += t;
    }
    return fp_fmix64(acc ^ ((uint64_t)n * FP_LEN_KEY) ^ FP_DOMAIN);
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void fill_random(unsigned char *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)xorshift(&seed);
}

static json_t *load_vectors(void)
{
    const char *paths[] = {"tests/data/lsfp1-vectors.json", "../shared/lsfp1-vectors.json"};
    json_error_t err;
    json_t *v = json_load_file(paths[0], 0, &err);
    if (!v)
        fail_msg("cannot load %s: %s (run from the repository root)", paths[0], err.text);
    /* Where the team's shared copy exists, the repository's copy must be identical. */
    json_t *shared = json_load_file(paths[1], 0, &err);
    if (shared) {
        assert_true(json_equal(v, shared));
        json_decref(shared);
    }
    return v;
}

static uint64_t hex64(const char *s)
{
    return strtoull(s, NULL, 16);
}

static void test_vectors(void **state)
{
    (void)state;
    json_t *v = load_vectors();
    json_t *cases = json_object_get(v, "cases");
    assert_int_equal(json_integer_value(json_object_get(v, "chunk_bytes")), FP_CHUNK_BYTES);
    assert_true(json_array_size(cases) >= 10);

    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        size_t n = (size_t)json_integer_value(json_object_get(c, "nbytes"));
        const char *hex = json_string_value(json_object_get(c, "hex"));
        unsigned char *buf = malloc(n + 1);
        assert_non_null(buf);
        if (hex) {
            assert_int_equal(strlen(hex), 2 * n);
            for (size_t k = 0; k < n; k++) {
                unsigned x;
                assert_int_equal(sscanf(hex + 2 * k, "%2x", &x), 1);
                buf[k] = (unsigned char)x;
            }
        } else if (lsk_vector_pattern(name, buf, n) < 0) { /* kernels/vectors.c: the formulas, once */
            fail_msg("vector %s has no hex and no generator in this test: add one", name);
        }
        uint64_t want = hex64(json_string_value(json_object_get(c, "fp")));
        json_t *parts = json_object_get(c, "chunk_partials");
        size_t nchunks = fp_chunk_count(n);
        assert_int_equal(json_array_size(parts), nchunks);
        uint64_t *chunks = calloc(nchunks + 1, sizeof(uint64_t));
        assert_non_null(chunks);

        if (fp_lsfp1(buf, n) != want)
            fail_msg("vector %s: got %016llx, want %016llx", name, (unsigned long long)fp_lsfp1(buf, n),
                     (unsigned long long)want);
        assert_true(fp_lsfp1_chunks(buf, n, chunks) == want);
        for (size_t k = 0; k < nchunks; k++)
            assert_true(chunks[k] == hex64(json_string_value(json_array_get(parts, k))));

        fp_stream s;
        fp_stream_init(&s);
        for (size_t off = 0; off < n;) { /* odd piece sizes cross every word boundary */
            size_t take = 1 + off % 13;
            if (take > n - off)
                take = n - off;
            fp_stream_update(&s, buf + off, take);
            off += take;
        }
        assert_true(fp_stream_digest(&s) == want);
        free(chunks);
        free(buf);
    }
    json_decref(v);
}

/* Random sizes and misaligned starts: the fast kernels equal the reference. */
static void test_matches_reference(void **state)
{
    (void)state;
    size_t max = 3 * FP_CHUNK_BYTES + 100;
    unsigned char *buf = malloc(max + 8);
    uint64_t *c1 = calloc(8, sizeof(uint64_t)), *c2 = calloc(8, sizeof(uint64_t));
    assert_non_null(buf);
    fill_random(buf, max + 8, 42);
    uint64_t seed = 7;
    for (int t = 0; t < 300; t++) {
        size_t n = t < 200 ? (size_t)t : (size_t)(xorshift(&seed) % max);
        size_t off = (size_t)(xorshift(&seed) % 8);
        memset(c1, 0, 8 * sizeof(uint64_t));
        uint64_t want = ref_lsfp1(buf + off, n, c1);
        assert_true(fp_lsfp1(buf + off, n) == want);
        assert_true(fp_lsfp1_chunks(buf + off, n, c2) == want);
        for (size_t k = 0; k < fp_chunk_count(n); k++)
            assert_true(c1[k] == c2[k]);
    }
    free(c1);
    free(c2);
    free(buf);
}

/* Any single flipped bit changes the fingerprint (fmix64 is a bijection). */
static void test_bit_flip(void **state)
{
    (void)state;
    size_t n = 4099;
    unsigned char *buf = malloc(n);
    fill_random(buf, n, 3);
    uint64_t base = fp_lsfp1(buf, n);
    for (size_t byte = 0; byte < n; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            buf[byte] ^= (unsigned char)(1u << bit);
            if (fp_lsfp1(buf, n) == base)
                fail_msg("flipping bit %d of byte %zu left the fingerprint unchanged", bit, byte);
            buf[byte] ^= (unsigned char)(1u << bit);
        }
    }
    assert_true(fp_lsfp1(buf, n) == base);
    free(buf);
}

/* Swapping two different words changes it: position matters. */
static void test_swapped_words(void **state)
{
    (void)state;
    enum { WORDS = 512 };
    uint64_t w[WORDS];
    uint64_t seed = 11;
    for (int i = 0; i < WORDS; i++)
        w[i] = xorshift(&seed);
    uint64_t base = fp_lsfp1(w, sizeof(w));
    for (int i = 0; i < WORDS; i += 7) {
        for (int j = i + 1; j < WORDS; j += 13) {
            uint64_t t = w[i];
            w[i] = w[j];
            w[j] = t;
            assert_true(fp_lsfp1(w, sizeof(w)) != base);
            w[j] = w[i];
            w[i] = t;
        }
    }
    /* A trailing zero byte changes the length and so the fingerprint. */
    unsigned char z[9] = {0};
    assert_true(fp_lsfp1(z, 8) != fp_lsfp1(z, 9));
}

/* Chunk partials add up to the accumulator, in any order or grouping. */
static void test_chunks_add_up(void **state)
{
    (void)state;
    size_t n = 5 * FP_CHUNK_BYTES + 12345;
    unsigned char *buf = malloc(n);
    fill_random(buf, n, 99);
    size_t nc = fp_chunk_count(n);
    assert_int_equal(nc, 6);
    uint64_t chunks[6];
    uint64_t fp = fp_lsfp1_chunks(buf, n, chunks);
    uint64_t acc = 0;
    for (size_t k = nc; k-- > 0;)
        acc += chunks[k];
    assert_true(fp_finish(acc, n) == fp);
    assert_true(fp_acc(buf, n, 0) == acc);
    /* A piece hashed at its global word index adds up too. */
    size_t cut = 3 * FP_CHUNK_BYTES + 8 * 1000;
    assert_true(fp_acc(buf, cut, 0) + fp_acc(buf + cut, n - cut, cut / 8) == acc);
    free(buf);
}

/* Partials of any chunk size, taken at any word offset, against the reference loop. */
static void test_acc_chunked(void **state)
{
    (void)state;
    size_t n = 3 * 4096 + 1234;
    unsigned char *buf = malloc(n);
    fill_random(buf, n, 5);
    /* the whole, in 4 KiB chunks */
    uint64_t ch[8] = {0}, first;
    assert_int_equal(fp_chunk_span(0, n, 4096, &first), 4);
    uint64_t acc = fp_acc_chunked(buf, n, 0, 4096, ch);
    assert_true(fp_finish(acc, n) == ref_lsfp1(buf, n, NULL));
    for (size_t c = 0; c < 4; c++) {
        size_t len = c < 3 ? 4096 : n - 3 * 4096;
        assert_true(ch[c] == fp_acc(buf + c * 4096, len, c * 512));
    }
    /* a piece from byte 4000 to the end: its span starts in chunk 0, and its partials add to the chunks' rest */
    uint64_t part[8] = {0};
    assert_int_equal(fp_chunk_span(4000, n - 4000, 4096, &first), 4);
    assert_int_equal(first, 0);
    uint64_t pacc = fp_acc_chunked(buf + 4000, n - 4000, 4000, 4096, part);
    assert_true(fp_acc(buf, 4000, 0) + pacc == acc);
    assert_true(fp_acc(buf, 4000, 0) + part[0] == ch[0]);
    for (size_t c = 1; c < 4; c++)
        assert_true(part[c] == ch[c]);
    /* an empty piece touches no chunk */
    assert_int_equal(fp_chunk_span(64, 0, 4096, &first), 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),       cmocka_unit_test(test_matches_reference),
        cmocka_unit_test(test_bit_flip),      cmocka_unit_test(test_swapped_words),
        cmocka_unit_test(test_chunks_add_up), cmocka_unit_test(test_acc_chunked),
    };
    return cmocka_run_group_tests_name("lsfp1", tests, NULL, NULL);
}
