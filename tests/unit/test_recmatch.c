/* test_recmatch.c - one rule for "the same record" (common/recmatch.h), from a table of cases: what differs, what does not, and the digest agreeing with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/recmatch.h"

/* An edit to a copy of the base record, and the verdict it must get. */
typedef struct rm_case {
    const char *what;
    void (*edit)(rec_record *r);
    rec_diff want;
} rm_case;

static void e_none(rec_record *r) { (void)r; }
static void e_seq(rec_record *r) { r->seq += 7; }
static void e_time(rec_record *r) { r->t_ns += 12345; }
static void e_level(rec_record *r) { r->level = LS_LEVEL_OP; }
static void e_inputs(rec_record *r)
{
    static const uint64_t in[2] = {1, 2};
    r->inputs = in;
    r->n_inputs = 2;
}
static void e_chunks(rec_record *r)
{
    static const uint64_t ch[1] = {9};
    r->chunks = ch;
    r->n_chunks = 1;
}
static void e_fp(rec_record *r) { r->fp ^= 1; }
static void e_value(rec_record *r) { r->value ^= 1; }
static void e_no_value(rec_record *r) { r->flags &= (uint8_t)~REC_HAS_VALUE; }
static void e_dtype(rec_record *r) { r->dtype = LS_F32; }
static void e_shape(rec_record *r) { r->shape[1] = 4; }
static void e_ndim(rec_record *r) { r->ndim = 1; r->shape[0] = 6; }
static void e_nbytes(rec_record *r) { r->nbytes = 96; } /* the same fingerprint, recorded with another size */

static const rm_case CASES[] = {
    {"identical", e_none, REC_SAME},
    {"seq is not content", e_seq, REC_SAME},
    {"time is not content", e_time, REC_SAME},
    {"level is not content", e_level, REC_SAME},
    {"inputs explain, they do not differ", e_inputs, REC_SAME},
    {"chunks explain, they do not differ", e_chunks, REC_SAME},
    {"fingerprint", e_fp, REC_DIFF_CONTENT},
    {"scalar value bits", e_value, REC_DIFF_CONTENT},
    {"a value on one side only", e_no_value, REC_DIFF_CONTENT},
    {"dtype", e_dtype, REC_DIFF_DTYPE},
    {"extent", e_shape, REC_DIFF_SHAPE},
    {"rank of the shape", e_ndim, REC_DIFF_SHAPE},
    {"byte count: the size is part of a record", e_nbytes, REC_DIFF_SHAPE},
};

static rec_record base(void)
{
    rec_record r;
    memset(&r, 0, sizeof(r));
    r.name = "layer.out";
    r.name_len = 9;
    r.step = 3;
    r.seq = 40;
    r.dtype = LS_F64;
    r.ndim = 2;
    r.shape[0] = 2;
    r.shape[1] = 3;
    r.nbytes = 48;
    r.fp = 0x1234567890abcdefULL;
    r.flags = REC_HAS_VALUE;
    r.value = 0x3ff0000000000000ULL;
    return r;
}

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        rec_record a = base(), b = base();
        CASES[i].edit(&b);
        rec_diff got = rec_compare(&a, &b);
        if (got != CASES[i].want)
            fail_msg("case \"%s\": got %s, want %s", CASES[i].what, rec_diff_name(got), rec_diff_name(CASES[i].want));
        /* symmetric */
        assert_int_equal(rec_compare(&b, &a), CASES[i].want);
        /* the digest agrees with the rule */
        int same_term = rec_digest_term(&a) == rec_digest_term(&b);
        if (same_term != (CASES[i].want == REC_SAME))
            fail_msg("case \"%s\": the digest term says %s, the rule %s", CASES[i].what, same_term ? "same" : "differs",
                     rec_diff_name(CASES[i].want));
    }
}

static void test_key_in_digest(void **state)
{
    (void)state;
    rec_record a = base(), b = base();
    b.occurrence = 1;
    assert_int_not_equal(rec_digest_term(&a), rec_digest_term(&b));
    b = base();
    b.name = "layer.ouT";
    assert_int_not_equal(rec_digest_term(&a), rec_digest_term(&b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_key_in_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
