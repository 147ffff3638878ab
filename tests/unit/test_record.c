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
    if (i % 6 == 5) { /* extension fields: a chunk size and scales (rec5+97 is where they start) */
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
    make_stream(&s, 12);  /* records 5 and 11 carry extension fields, 7 is a state entry */
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
        assert_int_equal(got.flags, want.flags | (want.ext_len ? REC_HAS_EXT : 0));
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
}

/* A record without extension fields is framed exactly as before they existed (old traces read the same, and
 * old readers read new traces of plain records). */
static void test_plain_records_unchanged(void **state)
{
    (void)state;
    rec_record r;
    uint64_t in[2], ch[3];
    unsigned char buf[4096];
    make_record(1, &r, in, ch);
    size_t n = rec_encode(&r, buf);
    assert_int_equal(n, 8 + REC_FIXED + 16 + r.name_len);
    assert_int_equal(buf[8 + 55], r.flags); /* no REC_HAS_EXT */
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
        cmocka_unit_test(test_plain_records_unchanged),
        cmocka_unit_test(test_damaged_streams),
    };
    return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
