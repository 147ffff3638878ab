/* test_glance.c - lockstepd integration: what the twin API says at a glance: each group's kind and the ?kind= filter,
 * each run's outcome in its group (GET /twins/G, the list, GET /runs), the per-step deltas of a bit flip, and the fleet
 * timeline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;
static int job_no = 100;

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    const char *args[] = {"--db", pg.conninfo, NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    return it_stop(&srv, &pg, NULL);
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static json_t *get(const char *path)
{
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    return o;
}

/* reg_as - register a one-rank run of group `group` as `user`; its id into `id` (40 bytes). */
static void reg_as(const char *group, const char *user, char *id)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"job_id\": \"%d\", \"twin_group\": \"%s\", \"ranks\": 1, \"user\": \"%s\", \"nodes\": \"n1\", "
             "\"command\": \"train\", \"mode\": \"det\"}",
             job_no++, group, user);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", body, NULL, &o), 201);
    snprintf(id, 40, "%s", str(o, "run_id"));
    json_decref(o);
}

/* run - a one-rank run of `group` as `user` with 12 steps, its loss's lowest bit flipped at step `flip` (-1: none),
 * ended; its id into `id`. */
static void run(const char *group, const char *user, int flip, char *id)
{
    reg_as(group, user, id);
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&srv, id, 0, 0, 0, 12, 3, flip, 0, -1, -1, &seq, NULL), 200);
    assert_int_equal(it_end(&srv, id, 0, NULL), 200);
}

/* list_groups - the groups GET /api/v1/twins`query` lists, as a new JSON array of keys; *total its total (-1: null). */
static json_t *list_groups(const char *query, long long *total)
{
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/twins%s", query);
    json_t *o = get(path), *keys = json_array(), *g;
    size_t i;
    json_array_foreach(json_object_get(o, "items"), i, g) json_array_append_new(keys, json_string(str(g, "group")));
    json_t *t = json_object_get(o, "total");
    *total = json_is_integer(t) ? json_integer_value(t) : -1;
    json_decref(o);
    return keys;
}

static int has(json_t *keys, const char *k)
{
    size_t i;
    json_t *v;
    json_array_foreach(keys, i, v) if (!strcmp(json_string_value(v), k)) return 1;
    return 0;
}

/* A group's kind by the names lockstep twin gives (group_kind_of, server/rules/group_rule.h); ?kind= keeps those kinds
 * (a comma-separated list), with an exact total; a bad kind is a 400. */
static void test_kinds(void **state)
{
    (void)state;
    char id[40];
    reg_as("k-plain", "alice", id);
    reg_as("k-exp", "alice", id);
    reg_as("k-exp.change", "alice", id);
    reg_as("k-exp.noise", "alice", id);
    reg_as("k-solo.change", "carol", id);
    reg_as("k-solo", "bob", id);
    static const struct {
        const char *group, *kind;
    } want[] = {{"k-plain", "twins"},     {"k-exp", "twins"},  {"k-exp.change", "experiment"},
                {"k-exp.noise", "noise"}, {"k-solo", "twins"}, {"k-solo.change", "experiment"}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "/api/v1/twins/%s", want[i].group);
        json_t *o = get(path);
        if (strcmp(str(o, "kind"), want[i].kind))
            fail_msg("%s: kind %s, expected %s", want[i].group, str(o, "kind"), want[i].kind);
        json_decref(o);
    }
    long long total;
    json_t *k = list_groups("?kind=twins", &total);
    assert_true(has(k, "k-plain") && has(k, "k-solo") && has(k, "k-exp") && !has(k, "k-exp.noise"));
    assert_int_equal(total, (long long)json_array_size(k)); /* a kind filter's total is exact */
    json_decref(k);
    k = list_groups("?kind=noise,experiment&limit=2", &total);
    assert_int_equal(json_array_size(k), 2);
    assert_int_equal(total, 3);
    json_decref(k);
    k = list_groups("?kind=noise", &total);
    assert_int_equal(json_array_size(k), 1);
    assert_true(has(k, "k-exp.noise"));
    json_decref(k);
    /* paging a kind filter: the second page follows the cursor, and says the same total */
    json_t *o = get("/api/v1/twins?kind=experiment&limit=1");
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 2);
    assert_string_equal(str(json_array_get(json_object_get(o, "items"), 0), "group"), "k-solo.change"); /* newest */
    const char *next = str(o, "next_cursor");
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/twins?kind=experiment&limit=1&cursor=%s", next);
    json_t *p2 = get(path);
    assert_int_equal(json_array_size(json_object_get(p2, "items")), 1);
    assert_string_equal(str(json_array_get(json_object_get(p2, "items"), 0), "group"), "k-exp.change");
    assert_int_equal(json_integer_value(json_object_get(p2, "total")), 2);
    assert_true(json_is_null(json_object_get(p2, "next_cursor")));
    json_decref(p2);
    json_decref(o);
    /* every item says its kind; without ?kind= every kind is listed, as before */
    o = get("/api/v1/twins?limit=500");
    size_t i;
    json_t *g;
    int seen = 0;
    json_array_foreach(json_object_get(o, "items"), i, g)
    {
        assert_true(*str(g, "kind"));
        seen += !strncmp(str(g, "group"), "k-", 2);
    }
    assert_int_equal(seen, 6);
    json_decref(o);
    json_t *bad = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins?kind=incident", NULL, NULL, &bad), 400);
    assert_non_null(strstr(str(bad, "detail"), "twins, replay, noise, experiment"));
    json_decref(bad);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins?kind=twins,", NULL, NULL, NULL), 400);
}

/* Each run's outcome is its own: the odd one out and the two of the majority (not "diverged" for all three), in GET
 * /twins/G, the list and GET /runs; a pair that disagrees names no odd run. */
static void test_outcomes(void **state)
{
    (void)state;
    char a[40], b[40], c[40], p[40], q[40];
    run("o-trio", "alice", -1, a);
    run("o-trio", "alice", -1, b);
    run("o-trio", "alice", 5, c);
    run("o-pair", "alice", -1, p);
    run("o-pair", "alice", 4, q);
    json_t *t = it_wait_group(&srv, "o-trio", "diverged");
    assert_string_equal(str(t, "status"), "diverged");
    const char *want[] = {"majority", "majority", "odd-one-out"};
    for (int i = 0; i < 3; i++)
        assert_string_equal(str(json_array_get(json_object_get(t, "runs"), (size_t)i), "outcome"), want[i]);
    assert_int_equal(json_array_size(json_object_get(t, "odd_runs")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(t, "odd_runs"), 0)), c);
    json_decref(t);
    json_t *o = get("/api/v1/runs?group=o-trio");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(o, "items"), i, r)
    {
        assert_string_equal(str(r, "group_status"), "diverged");
        assert_string_equal(str(r, "twin_outcome"), !strcmp(str(r, "run_id"), c) ? "odd-one-out" : "majority");
    }
    json_decref(o);
    long long total;
    json_t *l = get("/api/v1/twins?kind=twins&status=diverged"), *g;
    int found = 0;
    json_array_foreach(json_object_get(l, "items"), i, g)
    {
        if (strcmp(str(g, "group"), "o-trio"))
            continue;
        found = 1;
        assert_string_equal(json_string_value(json_array_get(json_object_get(g, "odd_runs"), 0)), c);
        assert_string_equal(str(json_array_get(json_object_get(g, "runs"), 0), "outcome"), "majority");
        assert_string_equal(str(json_array_get(json_object_get(g, "runs"), 2), "outcome"), "odd-one-out");
    }
    assert_true(found);
    json_decref(l);
    (void)total;
    t = it_wait_group(&srv, "o-pair", "diverged");
    assert_int_equal(json_array_size(json_object_get(t, "odd_runs")), 0);
    json_array_foreach(json_object_get(t, "runs"), i, r) assert_string_equal(str(r, "outcome"), "diverged");
    json_decref(t);
    /* a run alone: pending; outside any group: null */
    char lone[40];
    reg_as("o-lone", "alice", lone);
    o = get("/api/v1/runs?group=o-lone");
    assert_string_equal(str(json_array_get(json_object_get(o, "items"), 0), "twin_outcome"), "pending");
    json_decref(o);
    char solo[40];
    assert_int_equal(it_register(&srv, "9999", NULL, 1, 0, NULL, solo), 0);
    o = get("/api/v1/runs?job=9999");
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(o, "items"), 0), "twin_outcome")));
    json_decref(o);
}

/* The deltas of the trio: the odd run's loss is 1 ULP from the majority at the flipped step (5), 0 elsewhere; of the
 * pair, the second run's, against the first (no majority). Bad requests are 400, an unknown group 404. */
static void test_deltas(void **state)
{
    (void)state;
    json_t *t = it_wait_group(&srv, "o-trio", "diverged");
    json_decref(t);
    json_t *d = get("/api/v1/twins/o-trio/deltas?rank=0&name=loss");
    json_t *s = json_array_get(json_object_get(d, "series"), 0);
    assert_string_equal(str(s, "name"), "loss");
    assert_string_equal(str(s, "dtype"), "f64");
    assert_int_equal(json_integer_value(json_object_get(s, "first_step")), 5);
    json_t *steps = json_object_get(s, "steps"), *runs = json_object_get(s, "runs");
    assert_int_equal(json_array_size(steps), 12);
    assert_int_equal(json_array_size(runs), 3);
    for (size_t r = 0; r < 3; r++) {
        json_t *ulp = json_object_get(json_array_get(runs, r), "ulp"),
               *rel = json_object_get(json_array_get(runs, r), "rel");
        for (size_t k = 0; k < 12; k++) {
            long long want = r == 2 && json_integer_value(json_array_get(steps, k)) == 5 ? 1 : 0;
            assert_int_equal(json_integer_value(json_array_get(ulp, k)), want);
            double x = json_number_value(json_array_get(rel, k));
            assert_true(want ? x > 0 && x < 1e-15 : x == 0);
        }
    }
    json_decref(d);
    d = get("/api/v1/twins/o-pair/deltas");
    json_t *loss = NULL, *x;
    size_t i;
    json_array_foreach(json_object_get(d, "series"), i, x) if (!strcmp(str(x, "name"), "loss")) loss = x;
    assert_non_null(loss); /* loss and grad_norm by default; only loss is recorded */
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(json_array_get(json_object_get(loss, "runs"), 1), "ulp"), 4)),
        1);
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(json_array_get(json_object_get(loss, "runs"), 0), "ulp"), 4)),
        0);
    json_decref(d);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/o-trio/deltas?rank=-1", NULL, NULL, NULL), 400);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/o-trio/deltas?name=a,,b", NULL, NULL, NULL), 400);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/o-trio/deltas?limit=0", NULL, NULL, NULL), 400);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/no-such-group/deltas", NULL, NULL, NULL), 404);
}

/* The fleet timeline: the last N days, today last; the incidents that diverged today (the trio and the pair) by
 * class, noise replicas that diverged counted apart; bad days are 400. */
static void test_timeline(void **state)
{
    (void)state;
    char a[40], b[40];
    run("k-exp.noise", "alice", 3, a); /* k-exp.noise holds a run already (test_kinds) that recorded nothing */
    run("k-exp.noise", "alice", -1, b);
    json_t *t = it_wait_group(&srv, "k-exp.noise", "diverged");
    json_decref(t);
    json_t *o = get("/api/v1/fleet/timeline?days=3");
    json_t *bk = json_object_get(o, "buckets");
    assert_int_equal(json_array_size(bk), 3);
    char today[16];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(today, sizeof(today), "%Y-%m-%d", &tm);
    json_t *last = json_array_get(bk, 2);
    assert_string_equal(str(last, "day"), today);
    long long n = json_integer_value(json_object_get(last, "hardware")) +
                  json_integer_value(json_object_get(last, "software")) +
                  json_integer_value(json_object_get(last, "unclassified"));
    assert_int_equal(n, 2); /* o-trio and o-pair */
    assert_int_equal(json_integer_value(json_object_get(o, "other_kinds")), 1);
    assert_int_equal(json_integer_value(json_object_get(last, "suspect")), 0);
    json_decref(o);
    o = get("/api/v1/fleet/timeline");
    assert_int_equal(json_array_size(json_object_get(o, "buckets")), 14);
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/fleet/timeline?days=0", NULL, NULL, NULL), 400);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/fleet/timeline?days=91", NULL, NULL, NULL), 400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_outcomes),
        cmocka_unit_test(test_deltas),
        cmocka_unit_test(test_timeline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
