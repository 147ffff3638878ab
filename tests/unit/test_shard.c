/* test_shard.c - logical tensors from shards (common/shard.h): any tiling adds up to `lockstep fp` of the whole, a
 * flipped byte is named with its chunk, and bad tilings are clear errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/lsfp1.h"
#include "common/recmatch.h"
#include "common/shard.h"

#define TOTAL ((size_t)3 * FP_CHUNK_BYTES + 4100) /* four 1 MiB chunks, the last one short and odd-sized */

/* A shard record of [off, off + len) of `buf`, as ls_tensor_shard makes it. */
typedef struct made {
    rec_record r;
    unsigned char ext[REC_EXT_ENCODED_MAX];
    uint64_t chunks[8];
} made;

static void make_shard(made *m, const unsigned char *buf, uint64_t off, uint64_t len, uint64_t total)
{
    rec_ext x;
    memset(m, 0, sizeof(*m));
    memset(&x, 0, sizeof(x));
    uint64_t first;
    size_t n = fp_chunk_span(off, len, FP_CHUNK_BYTES, &first);
    assert_true(n <= 8);
    x.has_shard = 1;
    x.shard_offset = off;
    x.shard_total = total;
    x.shard_acc = fp_acc_chunked(buf + off, len, off, FP_CHUNK_BYTES, m->chunks);
    m->r.name = "layer.w";
    m->r.name_len = 7;
    m->r.step = 5;
    m->r.dtype = LS_F32;
    m->r.ndim = 1;
    m->r.shape[0] = (int64_t)(total / 4);
    m->r.nbytes = len;
    m->r.fp = fp_finish(x.shard_acc, len);
    m->r.chunks = m->chunks;
    m->r.n_chunks = (uint32_t)n;
    m->r.ext_len = (uint16_t)rec_ext_encode(&x, m->ext);
    m->r.ext = m->ext;
    char why[128];
    assert_int_equal(rec_check(&m->r, why, sizeof(why)), 0);
}

static unsigned char *random_buf(size_t n, uint64_t seed)
{
    unsigned char *p = malloc(n);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (unsigned char)(seed >> 56);
    }
    return p;
}

/* assemble_split - split `buf` at `cuts` (k cut points), assemble, return the tensor (pieces in `ms`, `ps`). */
static int assemble_split(const unsigned char *buf, const uint64_t *cuts, size_t k, made *ms, shard_piece *ps,
                          shard_tensor *t, char *why)
{
    uint64_t lo = 0;
    for (size_t i = 0; i <= k; i++) {
        uint64_t hi = i < k ? cuts[i] : TOTAL;
        make_shard(&ms[i], buf, lo, hi - lo, TOTAL);
        /* ranks recorded out of order: assembly sorts by offset */
        ps[k - i] = (shard_piece){.r = &ms[i].r, .rank = (uint32_t)i};
        lo = hi;
    }
    return shard_assemble(ps, k + 1, t, why, 200);
}

static void test_any_split_is_the_whole(void **state)
{
    (void)state;
    unsigned char *buf = random_buf(TOTAL, 7);
    uint64_t whole_chunks[4];
    uint64_t whole = fp_lsfp1_chunks(buf, TOTAL, whole_chunks);
    assert_int_equal(whole, fp_lsfp1(buf, TOTAL)); /* what `lockstep fp` prints for the file */
    static const uint64_t two[] = {TOTAL / 2 & ~7ULL};
    static const uint64_t three[] = {8, 2 * FP_CHUNK_BYTES + 16};
    static const uint64_t four[] = {FP_CHUNK_BYTES - 8, FP_CHUNK_BYTES + 8, 3 * FP_CHUNK_BYTES};
    const struct {
        const uint64_t *cuts;
        size_t k;
    } splits[] = {{NULL, 0}, {two, 1}, {three, 2}, {four, 3}};
    uint64_t seen[4];
    for (size_t s = 0; s < 4; s++) {
        made ms[4];
        shard_piece ps[4];
        shard_tensor t;
        char why[200];
        if (assemble_split(buf, splits[s].cuts, splits[s].k, ms, ps, &t, why) != 0)
            fail_msg("%zu shards: %s", splits[s].k + 1, why);
        assert_int_equal(t.fp, whole);
        assert_int_equal(t.nbytes, TOTAL);
        assert_int_equal(t.n_chunks, 4);
        assert_memory_equal(t.chunks, whole_chunks, sizeof(whole_chunks));
        assert_int_equal(t.pieces[0].offset, 0); /* sorted */
        rec_record lr;
        shard_as_record(&t, &lr);
        seen[s] = lr.fp;
        shard_tensor_release(&t);
    }
    for (size_t s = 1; s < 4; s++)
        assert_int_equal(seen[s], seen[0]);
    free(buf);
}

static void test_flipped_byte_names_its_chunk(void **state)
{
    (void)state;
    unsigned char *a = random_buf(TOTAL, 11), *b = malloc(TOTAL);
    memcpy(b, a, TOTAL);
    size_t at = 2 * FP_CHUNK_BYTES + 77;
    b[at] ^= 0x10; /* in chunk 2, which the 3-way split cuts between ranks 1 and 2 */
    static const uint64_t two[] = {FP_CHUNK_BYTES + 8};
    static const uint64_t three[] = {FP_CHUNK_BYTES, 2 * FP_CHUNK_BYTES + 64};
    made ma[4], mb[4];
    shard_piece pa[4], pb[4];
    shard_tensor ta, tb;
    char why[200];
    assert_int_equal(assemble_split(a, two, 1, ma, pa, &ta, why), 0);
    assert_int_equal(assemble_split(b, three, 2, mb, pb, &tb, why), 0);
    assert_int_not_equal(ta.fp, tb.fp);
    rec_record ra, rb;
    shard_as_record(&ta, &ra);
    shard_as_record(&tb, &rb);
    assert_int_equal(rec_compare(&ra, &rb), REC_DIFF_CONTENT);
    int chunk = -1;
    for (uint32_t c = 0; c < ta.n_chunks && chunk < 0; c++)
        if (ta.chunks[c] != tb.chunks[c])
            chunk = (int)c;
    assert_int_equal(chunk, 2);
    uint32_t ranks[4];
    size_t n = shard_holders(&tb, 2 * FP_CHUNK_BYTES, 3 * FP_CHUNK_BYTES, ranks, 4);
    assert_int_equal(n, 2); /* chunk 2 of B is split between its ranks 1 and 2 */
    assert_int_equal(ranks[0], 1);
    assert_int_equal(ranks[1], 2);
    n = shard_holders(&ta, 2 * FP_CHUNK_BYTES, 3 * FP_CHUNK_BYTES, ranks, 4);
    assert_int_equal(n, 1);
    assert_int_equal(ranks[0], 1);
    shard_tensor_release(&ta);
    shard_tensor_release(&tb);
    free(a);
    free(b);
}

/* A bad tiling and the words its error must contain. */
typedef struct bad_case {
    const char *what;
    uint64_t off[3], len[3], total[3];
    int n;
    const char *want;
} bad_case;

static const bad_case BAD[] = {
    {"a gap in the middle", {0, 4096}, {2048, 4096}, {8192, 8192}, 2, "gap: bytes [2048, 4096)"},
    {"a gap at the end", {0, 2048}, {2048, 2048}, {8192, 8192}, 2, "gap: bytes [4096, 8192) at the end"},
    {"a gap at the start", {1024}, {7168}, {8192}, 1, "gap: bytes [0, 1024)"},
    {"an overlap", {0, 2048}, {4096, 6144}, {8192, 8192}, 2, "overlap"},
    {"the same shard twice", {0, 0, 4096}, {4096, 4096, 4096}, {8192, 8192, 8192}, 3, "overlap"},
    {"totals that disagree", {0, 4096}, {4096, 4096}, {8192, 16384}, 2, "disagree on the total"},
};

static void test_bad_tilings(void **state)
{
    (void)state;
    unsigned char *buf = random_buf(16384, 3);
    for (size_t c = 0; c < sizeof(BAD) / sizeof(BAD[0]); c++) {
        made ms[3];
        shard_piece ps[3];
        for (int i = 0; i < BAD[c].n; i++) {
            make_shard(&ms[i], buf, BAD[c].off[i], BAD[c].len[i], BAD[c].total[i]);
            ps[i] = (shard_piece){.r = &ms[i].r, .rank = (uint32_t)i};
        }
        shard_tensor t;
        char why[200] = "";
        int rc = shard_assemble(ps, (size_t)BAD[c].n, &t, why, sizeof(why));
        if (rc != -1 || !strstr(why, BAD[c].want))
            fail_msg("case \"%s\": rc %d, \"%s\" (want \"%s\")", BAD[c].what, rc, why, BAD[c].want);
    }
    free(buf);
}

static void test_shard_rules_in_rec_check(void **state)
{
    (void)state;
    unsigned char buf[64] = {0};
    made m;
    make_shard(&m, buf, 8, 16, 64);
    char why[200];
    rec_ext x;
    rec_ext_of(&m.r, &x);
    const struct {
        uint64_t off, len, total;
        const char *want;
    } cases[] = {
        {4, 16, 64, "not a multiple of 8"}, /* offset off a word */
        {8, 60, 64, "runs past"},           /* total smaller than the shard's end */
        {8, 13, 64, "inside a word"},       /* ends mid-word before the tensor's end */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        x.shard_offset = cases[i].off;
        x.shard_total = cases[i].total;
        m.r.nbytes = cases[i].len;
        m.r.ext_len = (uint16_t)rec_ext_encode(&x, m.ext);
        if (rec_check(&m.r, why, sizeof(why)) != -1 || !strstr(why, cases[i].want))
            fail_msg("case %zu: \"%s\" (want \"%s\")", i, why, cases[i].want);
    }
    /* the last shard may end mid-word */
    x.shard_offset = 56;
    x.shard_total = 61;
    m.r.nbytes = 5;
    m.r.ext_len = (uint16_t)rec_ext_encode(&x, m.ext);
    assert_int_equal(rec_check(&m.r, why, sizeof(why)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_split_is_the_whole),
        cmocka_unit_test(test_flipped_byte_names_its_chunk),
        cmocka_unit_test(test_bad_tilings),
        cmocka_unit_test(test_shard_rules_in_rec_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
