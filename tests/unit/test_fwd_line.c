/* test_fwd_line.c - forwards to a twin group's lease holder as JSON lines (server/twins/fwd_line.h): sums and looks
 * come back as they went (digests with the top bit set, the largest steps, names that need escaping), and a line
 * that is not one of them (another instance's bug, or anyone who can NOTIFY on the database) calls nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/twins/fwd_line.h"

/* What the handlers were given. */
static struct {
    int sums, looks;
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

/* parse - a line through fwd_line_parse into `got` (cleared first). */
static int parse(const char *line)
{
    memset(&got, 0, sizeof(got));
    return fwd_line_parse(line, on_sums, on_look);
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
        too_long,
        many,
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i]) != -1 || got.sums || got.looks)
            fail_msg("line %zu was taken: %.80s", i, bad[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sums_round_trip),
        cmocka_unit_test(test_look_round_trip),
        cmocka_unit_test(test_not_a_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
