/* test_node_of.c - which node and GPU ran a rank (common/json/node_of.h), from tests/data/node_of/cases.json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/json/node_of.h"

#define CASES "tests/data/node_of/cases.json"

/* same - 1 when a result string equals the case's (a JSON string, or null for NULL). */
static int same(const char *got, const json_t *want)
{
    if (json_is_null(want))
        return got == NULL;
    return got && json_is_string(want) && !strcmp(got, json_string_value(want));
}

static void test_cases(void **state)
{
    (void)state;
    json_error_t err;
    json_t *doc = json_load_file(CASES, 0, &err);
    if (!doc)
        fail_msg("%s: %s (line %d)", CASES, err.text, err.line);
    json_t *cases = json_object_get(doc, "cases"), *c;
    size_t i;
    assert_true(json_array_size(cases) >= 20);
    json_array_foreach(cases, i, c)
    {
        json_t *in = json_object_get(c, "in"), *want = json_object_get(c, "out");
        node_facts f = {json_string_value(json_object_get(in, "attested")),
                        json_is_true(json_object_get(in, "trust_reported_hosts")),
                        json_string_value(json_object_get(in, "run_nodes"))};
        node_place p;
        node_of_rank(json_object_get(in, "manifest"), &f, &p);
        const char *what = json_string_value(json_object_get(c, "what"));
        if (!same(p.reported, json_object_get(want, "reported")) || !same(p.node, json_object_get(want, "node")) ||
            !same(p.gpu, json_object_get(want, "gpu")) || !same(p.gpu_name, json_object_get(want, "gpu_name")))
            fail_msg("case \"%s\": reported '%s' node '%s' gpu '%s' name '%s'", what, p.reported,
                     p.node ? p.node : "(null)", p.gpu, p.gpu_name);
        if (strcmp(p.reported, node_of_reported(json_object_get(in, "manifest"))))
            fail_msg("case \"%s\": node_of_reported disagrees with node_of_rank", what);
    }
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
