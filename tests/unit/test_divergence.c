/* test_divergence.c - a stored divergence's run entries read once into structs (server/twins/divergence.h), from a
 * table of stored "runs" arrays: with and without a majority, members missing, members of the wrong type; and the
 * rules that read the structs (the content key, the majority, the input fingerprints' state). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/twins/divergence.h"

#define FP "00000000000000aa"
#define VB "3ff0000000000000"
#define IN1 "0000000000000001"
#define IN2 "0000000000000002"

/* One case: a stored "runs" array, how many entries it reads as, and what entry `at` holds. */
static const struct {
    const char *what, *runs;
    int n, at;
    const char *run_id;
    int present;
    const char *fp, *value_bits, *role;
    div_majority majority;
    int ninputs;
    div_value value_kind;
    const char *value; /* the value as "%.17g" (a real) or "%lld" (an integer), "" otherwise */
    const char *key;   /* div_content_key */
    int has_majority;
} CASES[] = {
    {"a present record in the majority",
     "[{\"run_id\":\"a\",\"present\":true,\"fp\":\"" FP "\",\"value\":1.5,\"value_bits\":\"" VB "\",\"inputs\":[\"" IN1
     "\",\"" IN2 "\"],\"majority\":true}]",
     1, 0, "a", 1, FP, VB, NULL, DIV_MAJORITY_IN, 2, DIV_VALUE_REAL, "1.5", FP "/" VB, 1},
    {"the run outside the majority",
     "[{\"run_id\":\"a\",\"majority\":true},{\"run_id\":\"b\",\"present\":true,\"fp\":\"" FP
     "\",\"value\":null,\"majority\":false}]",
     2, 1, "b", 1, FP, NULL, NULL, DIV_MAJORITY_OUT, 0, DIV_VALUE_NULL, "", FP "/-", 1},
    {"no majority said",
     "[{\"run_id\":\"a\",\"present\":true,\"fp\":\"" FP "\",\"value\":7},{\"run_id\":\"b\",\"present\":false}]", 2, 0,
     "a", 1, FP, NULL, NULL, DIV_MAJORITY_UNSAID, 0, DIV_VALUE_INT, "7", FP "/-", 0},
    {"a record the run lacks", "[{\"run_id\":\"a\",\"present\":false,\"fp\":null,\"value\":null,\"majority\":false}]",
     1, 0, "a", 0, NULL, NULL, NULL, DIV_MAJORITY_OUT, 0, DIV_VALUE_NULL, "", "missing", 1},
    {"a restore difference's role", "[{\"run_id\":\"a\",\"present\":true,\"fp\":\"" FP "\",\"role\":\"restored\"}]", 1,
     0, "a", 1, FP, NULL, "restored", DIV_MAJORITY_UNSAID, 0, DIV_VALUE_NONE, "", FP "/-", 0},
    {"every member missing", "[{}]", 1, 0, "", 0, NULL, NULL, NULL, DIV_MAJORITY_UNSAID, 0, DIV_VALUE_NONE, "",
     "missing", 0},
    {"members of the wrong type",
     "[{\"run_id\":5,\"present\":\"true\",\"fp\":12,\"value_bits\":[],\"role\":false,\"majority\":\"yes\","
     "\"inputs\":\"" IN1 "\",\"value\":\"1.0\"}]",
     1, 0, "", 0, NULL, NULL, NULL, DIV_MAJORITY_UNSAID, 0, DIV_VALUE_NULL, "", "missing", 0},
    {"a majority of 1 is no boolean", "[{\"run_id\":\"a\",\"present\":true,\"majority\":1}]", 1, 0, "a", 1, NULL, NULL,
     NULL, DIV_MAJORITY_UNSAID, 0, DIV_VALUE_NONE, "", "/-", 0},
    {"an input that is no 16 hex digits",
     "[{\"run_id\":\"a\",\"present\":true,\"inputs\":[\"" IN1 "\",\"00000000000000zz\"]}]", 1, 0, "a", 1, NULL, NULL,
     NULL, DIV_MAJORITY_UNSAID, 0, DIV_VALUE_NONE, "", "/-", 0},
    {"an input of the wrong type",
     "[{\"run_id\":\"a\",\"present\":true,\"inputs\":["
     "1"
     "]}]",
     1, 0, "a", 1, NULL, NULL, NULL, DIV_MAJORITY_UNSAID, 0, DIV_VALUE_NONE, "", "/-", 0},
    {"an element that is no object", "[\"a\",{\"run_id\":\"b\"}]", 2, 0, "", 0, NULL, NULL, NULL, DIV_MAJORITY_UNSAID,
     0, DIV_VALUE_NONE, "", "missing", 0},
};

static void check_str(const char *what, const char *member, const char *got, const char *want)
{
    if ((got == NULL) != (want == NULL) || (got && strcmp(got, want)))
        fail_msg("%s: %s is %s, want %s", what, member, got ? got : "NULL", want ? want : "NULL");
}

static void test_read_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        const char *what = CASES[i].what;
        json_t *runs = json_loads(CASES[i].runs, 0, NULL);
        if (!runs)
            fail_msg("%s: the case's JSON does not parse", what);
        div_entry *e;
        int n;
        div_entries_read(runs, &e, &n);
        json_decref(runs); /* the entries own their strings */
        if (n != CASES[i].n)
            fail_msg("%s: %d entries, want %d", what, n, CASES[i].n);
        const div_entry *x = &e[CASES[i].at];
        check_str(what, "run_id", x->run_id, CASES[i].run_id);
        check_str(what, "fp", x->fp, CASES[i].fp);
        check_str(what, "value_bits", x->value_bits, CASES[i].value_bits);
        check_str(what, "role", x->role, CASES[i].role);
        if (x->present != CASES[i].present)
            fail_msg("%s: present %d, want %d", what, x->present, CASES[i].present);
        if (x->majority != CASES[i].majority)
            fail_msg("%s: majority %d, want %d", what, x->majority, CASES[i].majority);
        if (x->ninputs != CASES[i].ninputs || (x->ninputs == 0) != (x->inputs == NULL))
            fail_msg("%s: %d inputs, want %d", what, x->ninputs, CASES[i].ninputs);
        if (x->value_kind != CASES[i].value_kind)
            fail_msg("%s: value kind %d, want %d", what, x->value_kind, CASES[i].value_kind);
        char v[64] = "";
        if (x->value_kind == DIV_VALUE_REAL)
            snprintf(v, sizeof(v), "%.17g", x->value);
        else if (x->value_kind == DIV_VALUE_INT)
            snprintf(v, sizeof(v), "%lld", x->value_int);
        check_str(what, "value", v, CASES[i].value);
        char key[160];
        div_content_key(x, key, sizeof(key));
        check_str(what, "content key", key, CASES[i].key);
        if (div_has_majority(e, n) != CASES[i].has_majority)
            fail_msg("%s: has a majority %d, want %d", what, div_has_majority(e, n), CASES[i].has_majority);
        div_entries_free(e, n);
    }
}

static void test_not_an_array(void **state)
{
    (void)state;
    const char *docs[] = {"{\"run_id\":\"a\"}", "null", "\"runs\"", "3"};
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_t *j = json_loads(docs[i], JSON_DECODE_ANY, NULL);
        div_entry *e = NULL;
        int n = -1;
        div_entries_read(j, &e, &n);
        assert_int_equal(n, 0);
        assert_non_null(e);
        div_entries_free(e, n);
        json_decref(j);
    }
    div_entry *e = NULL;
    int n = -1;
    div_entries_read(NULL, &e, &n);
    assert_int_equal(n, 0);
    div_entries_free(e, n);
}

static void test_entry_of(void **state)
{
    (void)state;
    json_t *runs =
        json_loads("[{\"run_id\":\"a\",\"fp\":\"1\"},{\"run_id\":\"b\"},{\"run_id\":\"a\",\"fp\":\"2\"}]", 0, NULL);
    div_entry *e;
    int n;
    div_entries_read(runs, &e, &n);
    json_decref(runs);
    assert_ptr_equal(div_entry_of(e, n, "a"), &e[0]); /* the first that names it */
    assert_ptr_equal(div_entry_of(e, n, "b"), &e[1]);
    assert_null(div_entry_of(e, n, "c"));
    assert_null(div_entry_of(e, n, ""));
    char key[32];
    div_content_key(NULL, key, sizeof(key));
    assert_string_equal(key, "missing");
    div_entries_free(e, n);
}

/* The input fingerprints' state over a divergence's entries, as the cause rule reads it. */
static const struct {
    const char *what, *runs;
    cause_inputs want;
} INPUTS[] = {
    {"the same inputs", "[{\"present\":true,\"inputs\":[\"" IN1 "\"]},{\"present\":true,\"inputs\":[\"" IN1 "\"]}]",
     CAUSE_IN_SAME},
    {"other inputs", "[{\"present\":true,\"inputs\":[\"" IN1 "\"]},{\"present\":true,\"inputs\":[\"" IN2 "\"]}]",
     CAUSE_IN_DIFF},
    {"more inputs on one run",
     "[{\"present\":true,\"inputs\":[\"" IN1 "\"]},{\"present\":true,\"inputs\":[\"" IN1 "\",\"" IN2 "\"]}]",
     CAUSE_IN_DIFF},
    {"one run lacks the record",
     "[{\"present\":true,\"inputs\":[\"" IN1 "\"]},{\"present\":false,\"inputs\":[\"" IN1 "\"]}]", CAUSE_IN_UNKNOWN},
    {"one run carries no inputs", "[{\"present\":true,\"inputs\":[\"" IN1 "\"]},{\"present\":true,\"inputs\":null}]",
     CAUSE_IN_UNKNOWN},
    {"one run's inputs are empty", "[{\"present\":true,\"inputs\":[\"" IN1 "\"]},{\"present\":true,\"inputs\":[]}]",
     CAUSE_IN_UNKNOWN},
    {"one run alone", "[{\"present\":true,\"inputs\":[\"" IN1 "\"]}]", CAUSE_IN_UNKNOWN},
    {"no runs", "[]", CAUSE_IN_UNKNOWN},
};

static void test_inputs_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(INPUTS) / sizeof(INPUTS[0]); i++) {
        json_t *runs = json_loads(INPUTS[i].runs, 0, NULL);
        div_entry *e;
        int n;
        div_entries_read(runs, &e, &n);
        json_decref(runs);
        cause_inputs got = div_inputs_state(e, n);
        if (got != INPUTS[i].want)
            fail_msg("%s: inputs state %d, want %d", INPUTS[i].what, got, INPUTS[i].want);
        div_entries_free(e, n);
    }
}

/* The communicator an entry states, and a restore difference's status and counts, read with the rest. */
static void test_comm_and_restore(void **state)
{
    (void)state;
    json_t *runs = json_loads("[{\"run_id\":\"a\",\"present\":true,\"comm\":{\"size\":3,\"ranks\":[0,2,5]}},"
                              "{\"run_id\":\"b\",\"comm\":{\"size\":4,\"ranks\":[0,2]}},"
                              "{\"run_id\":\"c\",\"comm\":{\"size\":2,\"ranks\":[0,\"x\"]}},"
                              "{\"run_id\":\"d\",\"comm\":{\"size\":\"2\"}},"
                              "{\"run_id\":\"e\",\"role\":\"restored\",\"status\":\"not-restored\","
                              "\"not_restored\":21,\"not_saved\":-1}]",
                              0, NULL);
    div_entry *e;
    int n;
    div_entries_read(runs, &e, &n);
    json_decref(runs);
    assert_int_equal(n, 5);
    assert_int_equal(e[0].comm_size, 3);
    assert_int_equal(e[0].comm_nranks, 3);
    assert_int_equal(e[0].comm_ranks[2], 5);
    assert_int_equal(e[1].comm_size, 4); /* ranks not all listed: the size alone */
    assert_null(e[1].comm_ranks);
    assert_int_equal(e[2].comm_size, 2); /* a rank that is no integer: not listed */
    assert_null(e[2].comm_ranks);
    assert_int_equal(e[3].comm_size, 0); /* a size that is no integer: no communicator */
    assert_string_equal(e[4].restore_status, "not-restored");
    assert_int_equal(e[4].not_restored, 21);
    assert_int_equal(e[4].not_saved, 0);
    assert_null(e[0].restore_status);
    div_entries_free(e, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_read_table), cmocka_unit_test(test_not_an_array),
                                       cmocka_unit_test(test_entry_of), cmocka_unit_test(test_inputs_table),
                                       cmocka_unit_test(test_comm_and_restore)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
