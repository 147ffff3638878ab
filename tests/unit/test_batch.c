/* test_batch.c - lockstepd's ingest decoders: binary and JSON batches, exact values per dtype, hex, UTF-8, digests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <stdio.h>

#include "common/record.h"
#include "server/store/batch.h"
#include "server/store/cons_batch.h"
#include "common/recmatch.h"

static int decode_json(srv_batch *b, const char *text, srv_error *e)
{
    return batch_decode_json(b, text, strlen(text), e);
}

static void test_json_values_exact(void **state)
{
    (void)state;
    srv_batch b;
    srv_error e;
    const char *j =
        "{\"rank\": 3, \"batch_seq\": 9, \"records\": ["
        "{\"seq\": 1, \"step\": -2, \"name\": \"a\", \"dtype\": \"f64\", \"fp\": \"00000000000000ff\", \"value\": 0.1},"
        "{\"seq\": 2, \"step\": 0, \"name\": \"b\", \"dtype\": \"f32\", \"fp\": \"0x00000000000000FF\", \"value\": "
        "0.5},"
        "{\"seq\": 3, \"step\": 0, \"name\": \"c\", \"dtype\": \"bf16\", \"fp\": \"0000000000000001\", \"value\": "
        "-2.0},"
        "{\"seq\": 4, \"step\": 0, \"name\": \"d\", \"dtype\": \"f16\", \"fp\": \"0000000000000001\", \"value\": "
        "65504},"
        "{\"seq\": 5, \"step\": 0, \"name\": \"e\", \"dtype\": \"i8\", \"fp\": \"0000000000000001\", \"value\": -1},"
        "{\"seq\": 6, \"step\": 0, \"name\": \"f\", \"dtype\": \"f64\", \"fp\": \"0000000000000001\", \"value_bits\": "
        "\"7ff8000000000001\"},"
        "{\"seq\": 7, \"step\": 0, \"name\": \"g\", \"fp\": \"0000000000000001\"}]}";
    assert_int_equal(decode_json(&b, j, &e), 0);
    assert_int_equal(b.rank, 3);
    assert_int_equal(b.batch_seq, 9);
    assert_int_equal(b.n, 7);
    assert_int_equal(b.recs[0].step, -2);
    assert_int_equal(b.recs[0].value, 0x3fb999999999999aULL);
    assert_int_equal(b.recs[1].value, 0x3f000000u);
    assert_int_equal(b.recs[1].fp, 0xff);
    assert_int_equal(b.recs[2].value, 0xc000u); /* bf16 -2 */
    assert_int_equal(b.recs[3].value, 0x7bffu); /* f16 max */
    assert_int_equal(b.recs[4].value, 0xffu);   /* i8 -1 in its own width */
    assert_int_equal(b.recs[5].value, 0x7ff8000000000001ULL);
    assert_true(b.recs[5].flags & REC_HAS_VALUE);
    assert_false(b.recs[6].flags & REC_HAS_VALUE);
    assert_int_equal(b.recs[6].dtype, LS_BYTES);
    assert_memory_equal(b.recs[2].name, "c", 1);
    batch_release(&b);
    assert_int_equal(
        decode_json(&b,
                    "{\"rank\": 0, \"batch_seq\": 0, \"records\": [{\"seq\": 0, \"step\": 0, "
                    "\"name\": \"x\", \"dtype\": \"bf16\", \"value\": 1.001, \"fp\": \"0000000000000001\"}]}",
                    &e),
        -1);
    assert_string_equal(e.error, "value does not fit its dtype");
    batch_release(&b);
}

static void test_binary_round_trip(void **state)
{
    (void)state;
    unsigned char buf[4096];
    rec_header h = {.kind = REC_KIND_BATCH, .rank = 5, .batch_seq = 77};
    snprintf(h.run_id, sizeof(h.run_id), "run-x");
    size_t n = rec_header_encode(&h, buf);
    uint64_t in[2] = {11, 12}, ch[3] = {1, 2, 3};
    rec_record r = {.seq = 10,
                    .step = 4,
                    .t_ns = 99,
                    .nbytes = 64,
                    .fp = 0xdeadbeefULL,
                    .value = 7,
                    .flags = REC_HAS_VALUE,
                    .occurrence = 2,
                    .level = LS_LEVEL_OP,
                    .dtype = LS_I64,
                    .ndim = 1,
                    .shape = {8},
                    .name = "op.out",
                    .name_len = 6,
                    .n_inputs = 2,
                    .inputs = in,
                    .n_chunks = 3,
                    .chunks = ch};
    n += rec_encode(&r, buf + n);
    r.seq = 11;
    r.n_chunks = 0;
    n += rec_encode(&r, buf + n);
    srv_batch b;
    srv_error e;
    assert_int_equal(batch_decode_binary(&b, buf, n, &e), 0);
    assert_int_equal(b.rank, 5);
    assert_int_equal(b.batch_seq, 77);
    assert_string_equal(b.run_id, "run-x");
    assert_int_equal(b.n, 2);
    assert_int_equal(b.recs[0].chunks[2], 3);
    assert_int_equal(b.recs[0].inputs[1], 12);
    assert_int_equal(b.recs[1].inputs[0], 11);
    assert_null(b.recs[1].chunks);
    assert_int_equal(b.recs[1].occurrence, 2);
    /* the digest hash sees content but not seq or time */
    rec_record a = b.recs[0], c = b.recs[0];
    c.seq = 1000;
    c.t_ns = 5;
    assert_int_equal(rec_digest_term(&a), rec_digest_term(&c));
    c.fp ^= 1;
    assert_int_not_equal(rec_digest_term(&a), rec_digest_term(&c));
    batch_release(&b);
    /* torn: every proper prefix past the header is rejected with an offset */
    for (size_t cut = 1; cut < 20; cut++) {
        assert_int_equal(batch_decode_binary(&b, buf, n - cut, &e), -1);
        assert_string_equal(e.error, "bad record framing");
        assert_non_null(strstr(e.detail, "torn at byte"));
        batch_release(&b);
    }
}

static void test_hex_and_utf8(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(batch_parse_hex64("ffffffffffffffff", &v), 0);
    assert_int_equal(v, UINT64_MAX);
    assert_int_equal(batch_parse_hex64("0X0123456789ABCDEF", &v), 0);
    assert_int_equal(v, 0x0123456789abcdefULL);
    assert_int_equal(batch_parse_hex64("123", &v), -1);
    assert_int_equal(batch_parse_hex64("0123456789abcdef0", &v), -1);
    assert_int_equal(batch_parse_hex64("0123456789abcdeg", &v), -1);
    assert_true(batch_utf8_valid("layer.\xc3\xa9", 8));
    assert_false(batch_utf8_valid("\xc3", 1));
    assert_false(batch_utf8_valid("\xc0\xaf", 2));     /* overlong */
    assert_false(batch_utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
    assert_false(batch_utf8_valid("a\0b", 3));
}

static size_t put_digest(unsigned char *p, int64_t step, uint64_t n, uint64_t digest, uint64_t seq)
{
    rec_record d = {.seq = seq,
                    .step = step,
                    .nbytes = n,
                    .fp = digest,
                    .flags = REC_STEP_DIGEST,
                    .dtype = LS_BYTES,
                    .name = REC_STEP_DIGEST_NAME,
                    .name_len = sizeof(REC_STEP_DIGEST_NAME) - 1};
    return rec_encode(&d, p);
}

/* test_step_digests - digest streaming: step digest entries are not records; a batch of held records
 * carries none; a digest for no record is refused. */
static void test_step_digests(void **state)
{
    (void)state;
    unsigned char buf[4096];
    rec_header h = {.kind = REC_KIND_BATCH, .rank = 1, .batch_seq = 3};
    size_t n = rec_header_encode(&h, buf);
    rec_record r = {.seq = 10,
                    .step = 4,
                    .nbytes = 8,
                    .fp = 1,
                    .value = 2,
                    .flags = REC_HAS_VALUE,
                    .dtype = LS_F64,
                    .name = "loss",
                    .name_len = 4};
    n += rec_encode(&r, buf + n);
    n += put_digest(buf + n, 4, 95, 0xabcdef, 105); /* its seq is past the next record's: not checked */
    r.seq = 11;
    r.step = 5;
    n += rec_encode(&r, buf + n);
    srv_batch b;
    srv_error e;
    assert_int_equal(batch_decode_binary(&b, buf, n, &e), 0);
    assert_int_equal(b.n, 2);
    assert_false(b.held);
    assert_int_equal(b.n_digests, 1);
    assert_int_equal(b.digests[0].step, 4);
    assert_int_equal(b.digests[0].n, 95);
    assert_int_equal(b.digests[0].digest, 0xabcdef);
    assert_int_equal(b.digests[0].seq, 105);
    batch_release(&b);

    n = rec_header_encode(&h, buf);
    n += put_digest(buf + n, 4, 0, 1, 1);
    assert_int_equal(batch_decode_binary(&b, buf, n, &e), -1);
    assert_string_equal(e.error, "bad step digest");
    batch_release(&b);

    rec_header hh = {.kind = REC_KIND_BATCH, .rank = 1, .batch_seq = (1ULL << 62) + 7, .flags = REC_HDR_HELD};
    n = rec_header_encode(&hh, buf);
    r.seq = 7;
    n += rec_encode(&r, buf + n);
    assert_int_equal(batch_decode_binary(&b, buf, n, &e), 0);
    assert_true(b.held);
    assert_int_equal(b.n, 1);
    batch_release(&b);
    n += put_digest(buf + n, 5, 3, 1, 8);
    assert_int_equal(batch_decode_binary(&b, buf, n, &e), -1);
    assert_string_equal(e.error, "step digest in a batch of held records");
    batch_release(&b);
}

/* A consensus digest as step_digests.cons holds it: big endian key, window, count, fold (the layout the 026
 * migration writes with int8send and int4send), and back. */
static void test_cons_packed(void **state)
{
    (void)state;
    srv_cons_digest d = {
        .step = 9, .key = 0x8899aabbccddeeffULL, .win = 0x01020304, .n = 64, .fold = 0x1122334455667788ULL};
    unsigned char p[CONS_PACKED];
    cons_pack(p, &d);
    static const unsigned char want[CONS_PACKED] = {0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
                                                    0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x40,
                                                    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
    assert_memory_equal(p, want, CONS_PACKED);
    uint64_t key, fold;
    uint32_t win, n;
    cons_unpack(p, &key, &win, &n, &fold);
    assert_true(key == d.key && win == d.win && n == d.n && fold == d.fold);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_digests),      cmocka_unit_test(test_json_values_exact),
        cmocka_unit_test(test_binary_round_trip), cmocka_unit_test(test_hex_and_utf8),
        cmocka_unit_test(test_cons_packed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
