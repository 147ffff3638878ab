/* test_cause.c - the cause rule of a first divergence (common/cause.h), from a table of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/cause.h"

/* A case: each rank's first divergence as "RANK STEP SEQ NAME OCC FLAG", FLAG one of '!' (inputs differ),
 * '=' (inputs agree), '-' (no input fingerprints), 'm' (a run lacks the record), 'r' (a restore difference: a
 * state entry of the block of STEP), 'l' (a logical tensor of runs of different layouts); the ranks the runs recorded;
 * whether the configuration differs; the result: cause, origin ranks ("1,3", "" for none), the rank that
 * stands for the group, and whether the evidence is thin. */
typedef struct cause_case {
    const char *what;
    const char *ranks[10];
    int nranks, config;
    const char *kind, *origin;
    int first, thin;
} cause_case;

static const cause_case CASES[] = {
    {"nothing diverged", {NULL}, 4, 0, "none", "", -1, 0},
    /* The program: rank 3 perturbs its data before the 19th allreduce; every rank's output differs. */
    {"rank 3 alone fed the collective another input",
     {"0 0 18 mpi.allreduce 18 =", "1 0 18 mpi.allreduce 18 =", "2 0 18 mpi.allreduce 18 =",
      "3 0 18 mpi.allreduce 18 !"},
     4,
     0,
     "origin",
     "3",
     3,
     0},
    {"two origin ranks", {"0 5 7 x 0 =", "1 5 7 x 0 !", "2 5 7 x 0 =", "3 5 7 x 0 !"}, 4, 0, "origin", "1,3", 1, 0},
    /* A closing reduction of MPI_Wtime spans: every rank's input is run-specific. */
    {"timings reduced at the end: every rank's input differs",
     {"0 0 40 mpi.reduce 0 !", "1 0 40 mpi.reduce 0 !", "2 0 40 mpi.reduce 0 !", "3 0 40 mpi.reduce 0 !"},
     4,
     0,
     "every-rank",
     "",
     0,
     0},
    {"every rank at the same call, whatever each recorded before it (rank 0 made one record more)",
     {"0 0 41 mpi.reduce 0 !", "1 0 40 mpi.reduce 0 !", "2 0 40 mpi.reduce 0 !"},
     3,
     0,
     "every-rank",
     "",
     1,
     0},
    {"a nondeterministic reduction: inputs matched everywhere",
     {"0 3 9 allreduce.out 0 =", "1 3 9 allreduce.out 0 ="},
     2,
     0,
     "operation",
     "",
     0,
     0},
    /* lockstep-train: the faulty rank's allreduce.in (no inputs) comes before every rank's allreduce.out. */
    {"a rank diverged first in program order, without input fingerprints",
     {"0 8 31 allreduce.out 0 !", "1 8 30 allreduce.in 0 -", "2 8 31 allreduce.out 0 !"},
     3,
     0,
     "origin",
     "1",
     1,
     0},
    {"a rank diverged alone, without input fingerprints", {"2 4 3 loss 0 -"}, 4, 0, "origin", "2", 2, 0},
    {"every rank at the same record, no input fingerprints",
     {"0 4 3 loss 0 -", "1 4 3 loss 0 -"},
     2,
     0,
     "content",
     "0,1",
     0,
     1},
    {"one rank alone, no inputs", {"0 2 5 loss 0 -"}, 1, 0, "content", "0", 0, 1},
    {"one rank alone, its input differs", {"0 2 5 mpi.allreduce 0 !"}, 1, 0, "origin", "0", 0, 1},
    {"a record some run lacks", {"0 7 12 ckpt.write 0 m", "1 7 12 x 0 !"}, 2, 0, "missing", "0", 0, 0},
    {"the configuration explains it, whatever the records say",
     {"0 0 3 mpi.allreduce 0 !", "1 0 3 mpi.allreduce 0 ="},
     2,
     1,
     "configuration",
     "",
     0,
     0},
    {"the first step decides: later steps do not count",
     {"0 9 1 a 0 !", "1 3 50 b 0 =", "2 3 50 b 0 !", "3 9 1 a 0 !"},
     4,
     0,
     "origin",
     "2",
     2,
     0},
    {"a later record at the first step is not the earliest point",
     {"0 3 10 b 0 !", "1 3 4 a 0 =", "2 3 4 a 0 ="},
     3,
     0,
     "operation",
     "",
     1,
     0},
    /* Checkpoints: a resumed run's restored state block against what its twin saved (common/recmatch.h). */
    {"a resumed run restored other optimizer state on ranks 0 and 2",
     {"0 4 3 optim.w.momentum 0 r", "2 4 3 optim.w.momentum 0 r", "1 6 20 loss 0 -"},
     3,
     0,
     "restore",
     "0,2",
     0,
     0},
    {"restore differences at other entries of the block: every rank whose block differs",
     {"0 4 3 rng.torch 0 r", "1 4 5 data_pos 0 r", "2 4 3 loss 0 -"},
     3,
     0,
     "restore",
     "0,1",
     0,
     0},
    {"a restore difference comes before the configuration",
     {"1 4 7 rng.torch 0 r", "0 5 2 loss 0 !"},
     2,
     1,
     "restore",
     "1",
     1,
     0},
    {"a later step's divergence does not hide an earlier restore difference",
     {"0 5 2 loss 0 !", "1 4 90 data_pos 0 r"},
     2,
     0,
     "restore",
     "1",
     1,
     0},
    {"a step record before a restore difference at that step is the earliest point (the restore rank is no origin)",
     {"0 4 2 loss 0 !", "1 4 5 data_pos 0 r"},
     2,
     0,
     "origin",
     "0",
     0,
     0},
    /* Runs of different rank counts compared on logical tensors: their divergences stand for no rank. */
    {"runs of different rank counts parted on a logical tensor", {"-1 3 0 w 0 l"}, 4, 1, "layout", "", -1, 0},
};

static void parse(const cause_case *c, cause_rank *out, size_t *n, char names[][32])
{
    *n = 0;
    for (size_t i = 0; i < 10 && c->ranks[i]; i++) {
        int rank, occ;
        long long step, seq;
        char flag;
        int got = sscanf(c->ranks[i], "%d %lld %lld %31s %d %c", &rank, &step, &seq, names[i], &occ, &flag);
        assert_int_equal(got, 6);
        cause_rank *r = &out[(*n)++];
        memset(r, 0, sizeof(*r));
        r->rank = rank;
        r->step = step;
        r->seq = seq;
        r->name = names[i];
        r->name_len = strlen(names[i]);
        r->occurrence = (uint32_t)occ;
        r->missing = flag == 'm';
        r->restore = flag == 'r';
        r->logical = flag == 'l';
        r->inputs = flag == '!' ? CAUSE_IN_DIFF : flag == '=' ? CAUSE_IN_SAME : CAUSE_IN_UNKNOWN;
    }
}

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        const cause_case *c = &CASES[i];
        cause_rank ranks[10];
        char names[10][32];
        size_t n;
        parse(c, ranks, &n, names);
        cause_facts f = {ranks, n, c->nranks, c->config};
        cause_result v;
        cause_judge(&f, &v);
        char origin[128] = "";
        size_t len = 0;
        for (int k = 0; k < v.norigin; k++)
            len += (size_t)snprintf(origin + len, sizeof(origin) - len, "%s%d", k ? "," : "", v.origin[k]);
        int first = v.first ? v.first->rank : -1;
        if (strcmp(cause_name(v.kind), c->kind) || strcmp(origin, c->origin) || first != c->first || v.thin != c->thin)
            fail_msg("case \"%s\": %s origin [%s] first %d thin %d, want %s [%s] %d %d (%s)", c->what,
                     cause_name(v.kind), origin, first, v.thin, c->kind, c->origin, c->first, c->thin, v.why);
        if (v.kind != CAUSE_NONE && !v.why[0])
            fail_msg("case \"%s\": no explanation", c->what);
    }
}

static void test_inputs_of(void **state)
{
    (void)state;
    uint64_t a[2] = {1, 2}, b[2] = {1, 2}, d[2] = {1, 3};
    const uint64_t *same[] = {a, b}, *diff[] = {a, d}, *none[] = {a, NULL};
    int c2[] = {2, 2}, c21[] = {2, 1}, c20[] = {2, 0};
    assert_int_equal(cause_inputs_of(same, c2, 2), CAUSE_IN_SAME);
    assert_int_equal(cause_inputs_of(diff, c2, 2), CAUSE_IN_DIFF);
    assert_int_equal(cause_inputs_of(same, c21, 2), CAUSE_IN_DIFF);
    assert_int_equal(cause_inputs_of(none, c20, 2), CAUSE_IN_UNKNOWN);
    assert_int_equal(cause_inputs_of(same, c2, 0), CAUSE_IN_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_inputs_of),
    };
    return cmocka_run_group_tests_name("cause", tests, NULL, NULL);
}
