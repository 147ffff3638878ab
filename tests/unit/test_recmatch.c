/* test_recmatch.c - one rule for "the same record" (common/recmatch.h), from a table of cases: what differs, what does
 * not, and the digest agreeing with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/recmatch.h"

/* An edit to a copy of the base record, and the verdict it must get. */
typedef struct rm_case {
    const char *what;
    void (*edit)(rec_record *r);
    rec_diff want;
} rm_case;

static void e_none(rec_record *r)
{
    (void)r;
}
static void e_seq(rec_record *r)
{
    r->seq += 7;
}
static void e_time(rec_record *r)
{
    r->t_ns += 12345;
}
static void e_level(rec_record *r)
{
    r->level = LS_LEVEL_OP;
}
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
static void e_fp(rec_record *r)
{
    r->fp ^= 1;
}
static void e_value_and_fp(rec_record *r)
{
    r->fp ^= 1;
}
static void e_value(rec_record *r)
{
    r->value ^= 1;
}
static void e_no_value(rec_record *r)
{
    r->flags &= (uint8_t)~REC_HAS_VALUE;
}
static void e_dtype(rec_record *r)
{
    r->dtype = LS_F32;
}
static void e_shape(rec_record *r)
{
    r->shape[1] = 4;
}
static void e_ndim(rec_record *r)
{
    r->ndim = 1;
    r->shape[0] = 6;
}
static void e_nbytes(rec_record *r)
{
    r->nbytes = 96;
} /* the same fingerprint, recorded with another size */

/* Extension fields: each edit sets r->ext to one of these encodings. */
static unsigned char ext_buf[16][REC_EXT_ENCODED_MAX];
static int ext_next;
static void set_ext(rec_record *r, const rec_ext *x)
{
    unsigned char *b = ext_buf[ext_next++ % 16];
    r->ext_len = (uint16_t)rec_ext_encode(x, b);
    r->ext = b;
}
static rec_ext scaled(uint64_t scales_fp, int64_t extent)
{
    rec_ext x;
    memset(&x, 0, sizeof(x));
    x.has_scales = 1;
    x.scales_dtype = LS_E8M0;
    x.scales_ndim = 1;
    x.scales_shape[0] = extent;
    x.scales_nbytes = (uint64_t)extent;
    x.scales_fp = scales_fp;
    return x;
}
static rec_ext sharded(uint64_t off, uint64_t total)
{
    rec_ext x;
    memset(&x, 0, sizeof(x));
    x.has_shard = 1;
    x.shard_offset = off;
    x.shard_total = total;
    x.shard_acc = 77;
    return x;
}
/* Cases on a scaled base: the base carries scales 0xabc of 2 e8m0 elements. */
static void e_scaled_base(rec_record *r)
{
    rec_ext x = scaled(0xabc, 2);
    set_ext(r, &x);
}
static void e_scales_fp(rec_record *r)
{
    rec_ext x = scaled(0xabd, 2);
    set_ext(r, &x);
}
static void e_scales_fp_and_values(rec_record *r)
{
    e_scales_fp(r);
    r->fp ^= 1;
}
static void e_scales_shape(rec_record *r)
{
    rec_ext x = scaled(0xabc, 3);
    set_ext(r, &x);
}
static void e_no_scales(rec_record *r)
{
    r->ext = NULL;
    r->ext_len = 0;
}
static void e_chunk_size(rec_record *r)
{
    rec_ext x = scaled(0xabc, 2);
    x.chunk_bytes = 4096; /* the chunk size explains; it is not content */
    set_ext(r, &x);
}
static void e_sharded_base(rec_record *r)
{
    rec_ext x = sharded(48, 96);
    set_ext(r, &x);
}
static void e_shard_offset(rec_record *r)
{
    rec_ext x = sharded(0, 96);
    set_ext(r, &x);
}
static void e_shard_total(rec_record *r)
{
    rec_ext x = sharded(48, 144);
    set_ext(r, &x);
}
static void e_shard_acc_only(rec_record *r) /* the acc follows fp; fp is what the rule reads */
{
    rec_ext x = sharded(48, 96);
    x.shard_acc = 78;
    set_ext(r, &x);
}
static void e_state(rec_record *r)
{
    r->flags |= REC_STATE_SAVED;
} /* which block an entry is in is not content */

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
    {"a state entry's kind is not content", e_state, REC_SAME},
};

/* Cases whose base record is edited first by `base_edit` (both sides). */
typedef struct rm_ext_case {
    const char *what;
    void (*base_edit)(rec_record *r);
    void (*edit)(rec_record *r);
    rec_diff want;
} rm_ext_case;

static const rm_ext_case EXT_CASES[] = {
    {"scaled, identical", e_scaled_base, e_none, REC_SAME},
    {"scales only", e_scaled_base, e_scales_fp, REC_DIFF_SCALES},
    {"values only", e_scaled_base, e_value_and_fp, REC_DIFF_CONTENT},
    {"values and scales", e_scaled_base, e_scales_fp_and_values, REC_DIFF_CONTENT},
    {"scale extents", e_scaled_base, e_scales_shape, REC_DIFF_SHAPE},
    {"scales on one side only", e_scaled_base, e_no_scales, REC_DIFF_SCALES},
    {"chunk size is not content", e_scaled_base, e_chunk_size, REC_SAME},
    {"shard, identical", e_sharded_base, e_none, REC_SAME},
    {"shard at another offset", e_sharded_base, e_shard_offset, REC_DIFF_SHAPE},
    {"shard of another total", e_sharded_base, e_shard_total, REC_DIFF_SHAPE},
    {"shard on one side only", e_sharded_base, e_no_scales, REC_DIFF_SHAPE},
    {"a shard's acc is read through fp", e_sharded_base, e_shard_acc_only, REC_SAME},
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

static void test_ext_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(EXT_CASES) / sizeof(EXT_CASES[0]); i++) {
        rec_record a = base(), b = base();
        EXT_CASES[i].base_edit(&a);
        EXT_CASES[i].base_edit(&b);
        EXT_CASES[i].edit(&b);
        rec_diff got = rec_compare(&a, &b);
        if (got != EXT_CASES[i].want)
            fail_msg("case \"%s\": got %s, want %s", EXT_CASES[i].what, rec_diff_name(got),
                     rec_diff_name(EXT_CASES[i].want));
        assert_int_equal(rec_compare(&b, &a), EXT_CASES[i].want);
        int same_term = rec_digest_term(&a) == rec_digest_term(&b);
        if (same_term != (EXT_CASES[i].want == REC_SAME))
            fail_msg("case \"%s\": the digest term says %s, the rule %s", EXT_CASES[i].what,
                     same_term ? "same" : "differs", rec_diff_name(EXT_CASES[i].want));
    }
    /* values and scales both changed: the rule says content, and that the scales changed too */
    rec_record a = base(), b = base();
    e_scaled_base(&a);
    e_scaled_base(&b);
    e_scales_fp_and_values(&b);
    assert_true(rec_scales_differ(&a, &b));
    /* a record without extension fields keeps its version-2 digest term */
    rec_record c = base(), d = base();
    rec_ext none;
    memset(&none, 0, sizeof(none));
    none.chunk_bytes = 4096;
    set_ext(&d, &none);
    assert_int_equal(rec_digest_term(&c), rec_digest_term(&d));
}

/* A restore check: restored entries and the reference, by name and edit, and the verdict. */
typedef struct rs_entry {
    const char *name;
    uint64_t fp; /* 0: absent */
} rs_entry;

typedef struct rs_case {
    const char *what;
    rs_entry restored[4];
    rs_entry ref[4];
    int ref_saved;
    rec_restore_status want;
    const char *want_entry; /* the entry the verdict names */
    size_t want_compared, want_unverified;
    size_t want_not_restored, want_not_saved; /* counted against a saved block, whatever the verdict names */
    const char *want_first_missing;           /* the first saved entry not restored ("" none) */
} rs_case;

static const rs_case RS_CASES[] = {
    {"all restored",
     {{"params", 1}, {"momentum", 2}, {"rng", 3}},
     {{"params", 1}, {"momentum", 2}, {"rng", 3}},
     1,
     REC_RESTORE_SAME,
     NULL,
     3,
     0},
    {"order does not matter",
     {{"rng", 3}, {"params", 1}},
     {{"params", 1}, {"rng", 3}},
     1,
     REC_RESTORE_SAME,
     NULL,
     2,
     0},
    {"the loader forgot the optimizer",
     {{"params", 1}, {"rng", 3}},
     {{"params", 1}, {"momentum", 2}, {"rng", 3}},
     1,
     REC_RESTORE_NOT_RESTORED,
     "momentum",
     2,
     0,
     1,
     0,
     "momentum"},
    {"the wrong rng",
     {{"params", 1}, {"momentum", 2}, {"rng", 9}},
     {{"params", 1}, {"momentum", 2}, {"rng", 3}},
     1,
     REC_RESTORE_DIFFERS,
     "rng",
     3,
     0},
    {"first in the saved order wins",
     {{"rng", 9}, {"params", 8}},
     {{"params", 1}, {"rng", 3}},
     1,
     REC_RESTORE_DIFFERS,
     "params",
     2,
     0},
    {"restored but never saved",
     {{"params", 1}, {"extra", 5}},
     {{"params", 1}},
     1,
     REC_RESTORE_NOT_SAVED,
     "extra",
     1,
     0,
     0,
     1,
     ""},
    {"a difference beats not-saved",
     {{"extra", 5}, {"params", 2}},
     {{"params", 1}},
     1,
     REC_RESTORE_DIFFERS,
     "params",
     1,
     0,
     0,
     1,
     ""},
    {"records as the reference",
     {{"params", 1}, {"data_pos", 4}},
     {{"params", 1}, {"loss", 7}},
     0,
     REC_RESTORE_SAME,
     NULL,
     1,
     1},
    {"records that differ", {{"params", 2}}, {{"params", 1}}, 0, REC_RESTORE_DIFFERS, "params", 1, 0},
    {"nothing to compare", {{"params", 1}}, {{"loss", 7}}, 0, REC_RESTORE_UNVERIFIED, NULL, 0, 1},
    {"an empty saved block", {{"params", 1}}, {{NULL, 0}}, 1, REC_RESTORE_NOT_SAVED, "params", 0, 0, 0, 1, ""},
    {"the whole optimizer forgotten, and the rng wrong: all counted, the first in saved order named",
     {{"params", 1}, {"rng", 9}},
     {{"params", 1}, {"optim.lr", 2}, {"optim.m", 3}, {"rng", 3}},
     1,
     REC_RESTORE_NOT_RESTORED,
     "optim.lr",
     2,
     0,
     2,
     0,
     "optim.lr"},
};

static void test_restore_cases(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(RS_CASES) / sizeof(RS_CASES[0]); c++) {
        const rs_case *k = &RS_CASES[c];
        rec_record ra[4], rb[4];
        const rec_record *pa[4], *pb[4];
        size_t na = 0, nb = 0;
        for (int i = 0; i < 4 && k->restored[i].name; i++, na++) {
            ra[na] = base();
            ra[na].name = k->restored[i].name;
            ra[na].name_len = (uint16_t)strlen(k->restored[i].name);
            ra[na].fp = k->restored[i].fp;
            ra[na].flags = REC_STATE_RESTORED;
            pa[na] = &ra[na];
        }
        for (int i = 0; i < 4 && k->ref[i].name; i++, nb++) {
            rb[nb] = base();
            rb[nb].name = k->ref[i].name;
            rb[nb].name_len = (uint16_t)strlen(k->ref[i].name);
            rb[nb].fp = k->ref[i].fp;
            rb[nb].flags = k->ref_saved ? REC_STATE_SAVED : 0;
            pb[nb] = &rb[nb];
        }
        rec_restore_result v;
        assert_int_equal(rec_restore_check(pa, na, pb, nb, k->ref_saved, &v), 0);
        const rec_record *named = v.restored ? v.restored : v.ref;
        char got[64] = "";
        if (named)
            snprintf(got, sizeof(got), "%.*s", (int)named->name_len, named->name);
        if (v.status != k->want || strcmp(got, k->want_entry ? k->want_entry : "") != 0 ||
            v.compared != k->want_compared || v.unverified != k->want_unverified)
            fail_msg("case \"%s\": got %s naming \"%s\" (%zu compared, %zu unverified)", k->what,
                     rec_restore_status_name(v.status), got, v.compared, v.unverified);
        char missing[64] = "";
        if (v.first_not_restored)
            snprintf(missing, sizeof(missing), "%.*s", (int)v.first_not_restored->name_len, v.first_not_restored->name);
        if (v.not_restored != k->want_not_restored || v.not_saved != k->want_not_saved ||
            strcmp(missing, k->want_first_missing ? k->want_first_missing : "") != 0)
            fail_msg("case \"%s\": %zu not restored (first \"%s\"), %zu not saved", k->what, v.not_restored, missing,
                     v.not_saved);
    }
}

/* The start of a run's comparison (rec_resume_start): its declared start, or the step after its earliest restored
 * state block when that is later. */
static void test_resume_start(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        int64_t declared, restored;
        int ran_before;
        int64_t want;
    } cases[] = {
        {"an uninterrupted run", 0, -1, 0, 0},
        {"a resume registered as step 0 (the plugin registers before the program runs)", 0, 4, 0, 5},
        {"LOCKSTEP_START_STEP exported as well: the same", 5, 4, 0, 5},
        {"a declared start later than the restore", 9, 4, 0, 9},
        {"restored the checkpoint of step 0", 0, 0, 0, 1},
        {"declared, nothing restored", 7, -1, 0, 7},
        {"an uninterrupted run that reloads its own checkpoint of step 4 on the way", 0, 4, 1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t got = rec_resume_start(cases[i].declared, cases[i].restored, cases[i].ran_before);
        if (got != cases[i].want)
            fail_msg("case \"%s\": %lld, want %lld", cases[i].what, (long long)got, (long long)cases[i].want);
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

/* The held-records rule (rec_held_answers): a table of what is there against what the digest counts. */
static void test_held_answers(void **state)
{
    (void)state;
    static const struct {
        int64_t n_have;
        uint64_t x_have;
        int64_t n_digest;
        uint64_t digest;
        int want;
        const char *what;
    } cases[] = {
        {3, 0xabc, 3, 0xabc, 1, "as many, same XOR: the whole answer"},
        {3, 0xabd, 3, 0xabc, -1, "as many, another XOR: not its records"},
        {0, 0, 0, 0, 1, "nothing held, nothing stored"},
        {1, 0x1, 3, 0xabc, 0, "fewer: a part, the rest may come"},
        {0, 0, 3, 0xabc, 0, "none yet"},
        {4, 0xabc, 3, 0xabc, -1, "more than the digest counts, even with its XOR"},
        {3, 0, 3, 0, 1, "an XOR of zero is an XOR like any other"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = rec_held_answers(cases[i].n_have, cases[i].x_have, cases[i].n_digest, cases[i].digest);
        if (got != cases[i].want)
            fail_msg("case %zu (%s): %d, expected %d", i, cases[i].what, got, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),         cmocka_unit_test(test_key_in_digest), cmocka_unit_test(test_ext_cases),
        cmocka_unit_test(test_restore_cases), cmocka_unit_test(test_held_answers),  cmocka_unit_test(test_resume_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
