/* test_wire.c - the requests the agent and the SPANK plugin send lockstepd the same way (common/wire.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/jsonw.h"
#include "common/wire.h"

static void test_body(void **state)
{
    (void)state;
    wire_run r = {.job_id = "42",
                  .step_id = "0.r1",
                  .twin_group = "g \"1\"",
                  .ranks = 4,
                  .start_step = 90000,
                  .user = "alice",
                  .partition = "gpu",
                  .nodes = "n[1-2]",
                  .command = "train --lr 1e-3",
                  .mode = "det",
                  .client_id = "spank:42.0.r1",
                  .resume = "train --resume /ck/step-{step}"};
    char *b = wire_run_body(&r);
    assert_non_null(b);
    json_error_t e;
    json_t *o = json_loads(b, 0, &e);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "twin_group")), "g \"1\"");
    assert_string_equal(json_string_value(json_object_get(o, "partition")), "gpu");
    assert_string_equal(json_string_value(json_object_get(o, "client_id")), "spank:42.0.r1");
    assert_int_equal(json_integer_value(json_object_get(o, "start_step")), 90000);
    assert_int_equal(json_integer_value(json_object_get(o, "ranks")), 4);
    assert_string_equal(json_string_value(json_object_get(o, "resume")), "train --resume /ck/step-{step}");
    json_decref(o);
    free(b);
    /* optional fields that are empty are left out */
    wire_run m = {.job_id = "7", .step_id = "0", .ranks = 1, .twin_group = ""};
    b = wire_run_body(&m);
    o = json_loads(b, 0, &e);
    assert_null(json_object_get(o, "twin_group"));
    assert_null(json_object_get(o, "client_id"));
    assert_null(json_object_get(o, "resume"));
    json_decref(o);
    free(b);
    /* a command lockstepd would refuse (newlines of a `python -c` program, bytes that are not UTF-8, too long) is
     * sent as one line that fits: the run is registered, not refused */
    char *big = malloc(3 * WIRE_COMMAND_MAX);
    assert_non_null(big);
    memset(big, 'x', 3 * WIRE_COMMAND_MAX - 1);
    big[3 * WIRE_COMMAND_MAX - 1] = 0;
    memcpy(big, "python3 -c 'import os\nprint(1)'\xff ", 33);
    wire_run c = {.job_id = "8", .step_id = "0", .ranks = 1, .command = big};
    b = wire_run_body(&c);
    o = json_loads(b, 0, &e);
    const char *cmd = json_string_value(json_object_get(o, "command"));
    assert_non_null(cmd);
    assert_true(strlen(cmd) < WIRE_COMMAND_MAX);
    const char *head = "python3 -c 'import os print(1)'? xxx";
    assert_true(!strncmp(cmd, head, strlen(head)));
    assert_string_equal(cmd + strlen(cmd) - 3, "...");
    json_decref(o);
    free(b);
    free(big);
}

/* The program's argument vector goes as it is, every word a JSON string; one lockstepd would refuse is left out, and
 * so is a resume template it would refuse: the run registers either way. */
static void test_body_argv(void **state)
{
    (void)state;
    char *argv[] = {"python3", "train.py", "--name", "a b; touch x #", "$(id)", "line\nbreak", "", NULL};
    wire_run r = {.job_id = "9", .step_id = "0", .ranks = 1, .command = "python3 train.py", .argv = argv, .argc = 7};
    char *b = wire_run_body(&r);
    json_error_t e;
    json_t *o = json_loads(b, 0, &e);
    json_t *a = json_object_get(o, "argv");
    assert_int_equal(json_array_size(a), 7);
    for (int i = 0; i < 7; i++)
        assert_string_equal(json_string_value(json_array_get(a, (size_t)i)), argv[i]);
    json_decref(o);
    free(b);
    char *bad[] = {"train", "caf\xc3", NULL};
    char *empty[] = {"", "x", NULL};
    char *const *refused[] = {bad, empty, NULL};
    int counts[] = {2, 2, 0};
    for (int k = 0; k < 3; k++) {
        wire_run x = {
            .job_id = "9", .ranks = 1, .argv = refused[k], .argc = counts[k], .resume = "train --resume '{step}"};
        b = wire_run_body(&x);
        o = json_loads(b, 0, &e);
        assert_non_null(o);
        assert_null(json_object_get(o, "argv"));
        assert_null(json_object_get(o, "resume"));
        json_decref(o);
        free(b);
    }
    char **many = calloc(WIRE_ARGV_WORDS + 2, sizeof(char *));
    for (int i = 0; i <= WIRE_ARGV_WORDS; i++)
        many[i] = "w";
    assert_true(wire_argv_valid(many, WIRE_ARGV_WORDS));
    assert_false(wire_argv_valid(many, WIRE_ARGV_WORDS + 1));
    free(many);
    char *long_word = malloc(WIRE_ARGV_MAX + 1);
    memset(long_word, 'x', WIRE_ARGV_MAX);
    long_word[WIRE_ARGV_MAX] = 0;
    char *one[] = {long_word, NULL};
    assert_false(wire_argv_valid(one, 1)); /* WIRE_ARGV_MAX + 1 bytes with its NUL: one too many */
    long_word[WIRE_ARGV_MAX - 1] = 0;
    assert_true(wire_argv_valid(one, 1));
    free(long_word);
}

/* Resume templates (--lockstep-resume), from a table: what names the checkpoint, what is refused and why. */
static void test_resume_check(void **state)
{
    (void)state;
    static const struct {
        const char *tpl, *why; /* why: a part of the reason when refused, NULL when accepted */
    } CASES[] = {
        {"train --resume /ck/step-{step}", NULL},
        {"train --resume {path} --steps {stop}", NULL},
        {"python train.py --ckpt {path} --start {step} --max-steps {stop}", NULL},
        {"train --resume {path} {path}", NULL},
        {"", "empty"},
        {"train --steps {stop}", "names no checkpoint"},
        {"train --resume /ck/latest", "names no checkpoint"},
        {"train --resume {checkpoint}", "names {checkpoint}"},
        {"train --resume {Step}", "names {Step}"},
        {"awk '{print}' {step}", "names {print}"},
        {"train --resume '{path}' --note \"it's here\"", NULL},
        {"train --resume '{path}", "does not end"},
        {"train --resume \"{path}", "does not end"},
        {"train --resume {path} \\", "backslash ends"},
        {"train --resume {path}\ntouch owned", "control character"},
        {"train\t--resume {step}", "control character"},
        {"train --resume {step} \xff", "control character"},
    };
    char why[300];
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        why[0] = 0;
        int rc = wire_resume_check(CASES[i].tpl, why, sizeof(why));
        if ((rc == 0) != (CASES[i].why == NULL) || (CASES[i].why && !strstr(why, CASES[i].why)))
            fail_msg("template '%s': rc %d (%s), want %s", CASES[i].tpl, rc, why, CASES[i].why ? CASES[i].why : "ok");
    }
    char big[WIRE_RESUME_MAX + 8];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    memcpy(big, "{step}", 6);
    assert_int_equal(wire_resume_check(big, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "longer than"));
    assert_int_equal(wire_resume_check(NULL, why, sizeof(why)), -1);
}

static void test_attest_body(void **state)
{
    (void)state;
    unsigned ranks[] = {2, 3, 6};
    wire_attest a = {.job_id = "42",
                     .step_id = "0",
                     .node = "n3",
                     .node_index = 2,
                     .user = "alice",
                     .nodes = "n[1-4]",
                     .gpus = "",
                     .ranks = ranks,
                     .nranks = 3};
    char *b = wire_attest_body(&a);
    assert_non_null(b);
    json_t *o = json_loads(b, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "node")), "n3");
    assert_int_equal(json_integer_value(json_object_get(o, "node_index")), 2);
    assert_string_equal(json_string_value(json_object_get(o, "nodes")), "n[1-4]");
    assert_null(json_object_get(o, "gpus")); /* empty: left out */
    assert_int_equal(json_array_size(json_object_get(o, "ranks")), 3);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(o, "ranks"), 2)), 6);
    json_decref(o);
    free(b);
}

static void test_lookup_path(void **state)
{
    (void)state;
    char p[256];
    assert_int_equal(wire_lookup_path("42", "0.r1", p, sizeof(p)), 0);
    assert_string_equal(p, "/api/v1/runs?job=42&step=0.r1&limit=1000");
    assert_int_equal(wire_lookup_path("4&2", "a b", p, sizeof(p)), 0); /* escaped, not a second argument */
    assert_string_equal(p, "/api/v1/runs?job=4%262&step=a%20b&limit=1000");
    assert_int_equal(wire_lookup_path("42", "0", p, 10), -1);
}

static void test_pick(void **state)
{
    (void)state;
    char id[64];
    const char *list =
        "{\"items\":[{\"run_id\":\"r-0\",\"job_id\":\"42\",\"step_id\":\"0\",\"command\":\"run_id job_id\"},"
        "{\"run_id\":\"r-1\",\"job_id\":\"42\",\"step_id\":\"0.r1\",\"nested\":{\"step_id\":\"x\"}}],"
        "\"total\":2,\"limit\":1000,\"next_cursor\":null}";
    assert_int_equal(wire_lookup_pick(list, "42", "0.r1", id, sizeof(id)), 0);
    assert_string_equal(id, "r-1");
    assert_int_equal(wire_lookup_pick(list, "42", "0", id, sizeof(id)), 0);
    assert_string_equal(id, "r-0");
    assert_int_equal(wire_lookup_pick(list, "42", "1", id, sizeof(id)), 1);
    assert_int_equal(wire_lookup_pick("{\"items\":[]}", "42", "0", id, sizeof(id)), 1);
    assert_int_equal(wire_lookup_pick("{\"error\":\"x\"}", "42", "0", id, sizeof(id)), -1);
    assert_int_equal(wire_lookup_pick("{\"items\":[{\"run_id\":\"unterminated", "42", "0", id, sizeof(id)), -1);
    /* a run id an earlier process left: listed for its job and step, or not */
    assert_int_equal(wire_lookup_has(list, "42", "0.r1", "r-1"), 0);
    assert_int_equal(wire_lookup_has(list, "42", "0", "r-1"), 1);
    assert_int_equal(wire_lookup_has(list, "42", "0", "r-9"), 1);
    assert_int_equal(wire_lookup_has("{\"error\":\"x\"}", "42", "0", "r-0"), -1);
}

static void test_obj_string(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(wire_obj_string("{\"run_id\" : \"abc-1\"}", "run_id", out, sizeof(out)), 0);
    assert_string_equal(out, "abc-1");
    assert_int_equal(wire_obj_string("{\"x\":\"run_id\",\"run_id\":\"b\\\"c\"}", "run_id", out, sizeof(out)), 0);
    assert_string_equal(out, "b\"c");
    assert_int_equal(wire_obj_string("{\"x\":1}", "run_id", out, sizeof(out)), -1);
    assert_int_equal(wire_obj_string("{\"run_id\":5}", "run_id", out, sizeof(out)), -1);
    assert_int_equal(wire_obj_string("{\"run_id\":\"unterminated", "run_id", out, sizeof(out)), -1);
    assert_int_equal(wire_obj_string("{\"run_id\":\"toolong\"}", "run_id", out, 4), -1);
}

/* JSON text is UTF-8: bytes that are not (an environment variable, a path) become U+FFFD, and the text parses. */
static void test_jsonw_bytes(void **state)
{
    (void)state;
    jw w;
    jw_init(&w);
    jw_obj_begin(&w);
    jw_kv_str(&w, "path", "/tmp/x\xfe");
    jw_kv_str(&w, "name", "caf\xc3\xa9 \xe2\x82\xac \xc3 \xf0\x9f\x98\x80\n\"q\"");
    jw_obj_end(&w);
    json_error_t e;
    json_t *o = json_loads(jw_text(&w), 0, &e);
    if (!o)
        fail_msg("not JSON: %s (%s)", jw_text(&w), e.text);
    assert_string_equal(json_string_value(json_object_get(o, "path")), "/tmp/x\xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(o, "name")),
                        "caf\xc3\xa9 \xe2\x82\xac \xef\xbf\xbd \xf0\x9f\x98\x80\n\"q\"");
    json_decref(o);
    jw_release(&w);
}

static void test_obj_int_array(void **state)
{
    (void)state;
    long long v[4];
    assert_int_equal(wire_obj_int_array("{\"run_id\": \"x\", \"send_steps\": [7, -2,12 ]}", "send_steps", v, 4), 3);
    assert_int_equal(v[0], 7);
    assert_int_equal(v[1], -2);
    assert_int_equal(v[2], 12);
    assert_int_equal(wire_obj_int_array("{\"send_steps\": []}", "send_steps", v, 4), 0);
    assert_int_equal(wire_obj_int_array("{\"send_steps\": [1,2,3,4,5,6]}", "send_steps", v, 4),
                     4); /* the rest skipped */
    assert_int_equal(v[3], 4);
    assert_int_equal(wire_obj_int_array("{\"stored\": 3}", "send_steps", v, 4), -1);
    assert_int_equal(wire_obj_int_array("{\"send_steps\": [\"7\"]}", "send_steps", v, 4), -1);
    assert_int_equal(wire_obj_int_array("{\"send_steps\": [7", "send_steps", v, 4), -1);
    assert_int_equal(wire_obj_int_array("{\"x\": {\"send_steps\": [1]}}", "send_steps", v, 4), -1); /* top level only */
}

/* A bundle's reply (docs/server.md): its entries' texts, and each one's status. */
static void test_obj_items(void **state)
{
    (void)state;
    const char *reply = "{\"run_id\": \"r\", \"batches\": [{\"rank\": 0, \"status\": 200, \"send_steps\": [7]},"
                        " {\"error\": \"a ] and a }\", \"status\": 400} ,{\"status\":503}]}";
    const char *at[4];
    size_t len[4];
    assert_int_equal(wire_obj_items(reply, "batches", at, len, 4), 3);
    long long st = 0, v[2];
    assert_int_equal(wire_obj_int(at[0], "status", &st), 0);
    assert_int_equal(st, 200);
    assert_int_equal(wire_obj_int_array(at[0], "send_steps", v, 2), 1); /* the entry, read on its own */
    assert_int_equal(len[1], strlen("{\"error\": \"a ] and a }\", \"status\": 400}"));
    assert_int_equal(wire_obj_int(at[1], "status", &st), 0);
    assert_int_equal(st, 400);
    assert_int_equal(wire_obj_int(at[2], "status", &st), 0);
    assert_int_equal(st, 503);
    assert_int_equal(wire_obj_items(reply, "batches", at, len, 1), 3); /* the rest not given, but counted */
    assert_int_equal(wire_obj_items("{\"batches\": []}", "batches", at, len, 4), 0);
    assert_int_equal(wire_obj_items("{\"batches\": 3}", "batches", at, len, 4), -1);
    assert_int_equal(wire_obj_items("{\"batches\": [{\"a\": 1}", "batches", at, len, 4), -1);
    assert_int_equal(wire_obj_items("{\"other\": []}", "batches", at, len, 4), -1);
    assert_int_equal(wire_obj_int("{\"status\": \"200\"}", "status", &st), -1);
    assert_int_equal(wire_obj_int("{\"status\": 2x}", "status", &st), -1);
    assert_int_equal(wire_obj_int("{\"stored\": 1}", "status", &st), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_obj_int_array), cmocka_unit_test(test_obj_items),   cmocka_unit_test(test_body),
        cmocka_unit_test(test_body_argv),     cmocka_unit_test(test_lookup_path), cmocka_unit_test(test_resume_check),
        cmocka_unit_test(test_attest_body),   cmocka_unit_test(test_pick),        cmocka_unit_test(test_obj_string),
        cmocka_unit_test(test_jsonw_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
