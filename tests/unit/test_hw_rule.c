/* test_hw_rule.c - whether hardware is the better explanation (server/rules/hw_rule.h), from a table of cases: each
 * case gives the records' facts at the first divergence, judged by the cause rule (common/cause.h) and then by the
 * evidence rule, as lockstepd does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/record.h"
#include "server/rules/hw_rule.h"

#define MAXR 4

/* One rank's first divergence at the same collective (seq 6, step 0). */
typedef struct rk {
    int rank;
    cause_inputs inputs;
    int comm_size;
    const uint32_t *comm; /* the world ranks, or NULL */
} rk;

static const uint32_t SELF0[] = {0}, SELF1[] = {1}, PAIR01[] = {0, 1}, PAIR23[] = {2, 3}, ALL4[] = {0, 1, 2, 3};

static const struct {
    const char *what;
    const char *name; /* the diverging record */
    int nranks, n;
    rk r[MAXR];
    int configuration, same_hw, attested, strong;
    const char *cause, *cls, *code;
    const char *why_has; /* a phrase the cause's sentences hold */
} CASES[] = {
    {"a broadcast on a communicator of one process: nothing moved (the BLACS pattern)",
     "mpi.bcast",
     2,
     1,
     {{0, CAUSE_IN_DIFF, 1, SELF0}},
     0,
     0,
     1,
     0,
     "origin",
     "software",
     "local",
     "communicator of one process"},
    {"each rank's own one-process broadcast differs",
     "mpi.bcast",
     2,
     2,
     {{0, CAUSE_IN_DIFF, 1, SELF0}, {1, CAUSE_IN_DIFF, 1, SELF1}},
     0,
     0,
     1,
     0,
     "every-rank",
     "software",
     "every_rank",
     "every rank at once"},
    {"an old agent's record: the size from the shape alone",
     "mpi.bcast",
     2,
     1,
     {{0, CAUSE_IN_DIFF, 1, NULL}},
     0,
     0,
     1,
     0,
     "origin",
     "software",
     "local",
     "nothing was sent or received"},
    {"a value the root read, broadcast to the others",
     "mpi.bcast",
     4,
     4,
     {{0, CAUSE_IN_DIFF, 4, ALL4},
      {1, CAUSE_IN_UNKNOWN, 4, ALL4},
      {2, CAUSE_IN_UNKNOWN, 4, ALL4},
      {3, CAUSE_IN_UNKNOWN, 4, ALL4}},
     0,
     0,
     1,
     0,
     "origin",
     "software",
     "root_input",
     "ranks 1, 2 and 3, the other members"},
    {"a reduce whose root alone diverged kept its own buffer",
     "mpi.reduce",
     4,
     1,
     {{0, CAUSE_IN_DIFF, 4, ALL4}},
     0,
     0,
     1,
     0,
     "origin",
     "software",
     "local",
     "delivers its result to its root alone"},
    {"one rank's input to an allreduce: hardware, weak for a pair",
     "mpi.allreduce",
     4,
     4,
     {{0, CAUSE_IN_SAME, 4, ALL4},
      {1, CAUSE_IN_SAME, 4, ALL4},
      {2, CAUSE_IN_SAME, 4, ALL4},
      {3, CAUSE_IN_DIFF, 4, ALL4}},
     0,
     0,
     1,
     0,
     "origin",
     "hardware",
     "pair",
     "ranks 0, 1 and 2, the other members"},
    {"the same with a third run that names the odd one",
     "mpi.allreduce",
     4,
     4,
     {{0, CAUSE_IN_SAME, 4, ALL4},
      {1, CAUSE_IN_SAME, 4, ALL4},
      {2, CAUSE_IN_SAME, 4, ALL4},
      {3, CAUSE_IN_DIFF, 4, ALL4}},
     0,
     0,
     1,
     1,
     "origin",
     "hardware",
     "minority",
     "received the change"},
    {"received within its own communicator only",
     "mpi.allreduce",
     4,
     2,
     {{2, CAUSE_IN_SAME, 2, PAIR23}, {3, CAUSE_IN_DIFF, 2, PAIR23}},
     0,
     0,
     1,
     0,
     "origin",
     "hardware",
     "pair",
     "rank 2, the other member of its communicator of 2 processes"},
    {"every member of a sub-communicator at once",
     "mpi.allreduce",
     4,
     2,
     {{0, CAUSE_IN_DIFF, 2, PAIR01}, {1, CAUSE_IN_DIFF, 2, PAIR01}},
     0,
     0,
     1,
     0,
     "every-rank",
     "software",
     "every_rank",
     "every rank of its communicator"},
    {"a configuration difference explains it",
     "mpi.allreduce",
     4,
     1,
     {{3, CAUSE_IN_DIFF, 4, ALL4}},
     1,
     0,
     1,
     0,
     "configuration",
     "software",
     "configuration",
     "configurations differ"},
    {"every rank at once: run-specific values",
     "mpi.reduce",
     2,
     2,
     {{0, CAUSE_IN_DIFF, 2, PAIR01}, {1, CAUSE_IN_DIFF, 2, PAIR01}},
     0,
     0,
     1,
     0,
     "every-rank",
     "software",
     "every_rank",
     "every rank at once"},
    {"inputs matched, output differs: the operation",
     "mpi.allreduce",
     2,
     2,
     {{0, CAUSE_IN_SAME, 2, PAIR01}, {1, CAUSE_IN_SAME, 2, PAIR01}},
     0,
     0,
     1,
     0,
     "operation",
     "software",
     "operation",
     "matched in every run"},
    {"both twins ran the origin on the same hardware: narrow it",
     "mpi.allreduce",
     4,
     4,
     {{0, CAUSE_IN_SAME, 4, ALL4},
      {1, CAUSE_IN_SAME, 4, ALL4},
      {2, CAUSE_IN_SAME, 4, ALL4},
      {3, CAUSE_IN_DIFF, 4, ALL4}},
     0,
     1,
     1,
     0,
     "origin",
     "inconclusive",
     "same_hardware",
     "received the change"},
    {"every rank, no input fingerprints: nobody to name",
     "loss",
     4,
     4,
     {{0, CAUSE_IN_UNKNOWN, 0, NULL},
      {1, CAUSE_IN_UNKNOWN, 0, NULL},
      {2, CAUSE_IN_UNKNOWN, 0, NULL},
      {3, CAUSE_IN_UNKNOWN, 0, NULL}},
     0,
     0,
     1,
     0,
     "content",
     "inconclusive",
     "content",
     "cannot tell where the change began"},
    {"every rank, no input fingerprints, but a majority of three runs names the odd run on each",
     "loss",
     2,
     2,
     {{0, CAUSE_IN_UNKNOWN, 0, NULL}, {1, CAUSE_IN_UNKNOWN, 0, NULL}},
     0,
     0,
     1,
     1,
     "content",
     "hardware",
     "minority",
     "cannot tell"},
    {"a single-rank job's content difference stays weak evidence",
     "loss",
     1,
     1,
     {{0, CAUSE_IN_UNKNOWN, 0, NULL}},
     0,
     0,
     1,
     0,
     "content",
     "hardware",
     "pair",
     "cannot tell"},
    {"no attested hardware",
     "mpi.allreduce",
     4,
     4,
     {{0, CAUSE_IN_SAME, 4, ALL4},
      {1, CAUSE_IN_SAME, 4, ALL4},
      {2, CAUSE_IN_SAME, 4, ALL4},
      {3, CAUSE_IN_DIFF, 4, ALL4}},
     0,
     0,
     0,
     0,
     "origin",
     "software",
     "no_hardware",
     "received the change"},
    {"a local difference beats the same hardware (no narrow needed)",
     "mpi.bcast",
     2,
     1,
     {{1, CAUSE_IN_DIFF, 1, SELF1}},
     0,
     1,
     1,
     0,
     "origin",
     "software",
     "local",
     "communicator of one process"},
};

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        cause_rank cr[MAXR];
        memset(cr, 0, sizeof(cr));
        for (int k = 0; k < CASES[i].n; k++) {
            const rk *r = &CASES[i].r[k];
            cr[k] = (cause_rank){.rank = r->rank,
                                 .step = 0,
                                 .seq = 6,
                                 .name = CASES[i].name,
                                 .name_len = strlen(CASES[i].name),
                                 .occurrence = 6,
                                 .inputs = r->inputs,
                                 .comm_size = r->comm_size,
                                 .comm_ranks = r->comm,
                                 .comm_nlisted = r->comm ? r->comm_size : 0};
        }
        cause_facts f = {cr, (size_t)CASES[i].n, CASES[i].nranks, CASES[i].configuration};
        cause_result c;
        cause_judge(&f, &c);
        hw_facts h = {.cause = c.kind,
                      .local = c.local,
                      .root_input = c.root_input,
                      .nranks = CASES[i].nranks,
                      .cause_why = c.why,
                      .config_summary = "env.OMP_NUM_THREADS differs",
                      .same_hw = CASES[i].same_hw,
                      .same_hw_rank = 3,
                      .same_hw_node = "n1",
                      .same_hw_gpu = "",
                      .attested = CASES[i].attested,
                      .strong = CASES[i].strong,
                      .implicated = "n1,n2",
                      .group = "g"};
        hw_verdict v;
        hw_judge(&h, &v);
        print_message("case %zu: %s -> %s %s/%s: %s | %s\n", i, CASES[i].what, cause_name(c.kind), v.cls, v.code, c.why,
                      v.reason);
        assert_string_equal(cause_name(c.kind), CASES[i].cause);
        assert_string_equal(v.cls, CASES[i].cls);
        assert_string_equal(v.code, CASES[i].code);
        assert_int_equal(hw_is_evidence(&v), !strcmp(CASES[i].cls, "hardware"));
        assert_non_null(strstr(!strcmp(CASES[i].code, "configuration") ? v.reason : c.why, CASES[i].why_has));
        /* a cause that says nothing was moved never claims the change was received */
        if (c.local)
            assert_null(strstr(c.why, "received the change"));
    }
}

/* The comm field: encoded and read back; a reader that predates it skips it (the record stays valid). */
static void test_comm_field(void **state)
{
    (void)state;
    rec_ext x, y;
    memset(&x, 0, sizeof(x));
    x.has_comm = 1;
    x.comm_size = 2;
    x.comm_nlisted = 2;
    x.comm_ranks[0] = 2;
    x.comm_ranks[1] = 3;
    x.comm_id = rec_comm_id(x.comm_ranks, 2);
    unsigned char buf[REC_EXT_ENCODED_MAX];
    size_t n = rec_ext_encode(&x, buf);
    assert_int_equal(n, 4 + 16 + 8);
    char why[128];
    assert_int_equal(rec_ext_parse(buf, n, &y, why, sizeof(why)), 0);
    assert_true(y.has_comm && y.comm_size == 2 && y.comm_nlisted == 2 && y.comm_ranks[1] == 3);
    assert_true(y.comm_id == x.comm_id);
    assert_true(rec_comm_id(x.comm_ranks, 1) != x.comm_id);
    buf[8] = 3; /* more listed ranks than the field holds */
    assert_int_equal(rec_ext_parse(buf, n, &y, why, sizeof(why)), -1);
    /* the size a record's shape states when it has no comm field */
    int64_t shape[2] = {1, 5};
    assert_int_equal(cause_comm_size("mpi.bcast", 9, 2, shape), 1);
    assert_int_equal(cause_comm_size("loss", 4, 2, shape), 0);
    assert_int_equal(cause_comm_size("mpi.bcast", 9, 1, shape), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cases), cmocka_unit_test(test_comm_field)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
