/* test_node_of.c - which node and GPU ran a rank in SQL (lockstep_node_of, lockstep_run_on_node:
 * sql/functions/nodes.sql) against the case table of the C rule (common/json/node_of.h, tests/data/node_of/cases.json)
 * on a real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sql/sqlt.h"

/* differs - 1 (after printing why) when column `f` of row 0 of `r` is not the case's `want` (a string, or null
 * for SQL NULL). */
static int differs(const char *what, PGresult *r, int f, const json_t *want)
{
    const char *got = PQgetisnull(r, 0, f) ? NULL : PQgetvalue(r, 0, f);
    const char *w = json_string_value(want);
    if (got ? w && !strcmp(got, w) : json_is_null(want))
        return 0;
    printf("%s: %s is %s%s%s, want %s%s%s\n", what, PQfname(r, f), got ? "\"" : "", got ? got : "NULL", got ? "\"" : "",
           w ? "\"" : "", w ? w : "NULL", w ? "\"" : "");
    return 1;
}

/* Every case of the table: lockstep_node_of answers what the C rule answers (reported, node, gpu, gpu_name); and a
 * run with the case's manifest (when one arrived) ran, by lockstep_run_on_node, on the manifest's reported host and
 * on no other. */
static void test_table(void **state)
{
    (void)state;
    json_t *doc = sqlt_cases("tests/data/node_of/cases.json"), *cs = json_object_get(doc, "cases"), *cse;
    assert_true(json_array_size(cs) >= 20);
    char key[32];
    sqlt_value(sqlt_c,
               "INSERT INTO runs (run_id, job_id, ranks) VALUES (gen_random_uuid(), 'node-of', 1) RETURNING run_key", 0,
               NULL, key, sizeof(key));
    size_t k;
    int bad = 0;
    json_array_foreach(cs, k, cse)
    {
        const char *what = json_string_value(json_object_get(cse, "what"));
        json_t *in = json_object_get(cse, "in"), *out = json_object_get(cse, "out");
        json_t *manifest = json_object_get(in, "manifest");
        char *m = json_dumps(manifest, JSON_COMPACT | JSON_ENCODE_ANY);
        const char *p[] = {json_is_null(manifest) ? NULL : m, json_string_value(json_object_get(in, "attested")),
                           sqlt_bool(json_is_true(json_object_get(in, "trust_reported_hosts"))),
                           json_string_value(json_object_get(in, "run_nodes"))};
        PGresult *r = sqlt_exec(
            sqlt_c, "SELECT reported, node, gpu, gpu_name FROM lockstep_node_of($1::jsonb, $2, $3, $4)", 4, p);
        assert_int_equal(PQntuples(r), 1);
        static const char *const field[] = {"reported", "node", "gpu", "gpu_name"};
        for (int f = 0; f < 4; f++)
            bad += differs(what, r, f, json_object_get(out, field[f]));
        PQclear(r);
        sqlt_do(sqlt_c, "DELETE FROM manifests WHERE run_key = $1", 1, (const char *const[]){key});
        if (!json_is_null(manifest)) {
            const char *q[] = {key, m};
            sqlt_do(sqlt_c, "INSERT INTO manifests (run_key, rank, manifest) VALUES ($1, 0, $2::jsonb)", 2, q);
        }
        const char *reported = json_string_value(json_object_get(out, "reported"));
        const char *on[] = {key, reported, "elsewhere"};
        char v[64];
        sqlt_value(sqlt_c,
                   "SELECT (lockstep_run_on_node($1, '', $2) = ($2 <> ''))::text || "
                   "(NOT lockstep_run_on_node($1, '', $3))::text",
                   3, on, v, sizeof(v));
        if (strcmp(v, "truetrue")) {
            printf("%s: lockstep_run_on_node does not say the run ran on \"%s\" alone\n", what, reported);
            bad++;
        }
        free(m);
    }
    json_decref(doc);
    if (bad)
        fail_msg("%d answers differ from the table", bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table)};
    return cmocka_run_group_tests_name("a rank's node and GPU in SQL", tests, sqlt_setup, sqlt_teardown);
}
