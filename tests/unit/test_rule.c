/* test_rule.c - the first-divergence rule of lockstepd's comparison (server/compare/rule.h), from a table of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/compare/rule.h"

/* A case: records as "RUN NAME OCC SEQ FP [SIZE]" lines (FP in hex, SIZE in bytes, 8 when absent), and the
 * verdict: the diverging name and occurrence ("" when every run agrees), missing, the odd run (-1: none). */
typedef struct rule_case {
    const char *what;
    int nruns;
    const char *recs[12];
    const char *name;
    int occ, missing, odd, majority; /* majority: 1 when some content is held by more than half */
} rule_case;

static const rule_case CASES[] = {
    {"twins that agree", 2, {"0 loss 0 0 aa", "0 w 0 1 bb", "1 loss 0 0 aa", "1 w 0 1 bb"}, "", 0, 0, -1, 0},
    {"a pair parting at the second record", 2, {"0 loss 0 0 aa", "0 w 0 1 bb", "1 loss 0 0 aa", "1 w 0 1 bc"},
     "w", 0, 0, -1, 0},
    {"the earliest seq wins, whatever the name order", 2,
     {"0 a 0 5 01", "0 z 0 2 02", "1 a 0 5 09", "1 z 0 2 08"}, "z", 0, 0, -1, 0},
    {"occurrences are separate records", 2, {"0 w 0 0 01", "0 w 1 1 02", "1 w 0 0 01", "1 w 1 1 03"}, "w", 1, 0, -1,
     0},
    {"three runs: the odd one is named", 3,
     {"0 loss 0 0 aa", "1 loss 0 0 aa", "2 loss 0 0 ab", "0 g 0 1 01", "1 g 0 1 01", "2 g 0 1 01"}, "loss", 0, 0, 2,
     1},
    {"three runs all different: no odd one", 3, {"0 loss 0 0 a1", "1 loss 0 0 a2", "2 loss 0 0 a3"}, "loss", 0, 0, -1,
     0},
    {"two of three differ: no single odd run", 3, {"0 x 0 0 01", "1 x 0 0 02", "2 x 0 0 02"}, "x", 0, 0, 0, 1},
    {"a record one run lacks", 2, {"0 loss 0 0 aa", "0 extra 0 1 01", "1 loss 0 0 aa"}, "extra", 0, 1, -1, 0},
    {"a record the odd run lacks", 3, {"0 w 0 0 01", "1 w 0 0 01", "0 v 0 1 02", "1 v 0 1 02", "2 w 0 0 01"}, "v", 0, 1,
     2, 1},
    {"the same fingerprint with another size diverges", 2, {"0 buf 0 0 77 8", "1 buf 0 0 77 16"}, "buf", 0, 0, -1, 0},
    {"four runs, one odd", 4, {"0 l 0 0 1", "1 l 0 0 1", "2 l 0 0 2", "3 l 0 0 1"}, "l", 0, 0, 2, 1},
};

static char names[64][32];

static size_t parse(const rule_case *c, cmp_rec *out)
{
    size_t n = 0;
    for (; n < 12 && c->recs[n]; n++) {
        unsigned run, occ;
        unsigned long long seq, fp, size = 8;
        int got = sscanf(c->recs[n], "%u %31s %u %llu %llx %llu", &run, names[n], &occ, &seq, &fp, &size);
        assert_true(got >= 5);
        memset(&out[n], 0, sizeof(out[n]));
        out[n].run = (int)run;
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
        const rule_case *c = &CASES[i];
        cmp_rec recs[12];
        size_t n = parse(c, recs);
        cmp_first f;
        cmp_rule_first(recs, n, c->nruns, &f);
        if (!*c->name) {
            if (f.found)
                fail_msg("case \"%s\": a divergence where the runs agree", c->what);
            continue;
        }
        if (!f.found)
            fail_msg("case \"%s\": no divergence found", c->what);
        const cmp_rec *any = NULL;
        for (int k = 0; k < c->nruns && !any; k++)
            any = f.by_run[k];
        assert_non_null(any);
        if (strncmp(any->rec.name, c->name, any->rec.name_len) || strlen(c->name) != any->rec.name_len ||
            (int)any->rec.occurrence != c->occ)
            fail_msg("case \"%s\": diverged at %.*s #%u, want %s #%d", c->what, (int)any->rec.name_len, any->rec.name,
                     any->rec.occurrence, c->name, c->occ);
        if (f.missing != c->missing || f.odd != c->odd || (f.majority >= 0) != c->majority)
            fail_msg("case \"%s\": missing %d odd %d majority %d, want %d %d %d", c->what, f.missing, f.odd,
                     f.majority >= 0, c->missing, c->odd, c->majority);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
