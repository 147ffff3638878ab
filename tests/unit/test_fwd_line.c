/* test_fwd_line.c - forwards to a lease holder as JSON lines (server/peers/fwd_line.h): a twin group's sums and
 * looks and a run's consensus digests and checks come back as they went (digests with the top bit set, the largest
 * steps, names that need escaping, 64 listed ranks), and a line that is not one of them (another instance's bug, or
 * anyone who can NOTIFY on the database) calls nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/peers/fwd_line.h"

/* What the handlers were given. */
static struct {
    int sums, looks, cons, cons_looks;
    srv_cons_digest d[FWD_CONS_PER_LINE];
    double commit_s;
    char group[300];
    int64_t run_key, counted;
    int rank, flags;
    store_step steps[FWD_STEPS_PER_LINE];
    size_t n;
} got;

static void on_sums(const char *group, int64_t run_key, int rank, const store_step *steps, size_t n, int64_t counted,
                    int flags)
{
    got.sums++;
    strncpy(got.group, group, sizeof(got.group) - 1);
    got.run_key = run_key;
    got.rank = rank;
    got.counted = counted;
    got.flags = flags;
    got.n = n;
    memcpy(got.steps, steps, n * sizeof(*steps));
}

static void on_look(const char *group, int rank)
{
    got.looks++;
    strncpy(got.group, group, sizeof(got.group) - 1);
    got.rank = rank;
}

static void on_cons(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s)
{
    got.cons++;
    got.run_key = run_key;
    got.rank = (int)rank;
    got.n = n;
    got.commit_s = commit_s;
    memcpy(got.d, d, n * sizeof(*d));
}

static void on_cons_look(int64_t run_key)
{
    got.cons_looks++;
    got.run_key = run_key;
}

static const fwd_handlers handlers = {on_sums, on_look, on_cons, on_cons_look};

/* parse - a line through fwd_line_parse into `got` (cleared first). */
static int parse(const char *line)
{
    memset(&got, 0, sizeof(got));
    return fwd_line_parse(line, &handlers);
}

static char *dump(json_t *o)
{
    assert_non_null(o);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    assert_non_null(s);
    return s;
}

static void test_sums_round_trip(void **state)
{
    (void)state;
    store_step st[FWD_STEPS_PER_LINE];
    for (int i = 0; i < FWD_STEPS_PER_LINE; i++)
        st[i] = (store_step){.step = INT64_MAX - i,
                             .n = i,
                             .digest = 0x8000000000000001ULL + (uint64_t)i,
                             .inputs = UINT64_MAX - (uint64_t)i,
                             .inputs_unknown = i % 2};
    const char *group = "alice/exp \"1\"\n\\tab\t";
    char *line = dump(fwd_line_sums(group, 42, 16777216, st, FWD_STEPS_PER_LINE, 123456789012LL, FWD_DIGESTS));
    assert_null(strchr(line, '\n')); /* a line: the notification's separator never appears inside */
    assert_null(strchr(line, '\x1e'));
    assert_int_equal(parse(line), 0);
    free(line);
    assert_int_equal(got.sums, 1);
    assert_int_equal(got.looks, 0);
    assert_string_equal(got.group, group);
    assert_int_equal(got.run_key, 42);
    assert_int_equal(got.rank, 16777216);
    assert_int_equal(got.counted, 123456789012LL);
    assert_int_equal(got.flags, FWD_DIGESTS);
    assert_int_equal(got.n, FWD_STEPS_PER_LINE);
    for (int i = 0; i < FWD_STEPS_PER_LINE; i++) {
        assert_int_equal(got.steps[i].step, st[i].step);
        assert_int_equal(got.steps[i].n, st[i].n);
        assert_int_equal(got.steps[i].digest, st[i].digest);
        assert_int_equal(got.steps[i].inputs, st[i].inputs);
        assert_int_equal(got.steps[i].inputs_unknown, st[i].inputs_unknown);
    }
    /* no steps (a batch of state entries only) */
    line = dump(fwd_line_sums("g", 1, 0, st, 0, 5, 0));
    assert_int_equal(parse(line), 0);
    free(line);
    assert_int_equal(got.sums, 1);
    assert_int_equal(got.n, 0);
    assert_int_equal(got.counted, 5);
    assert_null(fwd_line_sums("g", 1, 0, st, FWD_STEPS_PER_LINE + 1, 0, 0)); /* one line holds so many at most */
}

static void test_look_round_trip(void **state)
{
    (void)state;
    char *line = dump(fwd_line_look("grp", 7));
    assert_int_equal(parse(line), 0);
    free(line);
    assert_int_equal(got.looks, 1);
    assert_int_equal(got.sums, 0);
    assert_string_equal(got.group, "grp");
    assert_int_equal(got.rank, 7);
}

static void test_cons_round_trip(void **state)
{
    (void)state;
    srv_cons_digest d[FWD_CONS_PER_LINE];
    memset(d, 0, sizeof(d));
    for (uint32_t i = 0; i < FWD_CONS_PER_LINE; i++) {
        d[i] = (srv_cons_digest){.step = INT64_MIN + i,
                                 .key = 0xF000000000000000ULL | i,
                                 .win = UINT32_MAX - i,
                                 .n = i,
                                 .fold = UINT64_MAX - i,
                                 .size = 1u << 24,
                                 .n_listed = i % 2 ? REC_COMM_LIST_MAX : 0};
        for (uint32_t k = 0; k < d[i].n_listed; k++)
            d[i].ranks[k] = k * 1000 + i;
    }
    char *line = dump(fwd_line_cons(7, 3, d, FWD_CONS_PER_LINE, 1764934800.125));
    assert_true(strlen(line) < 7900); /* inside one notification */
    assert_int_equal(parse(line), 0);
    free(line);
    assert_int_equal(got.cons, 1);
    assert_int_equal(got.sums + got.looks + got.cons_looks, 0);
    assert_int_equal(got.run_key, 7);
    assert_int_equal(got.rank, 3);
    assert_true(got.commit_s == 1764934800.125);
    assert_int_equal(got.n, FWD_CONS_PER_LINE);
    for (int i = 0; i < FWD_CONS_PER_LINE; i++) {
        assert_int_equal(got.d[i].step, d[i].step);
        assert_int_equal(got.d[i].key, d[i].key);
        assert_int_equal(got.d[i].win, d[i].win);
        assert_int_equal(got.d[i].n, d[i].n);
        assert_int_equal(got.d[i].fold, d[i].fold);
        assert_int_equal(got.d[i].size, d[i].size);
        assert_int_equal(got.d[i].n_listed, d[i].n_listed);
        assert_memory_equal(got.d[i].ranks, d[i].ranks, d[i].n_listed * sizeof(uint32_t));
    }
    assert_null(fwd_line_cons(7, 3, d, FWD_CONS_PER_LINE + 1, 0));
    line = dump(fwd_line_cons_look(9));
    assert_int_equal(parse(line), 0);
    free(line);
    assert_int_equal(got.cons_looks, 1);
    assert_int_equal(got.run_key, 9);
    /* a listener without handlers for a kind takes its lines and calls nothing */
    const fwd_handlers none = {0};
    line = dump(fwd_line_look("g", 1));
    assert_int_equal(fwd_line_parse(line, &none), 0);
    free(line);
}

static void test_not_a_forward(void **state)
{
    (void)state;
    char long_group[400];
    memset(long_group, 'a', sizeof(long_group));
    long_group[0] = '{';
    char too_long[600];
    snprintf(too_long, sizeof(too_long), "{\"g\":\"%.256s\",\"r\":1,\"l\":true}", long_group + 1);
    char many[4096] = "{\"g\":\"g\",\"k\":1,\"r\":0,\"c\":0,\"f\":0,\"s\":[";
    for (int i = 0; i <= FWD_STEPS_PER_LINE; i++)
        strcat(many, i ? ",[1,1,1,1,0]" : "[1,1,1,1,0]");
    strcat(many, "]}");
    char listed[2048] = "{\"q\":1,\"r\":0,\"t\":1,\"d\":[[1,1,1,1,1,4,[";
    for (int i = 0; i <= REC_COMM_LIST_MAX; i++)
        strcat(listed, i ? ",1" : "1");
    strcat(listed, "]]]}");
    const char *bad[] = {
        "",
        "not json",
        "[1,2,3]",
        "{\"r\":1,\"l\":true}",                                                /* no group */
        "{\"g\":\"\",\"r\":1,\"l\":true}",                                     /* empty group */
        "{\"g\":7,\"r\":1,\"l\":true}",                                        /* a group that is not text */
        "{\"g\":\"g\",\"r\":-1,\"l\":true}",                                   /* a negative rank */
        "{\"g\":\"g\",\"r\":16777217,\"l\":true}",                             /* past 2^24 */
        "{\"g\":\"g\",\"r\":\"1\",\"l\":true}",                                /* a rank as text */
        "{\"g\":\"g\",\"r\":1}",                                               /* neither look nor sums */
        "{\"g\":\"g\",\"k\":1,\"r\":0,\"c\":0,\"f\":0,\"s\":{}}",              /* steps not an array */
        "{\"g\":\"g\",\"k\":1,\"r\":0,\"c\":0,\"f\":0,\"s\":[[1,1,1,1]]}",     /* a step of 4 */
        "{\"g\":\"g\",\"k\":1,\"r\":0,\"c\":0,\"f\":0,\"s\":[[1,1,1.5,1,0]]}", /* a digest that is no integer */
        "{\"g\":\"g\",\"k\":1,\"r\":0,\"c\":0,\"f\":0,\"s\":[[1,1,1,1,0],7]}", /* a step that is no array */
        "{\"g\":\"g\",\"k\":\"1\",\"r\":0,\"c\":0,\"f\":0,\"s\":[]}",          /* a run key as text */
        "{\"g\":\"g\",\"k\":1,\"r\":0,\"f\":0,\"s\":[]}",                      /* no count */
        "{\"q\":0,\"l\":true}",                                                /* no run has key 0 */
        "{\"q\":-5,\"l\":true}",
        "{\"q\":1,\"r\":0,\"t\":1,\"d\":[[1,1,1,1,1,0,[]]]}",   /* a group of no members */
        "{\"q\":1,\"r\":0,\"t\":1,\"d\":[[1,1,-1,1,1,4,[]]]}",  /* a negative window */
        "{\"q\":1,\"r\":0,\"t\":1,\"d\":[[1,1,1,1,1,4,[-2]]]}", /* a negative listed rank */
        "{\"q\":1,\"r\":0,\"t\":\"x\",\"d\":[]}",               /* a commit time as text */
        "{\"q\":1,\"r\":0,\"t\":1,\"d\":[[1,1,1,1,1,4]]}",      /* a digest of 6 */
        "{\"q\":1,\"r\":0,\"t\":1,\"d\":[[1,1,1,1,1,4,[]],[1,1,1,1,1,4,[]],[1,1,1,1,1,4,[]],[1,1,1,1,1,4,[]],"
        "[1,1,1,1,1,4,[]],[1,1,1,1,1,4,[]],[1,1,1,1,1,4,[]],[1,1,1,1,1,4,[]],[1,1,1,1,1,4,[]]]}", /* 9 digests */
        too_long,
        many,
        listed,
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i]) != -1 || got.sums || got.looks || got.cons || got.cons_looks)
            fail_msg("line %zu was taken: %.80s", i, bad[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sums_round_trip),
        cmocka_unit_test(test_look_round_trip),
        cmocka_unit_test(test_cons_round_trip),
        cmocka_unit_test(test_not_a_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
