/* test_consensus.c - the consensus rule (common/consensus.h): the key is the same for any order of the same
 * ranks, the fold is order-free but bound to each place, the majority rule as a table, and the wire field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "common/consensus.h"
#include "common/recmatch.h"

static void test_key_order_free(void **state)
{
    (void)state;
    uint32_t a[] = {3, 1, 2}, b[] = {1, 2, 3}, c[] = {1, 2, 3, 3}, d[] = {1, 2, 4};
    assert_int_equal(cons_key(a, 3), cons_key(b, 3));
    assert_int_equal(cons_key(c, 4), cons_key(b, 3));
    assert_int_not_equal(cons_key(b, 3), cons_key(d, 3));
    assert_int_equal(cons_key(b, 3), rec_comm_id(b, 3)); /* a communicator listed in rank order keeps its id */
    uint32_t big[200];
    for (uint32_t i = 0; i < 200; i++)
        big[i] = 199 - i;
    uint32_t sorted[200];
    for (uint32_t i = 0; i < 200; i++)
        sorted[i] = i;
    assert_int_equal(cons_key(big, 200), rec_comm_id(sorted, 200));
}

static rec_record rec_with(uint64_t fp, uint64_t nbytes)
{
    rec_record r;
    memset(&r, 0, sizeof(r));
    r.name = "mpi.allreduce";
    r.name_len = 13;
    r.fp = fp;
    r.nbytes = nbytes;
    r.dtype = LS_F64;
    return r;
}

static void test_fold(void **state)
{
    (void)state;
    rec_record x = rec_with(11, 8), y = rec_with(12, 8), z = rec_with(11, 16);
    uint64_t xy = cons_fold(cons_fold(0, &x, 0), &y, 1), yx = cons_fold(cons_fold(0, &y, 1), &x, 0);
    assert_int_equal(xy, yx);                                        /* completion order does not matter */
    assert_int_not_equal(xy, cons_fold(cons_fold(0, &x, 1), &y, 0)); /* the place does */
    assert_int_not_equal(cons_fold(0, &x, 0), cons_fold(0, &z, 0));  /* the byte count is part of the record */
    assert_int_not_equal(cons_fold(0, &x, 0), cons_fold(0, &y, 0));  /* and the fingerprint */
    assert_int_not_equal(cons_fold(cons_fold(0, &x, 0), &x, 1), 0);  /* two equal records do not cancel */
}

/* What correct members may hold differently at one place leaves the fold alone: the occurrence (a rank's count of
 * the name over all its communicators), the call site (a broadcast's root and receivers), the dtype and shape (the
 * root's and the receivers' datatypes of one signature); what makes another copy changes it. */
static void test_fold_ignores_rank_local(void **state)
{
    (void)state;
    rec_record a = rec_with(11, 48), b = a;
    b.occurrence = 512;
    b.dtype = LS_BYTES;
    b.ndim = 2;
    b.shape[0] = 2;
    b.shape[1] = 1;
    b.seq = 538;
    b.rank = 1;
    b.site.module = "libscalapack-openmpi.so.2.2";
    b.site.module_len = 27;
    b.site.function = "Czgebr2d";
    b.site.function_len = 8;
    b.site.offset = 212590;
    assert_true(cons_same(&a, &b));
    assert_int_equal(cons_term(&a), cons_term(&b));
    assert_int_equal(cons_fold(0, &a, 7), cons_fold(0, &b, 7));
    rec_record c = a;
    c.name = "mpi.bcast";
    c.name_len = 9;
    rec_record d = rec_with(11, 40), e = rec_with(13, 48);
    assert_false(cons_same(&a, &c));
    assert_false(cons_same(&a, &d));
    assert_false(cons_same(&a, &e));
    assert_int_not_equal(cons_fold(0, &a, 7), cons_fold(0, &c, 7));
    assert_int_not_equal(cons_fold(0, &a, 7), cons_fold(0, &d, 7));
    assert_int_not_equal(cons_fold(0, &a, 7), cons_fold(0, &e, 7));
}

/* copies as a string: each letter a digest ('a' = the same copy), upper case one record more */
static const struct {
    const char *copies, *odd;
    int agree, clear;
} CASES[] = {
    {"a", "0", 1, 0},         {"aaaa", "0000", 1, 0},   {"aaab", "0001", 0, 1},
    {"baaa", "1000", 0, 1},   {"ab", "11", 0, 0},     /* two ranks: "one of these" */
    {"aabb", "1111", 0, 0},                           /* a tie names no one */
    {"aabc", "1111", 0, 0},                           /* half is not a majority */
    {"aaabc", "00011", 0, 1}, {"aaaA", "0001", 0, 1}, /* the same digest over another count of records */
    {"abcab", "11111", 0, 0}, {"babab", "01010", 0, 1},
};

static void test_judge_table(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof(CASES) / sizeof(CASES[0]); t++) {
        size_t n = strlen(CASES[t].copies);
        cons_copy c[8];
        unsigned char odd[8];
        for (size_t i = 0; i < n; i++) {
            char ch = CASES[t].copies[i];
            c[i].rank = (uint32_t)i;
            c[i].fold = (uint64_t)(ch | 0x20);
            c[i].n = ch >= 'a' ? 4 : 5;
        }
        cons_verdict v = cons_judge(c, n, odd);
        char got[9] = {0};
        for (size_t i = 0; i < n; i++)
            got[i] = (char)('0' + odd[i]);
        if (strcmp(got, CASES[t].odd) || v.agree != CASES[t].agree || v.clear != CASES[t].clear)
            fail_msg("case %zu (%s): odd %s agree %d clear %d, want %s %d %d", t, CASES[t].copies, got, v.agree,
                     v.clear, CASES[t].odd, CASES[t].agree, CASES[t].clear);
        size_t want_odd = 0;
        for (size_t i = 0; i < n; i++)
            want_odd += CASES[t].odd[i] == '1';
        assert_int_equal(v.n_odd, want_odd);
    }
}

static void test_wire_field(void **state)
{
    (void)state;
    rec_ext x, y;
    memset(&x, 0, sizeof(x));
    x.has_consensus = 1;
    x.consensus_key = 0x1122334455667788ULL;
    x.consensus_index = 77;
    unsigned char buf[REC_EXT_ENCODED_MAX];
    size_t n = rec_ext_encode(&x, buf);
    assert_int_equal(n, 20);
    char why[128];
    assert_int_equal(rec_ext_parse(buf, n, &y, why, sizeof(why)), 0);
    assert_true(y.has_consensus);
    assert_int_equal(y.consensus_key, x.consensus_key);
    assert_int_equal(y.consensus_index, 77);
    buf[2] = 12; /* a field of the wrong size is refused */
    assert_int_equal(rec_ext_parse(buf, 16, &y, why, sizeof(why)), -1);
}

/* the order of disagreements: step, then key as a signed 64-bit integer, then window */
static void test_place_order(void **state)
{
    (void)state;
    static const struct {
        cons_place a, b;
        int want;
    } T[] = {
        {{1, 5, 0}, {2, 1, 0}, -1},
        {{2, 1, 0}, {1, 5, 9}, 1},
        {{3, 5, 1}, {3, 5, 1}, 0},
        {{3, 4, 9}, {3, 5, 0}, -1},
        {{3, 0x8000000000000000ULL, 0}, {3, 1, 0}, -1}, /* a key with the top bit set is negative as bigint */
        {{3, 7, 2}, {3, 7, 1}, 1},
        {{-1, 7, 2}, {0, 7, 1}, -1},
    };
    for (size_t i = 0; i < sizeof(T) / sizeof(T[0]); i++) {
        int got = cons_place_cmp(&T[i].a, &T[i].b);
        assert_int_equal((got > 0) - (got < 0), T[i].want);
    }
}

/* members' records as strings: one letter a place (index lo + position), the letter its fingerprint, '.' none;
 * `odd` flags members; the first differing place, member and whether its record is there */
static const struct {
    const char *members[4];
    const char *odd;
    uint32_t win;
    int found, at, member, has_rec;
} FIRST[] = {
    {{"aaaa", "aaaa", "aaaa", "aaaa"}, "0000", 0, 0, 0, 0, 0},   /* all the same: none */
    {{"aaaa", "aaaa", "aaba", "aaaa"}, "0010", 0, 1, 2, 2, 1},   /* one odd rank, third place */
    {{"abaa", "aaaa", "aaaa", "aaaa"}, "1000", 0, 1, 1, 0, 1},   /* the odd one first: the reference is member 1 */
    {{"aaaa", "aaaa", "aa.a", "aaaa"}, "0010", 0, 1, 2, 2, 0},   /* a record missing on the odd rank */
    {{"aaba", "aaab", NULL, NULL}, "11", 0, 1, 2, 1, 1},         /* two ranks, no majority: against the first */
    {{"aaaa", "aaaa", "aaaa", "aaab"}, "0001", 3, 1, 195, 3, 1}, /* window 3: places 192.. */
    {{"aaaa", "aaca", "aaba", "aaaa"}, "0110", 0, 1, 2, 1, 1},   /* two odd ranks: the first that differs */
};

static void test_first_record_table(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof(FIRST) / sizeof(FIRST[0]); t++) {
        rec_record recs[4][8];
        const rec_record *ptr[4][8];
        uint32_t idx[4][8];
        cons_member m[4];
        size_t n = 0;
        for (; n < 4 && FIRST[t].members[n]; n++) {
            const char *s = FIRST[t].members[n];
            m[n] = (cons_member){.rank = (uint32_t)n, .odd = FIRST[t].odd[n] == '1', .recs = ptr[n], .index = idx[n]};
            for (size_t k = 0; s[k]; k++) {
                if (s[k] == '.')
                    continue;
                recs[n][m[n].n] = rec_with((uint64_t)s[k], 8);
                ptr[n][m[n].n] = &recs[n][m[n].n];
                idx[n][m[n].n] = FIRST[t].win * CONS_WINDOW + (uint32_t)k;
                m[n].n++;
            }
        }
        cons_first f;
        int got = cons_first_record(m, n, FIRST[t].win, &f);
        assert_int_equal(got, FIRST[t].found);
        if (!got)
            continue;
        assert_int_equal(f.index, (uint32_t)FIRST[t].at);
        assert_int_equal(f.member, (size_t)FIRST[t].member);
        assert_int_equal(f.rec != NULL, FIRST[t].has_rec);
        assert_non_null(f.ref);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_order_free),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_fold_ignores_rank_local),
        cmocka_unit_test(test_judge_table),
        cmocka_unit_test(test_wire_field),
        cmocka_unit_test(test_place_order),
        cmocka_unit_test(test_first_record_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
