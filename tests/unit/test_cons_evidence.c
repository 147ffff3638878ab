/* test_cons_evidence.c - whether a consensus disagreement is hardware evidence (server/rules/cons_evidence.h), from the
 * case table tests/data/cons_evidence/cases.json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "server/rules/cons_evidence.h"

#define CASES "tests/data/cons_evidence/cases.json"

static int num(json_t *facts, const char *k)
{
    json_t *v = json_object_get(facts, k);
    return json_is_true(v) ? 1 : (int)json_integer_value(v);
}

static void test_table(void **state)
{
    (void)state;
    const char *src = getenv("LOCKSTEP_SRC");
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", src && *src ? src : ".", CASES);
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err), *cs = json_object_get(doc, "cases"), *c;
    if (!json_is_array(cs) || !json_array_size(cs))
        fail_msg("%s:%d: %s", path, err.line, doc ? "no cases" : err.text);
    static const char *const weights[] = {"none", "weak", "strong"};
    size_t k;
    json_array_foreach(cs, k, c)
    {
        const char *what = json_string_value(json_object_get(c, "what"));
        json_t *fj = json_object_get(c, "facts");
        cons_ev_facts f = {.clear = num(fj, "clear"),
                           .comm_size = num(fj, "comm_size"),
                           .n_odd = num(fj, "n_odd"),
                           .unattested = num(fj, "unattested"),
                           .odd_nodes = num(fj, "odd_nodes"),
                           .odd_rank = num(fj, "odd_rank"),
                           .node = json_string_value(json_object_get(fj, "node")),
                           .gpu = json_string_value(json_object_get(fj, "gpu")),
                           .repeat_runs = num(fj, "repeat_runs"),
                           .repeat_nodes = num(fj, "repeat_nodes"),
                           .program_runs = num(fj, "program_runs") ? num(fj, "program_runs") : 1,
                           .spread = 4};
        cons_ev_verdict v;
        cons_ev_judge(&f, &v);
        print_message("case %zu: %s -> %s/%s %s: %s\n", k, what, v.cls, v.code, weights[v.weight], v.reason);
        if (strcmp(v.cls, json_string_value(json_object_get(c, "cls"))) ||
            strcmp(v.code, json_string_value(json_object_get(c, "code"))) ||
            strcmp(weights[v.weight], json_string_value(json_object_get(c, "weight"))))
            fail_msg("%s: got %s/%s %s", what, v.cls, v.code, weights[v.weight]);
        if (!strstr(v.reason, json_string_value(json_object_get(c, "has"))))
            fail_msg("%s: the reason \"%s\" lacks \"%s\"", what, v.reason,
                     json_string_value(json_object_get(c, "has")));
        /* evidence exactly for the hardware class */
        assert_int_equal(v.weight != CONS_EV_NONE, !strcmp(v.cls, "hardware"));
    }
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
