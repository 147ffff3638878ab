/* test_first.c - the first-divergence rule (common/first.h) that lockstepd and `lockstep diff` share, from one table of
 * cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/first.h"

#define CASE_RECS 16

/* A case: records as "RUN STEP NAME OCC SEQ FP [SIZE]" lines (FP in hex, SIZE in bytes, 8 when absent), and the
 * first divergence: its step, name and occurrence ("" when every run agrees), the runs lacking it (a bit per run),
 * the odd run (-1: none) and whether some content is held by more than half of the runs. */
typedef struct first_case {
    const char *what;
    int nruns;
    const char *recs[CASE_RECS];
    long step;
    const char *name;
    int occ;
    unsigned lacking;
    int odd, majority;
} first_case;

static const first_case CASES[] = {
    /* lockstepd's comparison: one step of one rank of a group's runs */
    {"twins that agree", 2, {"0 0 loss 0 0 aa", "0 0 w 0 1 bb", "1 0 loss 0 0 aa", "1 0 w 0 1 bb"}, 0, "", 0, 0, -1, 0},
    {"a pair parting at the second record",
     2,
     {"0 0 loss 0 0 aa", "0 0 w 0 1 bb", "1 0 loss 0 0 aa", "1 0 w 0 1 bc"},
     0,
     "w",
     0,
     0,
     -1,
     0},
    {"the earliest place wins, whatever the name order",
     2,
     {"0 0 a 0 5 01", "0 0 z 0 2 02", "1 0 a 0 5 09", "1 0 z 0 2 08"},
     0,
     "z",
     0,
     0,
     -1,
     0},
    {"occurrences are separate records",
     2,
     {"0 0 w 0 0 01", "0 0 w 1 1 02", "1 0 w 0 0 01", "1 0 w 1 1 03"},
     0,
     "w",
     1,
     0,
     -1,
     0},
    {"three runs: the odd one is named",
     3,
     {"0 0 loss 0 0 aa", "1 0 loss 0 0 aa", "2 0 loss 0 0 ab", "0 0 g 0 1 01", "1 0 g 0 1 01", "2 0 g 0 1 01"},
     0,
     "loss",
     0,
     0,
     2,
     1},
    {"three runs all different: no odd one",
     3,
     {"0 0 loss 0 0 a1", "1 0 loss 0 0 a2", "2 0 loss 0 0 a3"},
     0,
     "loss",
     0,
     0,
     -1,
     0},
    {"two of three differ: no single odd run", 3, {"0 0 x 0 0 01", "1 0 x 0 0 02", "2 0 x 0 0 02"}, 0, "x", 0, 0, 0, 1},
    {"a record one run lacks", 2, {"0 0 loss 0 0 aa", "0 0 extra 0 1 01", "1 0 loss 0 0 aa"}, 0, "extra", 0, 2, -1, 0},
    {"a record the odd run lacks",
     3,
     {"0 0 w 0 0 01", "1 0 w 0 0 01", "0 0 v 0 1 02", "1 0 v 0 1 02", "2 0 w 0 0 01"},
     0,
     "v",
     0,
     4,
     2,
     1},
    {"the same fingerprint with another size diverges",
     2,
     {"0 0 buf 0 0 77 8", "1 0 buf 0 0 77 16"},
     0,
     "buf",
     0,
     0,
     -1,
     0},
    {"four runs, one odd", 4, {"0 0 l 0 0 1", "1 0 l 0 0 1", "2 0 l 0 0 2", "3 0 l 0 0 1"}, 0, "l", 0, 0, 2, 1},
    {"a key repeated within one run counts as its first record",
     2,
     {"0 0 w 0 0 01", "0 0 w 0 1 05", "1 0 w 0 0 01"},
     0,
     "",
     0,
     0,
     -1,
     0},
    /* lockstep diff: two traces of one rank, every step */
    {"a metric differs at a later step; the earlier steps match",
     2,
     {"0 6 loss 0 0 aa", "0 7 loss 0 1 ab", "0 8 loss 0 2 ac", "1 6 loss 0 0 aa", "1 7 loss 0 1 b0", "1 8 loss 0 2 b1"},
     7,
     "loss",
     0,
     0,
     -1,
     0},
    {"the earlier step wins over an earlier place",
     2,
     {"0 3 a 0 0 01", "0 3 b 0 1 02", "0 3 c 0 2 03", "0 4 d 0 3 04", "1 3 a 0 0 01", "1 3 b 0 1 02", "1 3 c 0 2 0f",
      "1 4 d 0 3 0e"},
     3,
     "c",
     0,
     0,
     -1,
     0},
    {"a record B lacks (missing)", 2, {"0 4 loss 0 0 aa", "0 4 w 0 1 bb", "1 4 loss 0 0 aa"}, 4, "w", 0, 2, -1, 0},
    {"a record only B holds (extra)",
     2,
     {"0 9 loss 0 0 aa", "1 9 loss 0 0 aa", "1 9 debug.probe 0 1 cc"},
     9,
     "debug.probe",
     0,
     1,
     -1,
     0},
    {"B stopped early: A's first step past B's end",
     2,
     {"0 5 loss 0 0 aa", "0 6 loss 0 1 ab", "0 7 loss 0 2 ac", "1 5 loss 0 0 aa"},
     6,
     "loss",
     0,
     2,
     -1,
     0},
    {"an extra record and a differing one at one place: the lower run's",
     2,
     {"0 2 loss 0 0 aa", "0 2 w 0 1 01", "1 2 loss 0 0 aa", "1 2 probe 0 1 cc", "1 2 w 0 2 02"},
     2,
     "w",
     0,
     0,
     -1,
     0},
    {"an extra record before a differing one: the earlier place",
     2,
     {"0 2 loss 0 0 aa", "0 2 w 0 1 01", "0 2 v 0 2 03", "1 2 probe 0 1 cc", "1 2 loss 0 2 aa", "1 2 w 0 3 01",
      "1 2 v 0 4 04"},
     2,
     "probe",
     0,
     1,
     -1,
     0},
    {"places, not seqs, line up: a resumed run numbers its records from another seq",
     2,
     {"0 8 loss 0 100 aa", "0 8 x 0 101 01", "0 8 w 0 102 02", "1 8 loss 0 0 aa", "1 8 w 0 1 03"},
     8,
     "x",
     0,
     2,
     -1,
     0},
};

static char names[CASE_RECS][32];

static size_t parse(const first_case *c, first_rec *out)
{
    size_t n = 0;
    for (; n < CASE_RECS && c->recs[n]; n++) {
        unsigned run, occ;
        long step;
        unsigned long long seq, fp, size = 8;
        int got = sscanf(c->recs[n], "%u %ld %31s %u %llu %llx %llu", &run, &step, names[n], &occ, &seq, &fp, &size);
        assert_true(got >= 6);
        memset(&out[n], 0, sizeof(out[n]));
        out[n].run = (int)run;
        out[n].row = (int)n;
        out[n].rec.step = step;
        out[n].rec.name = names[n];
        out[n].rec.name_len = (uint16_t)strlen(names[n]);
        out[n].rec.occurrence = occ;
        out[n].rec.seq = seq;
        out[n].rec.fp = fp;
        out[n].rec.nbytes = size;
        out[n].rec.dtype = LS_BYTES;
    }
    return n;
}

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        const first_case *c = &CASES[i];
        first_rec recs[CASE_RECS];
        size_t n = parse(c, recs);
        first_div f;
        first_find(recs, n, c->nruns, &f);
        if (!*c->name) {
            if (f.found)
                fail_msg("case \"%s\": a divergence where the runs agree", c->what);
            continue;
        }
        if (!f.found)
            fail_msg("case \"%s\": no divergence found", c->what);
        const first_rec *any = NULL;
        unsigned lacking = 0;
        for (int k = 0; k < c->nruns; k++) {
            any = any ? any : f.by_run[k];
            lacking |= f.by_run[k] ? 0u : 1u << k;
        }
        assert_non_null(any);
        if (strncmp(any->rec.name, c->name, any->rec.name_len) || strlen(c->name) != any->rec.name_len ||
            (int)any->rec.occurrence != c->occ || f.step != c->step || any->rec.step != c->step)
            fail_msg("case \"%s\": diverged at step %lld %.*s #%u, want step %ld %s #%d", c->what, (long long)f.step,
                     (int)any->rec.name_len, any->rec.name, any->rec.occurrence, c->step, c->name, c->occ);
        if (lacking != c->lacking || f.missing != (c->lacking != 0) || f.odd != c->odd ||
            (f.majority >= 0) != c->majority)
            fail_msg("case \"%s\": lacking %#x missing %d odd %d majority %d, want %#x %d %d", c->what, lacking,
                     f.missing, f.odd, f.majority >= 0, c->lacking, c->odd, c->majority);
        int64_t seq = INT64_MAX; /* the smallest seq of the key's records in the runs compared */
        for (int k = 0; k < c->nruns; k++)
            if (f.by_run[k] && (int64_t)f.by_run[k]->rec.seq < seq)
                seq = (int64_t)f.by_run[k]->rec.seq;
        assert_int_equal(f.seq, seq);
    }
}

/* Records of runs the caller does not compare (outside [0, nruns)) take no part. */
static void test_runs_outside(void **state)
{
    (void)state;
    static const first_case c = {"", 2, {"0 0 a 0 0 01", "1 0 a 0 0 01", "2 0 a 0 0 02", "2 0 b 0 1 03"}, 0, "", 0, 0,
                                 -1, 0};
    first_rec recs[CASE_RECS];
    size_t n = parse(&c, recs);
    first_div f;
    first_find(recs, n, 2, &f);
    assert_false(f.found);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_runs_outside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
