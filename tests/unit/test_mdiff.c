/* test_mdiff.c - the manifest diff (common/json/mdiff.h), from the cases in tests/data/mdiff/ (adding a case needs no
 * code). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/json/mdiff.h"

#define CASE_DIR "tests/data/mdiff"

/* sorted_dump - an array's members as one sorted, comparable text. */
static char *sorted_dump(json_t *arr)
{
    size_t n = json_array_size(arr), i;
    char **parts = calloc(n + 1, sizeof(char *));
    json_t *x;
    json_array_foreach(arr, i, x) parts[i] = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && strcmp(parts[b - 1], parts[b]) > 0; b--) {
            char *t = parts[b];
            parts[b] = parts[b - 1];
            parts[b - 1] = t;
        }
    size_t len = 1;
    for (i = 0; i < n; i++)
        len += strlen(parts[i]) + 1;
    char *out = calloc(1, len);
    for (i = 0; i < n; i++) {
        strcat(out, parts[i]);
        strcat(out, "\n");
        free(parts[i]);
    }
    free(parts);
    return out;
}

static void run_case(const char *path)
{
    json_error_t err;
    json_t *c = json_load_file(path, 0, &err);
    if (!c)
        fail_msg("%s: %s (line %d)", path, err.text, err.line);
    json_t *runs = json_object_get(c, "runs"), *expect = json_object_get(c, "expect"), *r;
    md_run rs[8];
    size_t n = json_array_size(runs), i;
    assert_true(n <= 8);
    json_array_foreach(runs, i, r)
    {
        rs[i] = (md_run){
            json_string_value(json_object_get(r, "run_id")),       json_string_value(json_object_get(r, "job_id")),
            json_string_value(json_object_get(r, "step_id")),      json_string_value(json_object_get(r, "user")),
            json_string_value(json_object_get(r, "nodes")),        json_string_value(json_object_get(r, "command")),
            (long)json_integer_value(json_object_get(r, "ranks")), json_object_get(r, "manifests")};
    }
    json_t *got = md_diff(rs, (int)n);
    assert_non_null(got);
    const char *what = json_string_value(json_object_get(c, "what"));
    if (json_is_true(json_object_get(got, "explains")) != json_is_true(json_object_get(expect, "explains")))
        fail_msg("%s (%s): explains %d; summary: %s", path, what, json_is_true(json_object_get(got, "explains")),
                 json_string_value(json_object_get(got, "summary")));
    /* The differences as [key, class, ranks, change]. */
    json_t *diffs = json_array(), *d;
    json_array_foreach(json_object_get(got, "diffs"), i, d)
    {
        json_t *change = json_object_get(d, "change");
        json_array_append_new(diffs, json_pack("[O, O, O, O]", json_object_get(d, "key"), json_object_get(d, "class"),
                                               json_object_get(d, "ranks"), change ? change : json_null()));
        assert_non_null(json_object_get(d, "values"));
        assert_int_equal(json_array_size(json_object_get(d, "values")), n);
    }
    char *a = sorted_dump(diffs), *b = sorted_dump(json_object_get(expect, "diffs"));
    if (strcmp(a, b))
        fail_msg("%s (%s): differences\n%s\nwant\n%s", path, what, a, b);
    free(a);
    free(b);
    /* The identities, by key (each once). */
    json_t *ids = json_object(), *names = json_array();
    json_array_foreach(json_object_get(got, "identities"), i, d)
    {
        const char *k = json_string_value(json_object_get(d, "key"));
        if (!json_object_get(ids, k))
            json_array_append_new(names, json_string(k));
        json_object_set_new(ids, k, json_true());
    }
    a = sorted_dump(names);
    b = sorted_dump(json_object_get(expect, "identities"));
    if (strcmp(a, b))
        fail_msg("%s (%s): identities\n%s\nwant\n%s", path, what, a, b);
    assert_non_null(json_string_value(json_object_get(got, "summary")));
    const char *want_summary = json_string_value(json_object_get(expect, "summary"));
    if (want_summary && strcmp(want_summary, json_string_value(json_object_get(got, "summary"))))
        fail_msg("%s (%s): summary\n%s\nwant\n%s", path, what, json_string_value(json_object_get(got, "summary")),
                 want_summary);
    free(a);
    free(b);
    json_decref(ids);
    json_decref(names);
    json_decref(diffs);
    json_decref(got);
    json_decref(c);
}

static void test_cases(void **state)
{
    (void)state;
    DIR *d = opendir(CASE_DIR);
    if (!d)
        fail_msg("cannot open %s (run from the repository root)", CASE_DIR);
    struct dirent *de;
    int cases = 0;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", CASE_DIR, de->d_name);
        run_case(path);
        cases++;
    }
    closedir(d);
    assert_true(cases >= 6);
    print_message("%d manifest diff cases checked\n", cases);
}

static void test_classes(void **state)
{
    (void)state;
    assert_string_equal(md_key_class("env.NCCL_ALGO"), "configuration");
    assert_string_equal(md_key_class("env.NCCL_GRAPH_DUMP_FILE"), "identity");
    assert_string_equal(md_key_class("env.LOCKSTEP_RUN_ID"), "identity");
    assert_string_equal(md_key_class("env.LOCKSTEP_IGNORE"), "configuration");
    assert_string_equal(md_key_class("gpus.3.uuid"), "identity");
    assert_string_equal(md_key_class("gpus.3.sm_count"), "configuration");
    assert_string_equal(md_key_class("job.cpus_per_task"), "configuration");
    assert_string_equal(md_key_class("cpu_model"), "other");
    assert_string_equal(md_key_class("host"), "identity");
    assert_string_equal(md_key_class("used.threads.torch_intra"), "configuration");
    assert_string_equal(md_key_class("used.threads.omp"), "configuration");
    assert_string_equal(md_key_class("env.OPENBLAS_NUM_THREADS"), "configuration");
    assert_string_equal(md_key_class("env.LOCKSTEP_PY_NUM_THREADS"), "configuration");
    assert_string_equal(md_key_class("cwd"), "identity"); /* where it ran, as "exe": a narrow replays from there */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_classes),
    };
    return cmocka_run_group_tests_name("mdiff", tests, NULL, NULL);
}
