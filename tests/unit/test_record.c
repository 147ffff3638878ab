/* test_record.c - record framing: round trips, and a data-driven folder of damaged streams. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "common/lsfp1.h"
#include "common/record.h"

#define CASE_DIR "tests/data/framing"

/* A growable byte buffer holding one stream. */
typedef struct stream {
    unsigned char *p;
    size_t len;
    size_t hdr_len;
    size_t rec_off[64];
    size_t n_recs;
} stream;

static const char *const names[] = {"loss", "grad_norm", "layer0.fc.out", "allreduce.out"};

/* make_record - the i-th record of a test stream: a mix of scalars,
 * shaped tensors, input fingerprints and chunk partials. */
static void make_record(size_t i, rec_record *r, uint64_t *inputs, uint64_t *chunks)
{
    memset(r, 0, sizeof(*r));
    r->seq = i;
    r->step = (int64_t)(i / 2);
    r->t_ns = 1700000000000000000LL + (int64_t)i;
    r->name = names[i % 4];
    r->name_len = (uint16_t)strlen(r->name);
    r->occurrence = (uint32_t)(i % 3);
    r->level = (uint8_t)(i % LS_LEVEL_COUNT);
    r->dtype = i % 2 ? LS_F32 : LS_F64;
    r->fp = 0x0123456789abcdefULL * (i + 1);
    if (i % 4 == 0) {
        double v = 2.5 + (double)i;
        memcpy(&r->value, &v, 8);
        r->flags = REC_HAS_VALUE;
        r->nbytes = 8;
    } else {
        r->ndim = 2;
        r->shape[0] = (int64_t)i + 1;
        r->shape[1] = 3;
        r->nbytes = (uint64_t)(i + 1) * 3 * 4;
    }
    if (i % 4 == 3) {
        inputs[0] = 0x1111 * i;
        inputs[1] = 0x2222 * i;
        r->inputs = inputs;
        r->n_inputs = 2;
        for (int k = 0; k < 3; k++)
            chunks[k] = 0x9999 * i + (uint64_t)k;
        r->chunks = chunks;
        r->n_chunks = 3;
    }
    if (i % 4 == 2) { /* a call site: with a function (i = 2, 10, ...), or a named caller only (i = 6, ...) */
        r->site.module = "libsolver.so.2";
        r->site.module_len = 14;
        r->site.offset = 0x41a3 + i;
        if (i % 8 == 2) {
            r->site.function = "Solver::report_timings(int)";
            r->site.function_len = 27;
            r->site.function_offset = 0x1a3;
        } else {
            r->site.caller = "Solver::finish()";
            r->site.caller_len = 16;
        }
    }
    if (i % 6 == 5) { /* extension fields: a chunk size and scales (the block at rec5+97, its first field at rec5+99) */
        static unsigned char ext[REC_EXT_ENCODED_MAX];
        rec_ext x;
        memset(&x, 0, sizeof(x));
        x.chunk_bytes = 4096;
        x.has_scales = 1;
        x.scales_dtype = LS_E8M0;
        x.scales_ndim = 1;
        x.scales_shape[0] = 4;
        x.scales_nbytes = 4;
        x.scales_fp = 0xfeedULL * i;
        r->ext_len = (uint16_t)rec_ext_encode(&x, ext);
        r->ext = ext;
    }
    if (i % 12 == 10) { /* a call site and a shard in one block: the site field, then the shard at rec10+170 */
        static unsigned char ext10[REC_EXT_ENCODED_MAX];
        rec_ext x;
        memset(&x, 0, sizeof(x));
        x.has_shard = 1;
        x.shard_offset = 8;
        x.shard_total = 8 + r->nbytes; /* the last shard of its tensor: it may end inside a word */
        x.shard_acc = 0xacc0ULL * i;
        r->ext_len = (uint16_t)rec_ext_encode(&x, ext10);
        r->ext = ext10;
        r->flags |= REC_STATE_SAVED; /* and a state entry */
    }
    if (i % 8 == 7) /* a state entry (rec7+63 is its flags byte) */
        r->flags |= REC_STATE_RESTORED;
}

static void make_stream(stream *s, size_t n)
{
    rec_header h;
    memset(&h, 0, sizeof(h));
    memset(s, 0, sizeof(*s));
    h.kind = REC_KIND_TRACE;
    h.rank = 3;
    h.batch_seq = 17;
    h.created_ns = 123456789;
    strcpy(h.run_id, "9b2f6c1e-1d2a-4c3b-8e7f-000000000001");
    strcpy(h.job_id, "4242");
    strcpy(h.twin_group, "g1");
    strcpy(h.host, "n1");
    strcpy(h.algo, FP_ALGO_NAME);
    s->p = malloc(65536);
    assert_non_null(s->p);
    s->hdr_len = rec_header_encode(&h, s->p);
    assert_int_equal(s->hdr_len, rec_header_size(&h));
    s->len = s->hdr_len;
    for (size_t i = 0; i < n; i++) {
        rec_record r;
        uint64_t in[2], ch[3];
        make_record(i, &r, in, ch);
        s->rec_off[s->n_recs++] = s->len;
        size_t w = rec_encode(&r, s->p + s->len);
        assert_int_equal(w, rec_encoded_size(&r));
        s->len += w;
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    stream s;
    make_stream(&s, 12); /* sites on 2, 6, 10; other extension fields on 5, 10, 11; state entries 7, 10 */
    rec_reader rd;
    assert_int_equal(rec_reader_init(&rd, s.p, s.len), 0);
    assert_int_equal(rd.hdr.rank, 3);
    assert_int_equal(rd.hdr.kind, REC_KIND_TRACE);
    assert_int_equal(rd.hdr.batch_seq, 17);
    assert_string_equal(rd.hdr.job_id, "4242");
    assert_string_equal(rd.hdr.algo, "lsfp1");
    assert_string_equal(rd.hdr.step_id, "");
    rec_record got;
    for (size_t i = 0; i < 12; i++) {
        rec_record want;
        uint64_t in[2], ch[3];
        make_record(i, &want, in, ch);
        assert_int_equal(rec_reader_next(&rd, &got), 1);
        assert_int_equal(got.rank, 3);
        assert_true(got.seq == want.seq && got.step == want.step && got.t_ns == want.t_ns);
        assert_true(got.fp == want.fp && got.value == want.value && got.nbytes == want.nbytes);
        assert_int_equal(got.occurrence, want.occurrence);
        assert_int_equal(got.level, want.level);
        assert_int_equal(got.dtype, want.dtype);
        assert_int_equal(got.flags, want.flags); /* REC_HAS_EXT is the codec's: never in a decoded record */
        assert_int_equal(got.ext_len, want.ext_len);
        if (want.ext_len)
            assert_memory_equal(got.ext, want.ext, want.ext_len);
        assert_true(rec_same_shape(&got, &want));
        assert_int_equal(got.name_len, want.name_len);
        assert_memory_equal(got.name, want.name, want.name_len);
        assert_int_equal(got.n_inputs, want.n_inputs);
        assert_int_equal(got.n_chunks, want.n_chunks);
        for (unsigned k = 0; k < got.n_inputs; k++)
            assert_true(got.inputs[k] == want.inputs[k]);
        for (unsigned k = 0; k < got.n_chunks; k++)
            assert_true(got.chunks[k] == want.chunks[k]);
        assert_int_equal(rec_has_site(&got), rec_has_site(&want));
        assert_true(got.site.offset == want.site.offset && got.site.function_offset == want.site.function_offset);
        assert_int_equal(got.site.module_len, want.site.module_len);
        assert_int_equal(got.site.function_len, want.site.function_len);
        assert_int_equal(got.site.caller_len, want.site.caller_len);
        assert_memory_equal(got.site.module, want.site.module, want.site.module_len);
        assert_memory_equal(got.site.function, want.site.function, want.site.function_len);
        assert_memory_equal(got.site.caller, want.site.caller, want.site.caller_len);
    }
    assert_int_equal(rec_reader_next(&rd, &got), 0);
    assert_int_equal(rd.status, REC_OK);
    assert_int_equal(rd.count, 12);
    rec_reader_release(&rd);
    free(s.p);
}

/* Records that cannot be framed are refused at encode time. */
static void test_encode_refuses(void **state)
{
    (void)state;
    unsigned char buf[4096];
    rec_record r;
    uint64_t in[2], ch[3];
    char why[128];
    make_record(0, &r, in, ch);
    r.name_len = 0;
    assert_int_equal(rec_encode(&r, buf), 0);
    make_record(0, &r, in, ch);
    r.ndim = LS_MAX_DIMS + 1;
    assert_int_equal(rec_check(&r, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "ndim"));
    make_record(0, &r, in, ch);
    r.dtype = LS_DTYPE_COUNT;
    assert_int_equal(rec_encode(&r, buf), 0);
    make_record(0, &r, in, ch);
    r.name = "a\0b";
    r.name_len = 3;
    assert_int_equal(rec_encode(&r, buf), 0);
    make_record(2, &r, in, ch);
    r.site.function_len = REC_SITE_NAME_MAX + 1;
    assert_int_equal(rec_check(&r, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "call site"));
    make_record(2, &r, in, ch);
    r.site.module = "lib\0x.so";
    r.site.module_len = 8;
    assert_int_equal(rec_encode(&r, buf), 0);
    make_record(0, &r, in, ch);
    r.flags |= REC_STATE_SAVED | REC_STATE_RESTORED;
    assert_int_equal(rec_check(&r, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "not both"));
    /* extension fields that break their rules */
    unsigned char ext[REC_EXT_ENCODED_MAX];
    rec_ext x;
    memset(&x, 0, sizeof(x));
    x.chunk_bytes = 100; /* not a multiple of 8 */
    make_record(1, &r, in, ch);
    r.ext_len = (uint16_t)rec_ext_encode(&x, ext);
    r.ext = ext;
    assert_int_equal(rec_check(&r, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "chunk size 100"));
    memset(&x, 0, sizeof(x));
    x.has_scales = 1;
    x.scales_dtype = LS_DTYPE_COUNT;
    r.ext_len = (uint16_t)rec_ext_encode(&x, ext);
    assert_int_equal(rec_encode(&r, buf), 0);
    /* the call site is the record's site, never one of its other fields */
    make_record(1, &r, in, ch);
    const unsigned char site_in_ext[] = {REC_X_SITE, 0, 0, 0};
    r.ext = site_in_ext;
    r.ext_len = sizeof(site_in_ext);
    assert_int_equal(rec_check(&r, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "call site"));
}

/* A record without extension fields is framed exactly as before they existed (older readers and streams agree):
 * no extension block, no flag. A call site, the other fields, or both make one block after the chunks: its
 * flag in the flags byte (the reader clears it again), its length word, the site field first, then the others
 * as rec_ext_encode wrote them. */
static void test_ext_framing(void **state)
{
    (void)state;
    unsigned char a[1024], b[1024];
    rec_record r;
    uint64_t in[2], ch[3];
    make_record(1, &r, in, ch);
    size_t na = rec_encode(&r, a);
    assert_int_equal(na, 8 + REC_FIXED + 16 + r.name_len);
    assert_int_equal(a[8 + 55], r.flags); /* no REC_HAS_EXT */

    /* a site alone: the block is [len][site field] */
    make_record(2, &r, in, ch);
    size_t nb = rec_encode(&r, b);
    size_t site_field = 4 + REC_SITE_FIXED + 14 + 27, at = 8 + REC_FIXED + 16 + r.name_len;
    assert_int_equal(nb, at + 2 + site_field);
    assert_int_equal(b[8 + 55], REC_HAS_EXT);
    assert_int_equal(b[at] | b[at + 1] << 8, site_field);
    assert_int_equal(b[at + 2], REC_X_SITE);
    rec_record got;
    uint64_t scratch[64];
    char why[200];
    assert_true(rec_payload_words(b + 8, nb - 8) <= 64);
    assert_int_equal(rec_decode_payload(b + 8, nb - 8, &got, scratch, why, sizeof(why)), 0);
    assert_int_equal(got.flags, 0);
    assert_int_equal(got.site.function_len, 27);
    assert_int_equal(got.ext_len, 0);

    /* a site, a shard and a state flag together (record 10): [len][site field][shard field] */
    make_record(10, &r, in, ch);
    assert_true(rec_has_site(&r) && r.ext_len == 28 && (r.flags & REC_STATE_SAVED));
    nb = rec_encode(&r, b);
    assert_int_equal(nb, at + 2 + site_field + r.ext_len);
    assert_int_equal(b[8 + 55], REC_STATE_SAVED | REC_HAS_EXT);
    assert_int_equal(b[at] | b[at + 1] << 8, site_field + r.ext_len);
    assert_int_equal(b[at + 2], REC_X_SITE);
    assert_int_equal(b[at + 2 + site_field], REC_X_SHARD);
    assert_memory_equal(b + at + 2 + site_field, r.ext, r.ext_len);
    assert_true(rec_payload_words(b + 8, nb - 8) <= 64);
    assert_int_equal(rec_decode_payload(b + 8, nb - 8, &got, scratch, why, sizeof(why)), 0);
    assert_int_equal(got.flags, REC_STATE_SAVED);
    assert_int_equal(got.site.function_len, 27);
    assert_memory_equal(got.site.function, "Solver::report_timings(int)", 27);
    assert_int_equal(got.ext_len, r.ext_len);
    assert_memory_equal(got.ext, r.ext, r.ext_len);
    rec_ext x;
    rec_ext_of(&got, &x);
    assert_true(x.has_shard && x.shard_offset == 8 && x.shard_total == 8 + r.nbytes && x.shard_acc == 0xacc0ULL * 10);

    /* a writer may order the fields otherwise and add ones this reader does not know: the shard first, an
     * unknown field (key 200) between it and the site; the reader keeps the site and the shard, drops the rest */
    unsigned char c[1024];
    size_t pre = at; /* everything before the block is the same */
    memcpy(c, b, pre);
    unsigned char *q = c + pre + 2;
    memcpy(q, r.ext, r.ext_len);
    q += r.ext_len;
    const unsigned char unknown[] = {200, 0, 3, 0, 'x', 'y', 'z'};
    memcpy(q, unknown, sizeof(unknown));
    q += sizeof(unknown);
    memcpy(q, b + at + 2, site_field);
    q += site_field;
    size_t block = (size_t)(q - (c + pre + 2)), nc = (size_t)(q - c);
    c[pre] = (unsigned char)block;
    c[pre + 1] = (unsigned char)(block >> 8);
    assert_true(rec_payload_words(c + 8, nc - 8) <= 64);
    memset(&got, 0, sizeof(got));
    assert_int_equal(rec_decode_payload(c + 8, nc - 8, &got, scratch, why, sizeof(why)), 0);
    assert_int_equal(got.flags, REC_STATE_SAVED);
    assert_int_equal(got.site.module_len, 14);
    assert_memory_equal(got.site.module, "libsolver.so.2", 14);
    assert_int_equal(got.site.function_len, 27);
    assert_int_equal(got.ext_len, r.ext_len);
    assert_memory_equal(got.ext, r.ext, r.ext_len);
    /* and encoding what was read gives the encoder's order back */
    unsigned char d[1024];
    assert_int_equal(rec_encode(&got, d), nb);
    assert_memory_equal(d + 8, b + 8, nb - 8);
}

/* position - resolve "N", "hdr+N", "recK+N" or "end-N" in stream `s`. */
static size_t position(const stream *s, const char *spec)
{
    unsigned k;
    long n;
    if (sscanf(spec, "hdr+%ld", &n) == 1)
        return (size_t)n;
    if (sscanf(spec, "rec%u+%ld", &k, &n) == 2) {
        assert_true(k < s->n_recs);
        return s->rec_off[k] + (size_t)n;
    }
    if (sscanf(spec, "end-%ld", &n) == 1)
        return s->len - (size_t)n;
    if (sscanf(spec, "%ld", &n) == 1)
        return (size_t)n;
    fail_msg("bad position '%s'", spec);
    return 0;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* run_case - apply one .case file's edits to a fresh stream and check what
 * the reader reports. */
static void run_case(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    stream s;
    int have_stream = 0, checked = 0;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        char op[32], a[64], b[64], c[64];
        int n = sscanf(line, "%31s %63s %63s %63s", op, a, b, c);
        if (n <= 0 || op[0] == '#')
            continue;
        if (strcmp(op, "records") == 0) {
            make_stream(&s, (size_t)atoi(a));
            have_stream = 1;
            continue;
        }
        if (!have_stream)
            fail_msg("%s: 'records N' must come first", path);
        if (strcmp(op, "truncate") == 0) {
            s.len = position(&s, a);
        } else if (strcmp(op, "flip") == 0) {
            s.p[position(&s, a)] ^= 0x40;
        } else if (strcmp(op, "put8") == 0 || strcmp(op, "put16") == 0 || strcmp(op, "put32") == 0) {
            put_le(s.p + position(&s, a), strtoull(b, NULL, 0), op[3] == '8' ? 1 : op[3] == '1' ? 2 : 4);
        } else if (strcmp(op, "recrc") == 0) {
            size_t off = s.rec_off[atoi(a)];
            uint32_t len = (uint32_t)s.p[off] | (uint32_t)s.p[off + 1] << 8 | (uint32_t)s.p[off + 2] << 16 |
                           (uint32_t)s.p[off + 3] << 24;
            put_le(s.p + off + 4, crc32c(s.p + off + 8, len), 4);
        } else if (strcmp(op, "expect") == 0) {
            rec_reader rd;
            int init = rec_reader_init(&rd, s.p, s.len);
            int want_init_fail = n >= 4 && strcmp(c, "init") == 0;
            if (want_init_fail != (init < 0))
                fail_msg("%s: header %s (%s)", path, init < 0 ? "refused" : "accepted", rd.err);
            rec_record r;
            if (init == 0)
                while (rec_reader_next(&rd, &r) == 1)
                    ;
            if (strcmp(rec_status_name(rd.status), a) != 0 || rd.count != strtoull(b, NULL, 10))
                fail_msg("%s: reader stopped with %s after %llu records (%s); expected %s after %s", path,
                         rec_status_name(rd.status), (unsigned long long)rd.count, rd.err, a, b);
            if (rd.status != REC_OK && rd.err[0] == 0)
                fail_msg("%s: no reason given", path);
            rec_reader_release(&rd);
            checked = 1;
        } else {
            fail_msg("%s: unknown operation '%s'", path, op);
        }
    }
    fclose(f);
    if (!checked)
        fail_msg("%s has no 'expect' line", path);
    free(s.p);
}

static void test_damaged_streams(void **state)
{
    (void)state;
    DIR *d = opendir(CASE_DIR);
    if (!d)
        fail_msg("cannot open %s (run from the repository root)", CASE_DIR);
    struct dirent *de;
    int cases = 0;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".case") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", CASE_DIR, de->d_name);
        run_case(path);
        cases++;
    }
    closedir(d);
    assert_true(cases >= 10);
    print_message("%d framing cases checked\n", cases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_encode_refuses),
        cmocka_unit_test(test_ext_framing),
        cmocka_unit_test(test_damaged_streams),
    };
    return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
