/* test_compare.c - lockstepd integration: GET /api/v1/compare on synthetic runs whose effects are known: identical,
 * within the noise of replicas, beyond it (and where it first shows), a change that touches no metric, a NaN, run ids
 * as arguments, the records of the first effect side by side, and bad inputs as clear errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/lsfp1.h"
#include "tests/integration/common.h"

#define STEPS 40
#define RANKS 2

static h_pg pg;
static h_srv srv;

/* A synthetic run: steps 1..steps on RANKS ranks; per step and rank loss and grad_norm (f64 metrics) and
 * allreduce.out (a collective tensor). Metric values follow one curve, times (1 + noise * z) with z a fixed
 * pseudo-random number of (seed, step, metric) of unit variance, times (1 + shift) from step shift_from on. */
typedef struct spec {
    const char *job, *group;
    int steps;
    uint64_t seed; /* 0: the baseline's tensors */
    double noise, shift;
    int shift_from;  /* 0: never */
    int tensor_from; /* allreduce.out differs from this step on (0: only when noise or shift say so) */
    int nan_at;      /* loss is NaN at this step (0: never) */
    const char *names[2];
    char id[40];
} spec;

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* unit - a pseudo-random number of unit variance, uniform on [-sqrt 3, sqrt 3]. */
static double unit(uint64_t seed, int step, int metric)
{
    uint64_t h = mix(seed * 1000003u + (uint64_t)step * 31u + (uint64_t)metric);
    return ((double)(h >> 11) / 9007199254740992.0 * 2 - 1) * 1.7320508075688772;
}

static double value_of(const spec *s, int rank, int step, int metric)
{
    double v = metric == 0 ? 2.0 / (1 + 0.05 * step) + 1e-3 * rank : 1.0 / sqrt((double)step) + 1e-4 * rank;
    if (s->noise > 0)
        v *= 1 + s->noise * unit(s->seed, step, metric);
    if (s->shift_from && step >= s->shift_from)
        v *= 1 + s->shift;
    if (metric == 0 && step == s->nan_at)
        v = NAN;
    return v;
}

static void feed(spec *s)
{
    assert_int_equal(it_register(&srv, s->job, s->group, RANKS, 0, NULL, s->id), 0);
    int steps = s->steps ? s->steps : STEPS;
    for (int rank = 0; rank < RANKS; rank++) {
        h_batch b = {0};
        h_batch_begin(&b, s->id, (uint32_t)rank, 0);
        uint64_t seq = 0;
        for (int step = 1; step <= steps; step++) {
            static const char *const deflt[2] = {"loss", "grad_norm"};
            for (int k = 0; k < 3; k++) {
                rec_record r = {0};
                r.seq = seq++;
                r.step = step;
                if (k == 1) { /* allreduce.out, between the two metrics, as lockstep-train records it */
                    int differs = (s->noise > 0) || (s->shift_from && step >= s->shift_from) ||
                                  (s->tensor_from && step >= s->tensor_from);
                    uint64_t key[3] = {(uint64_t)rank, (uint64_t)step, differs ? s->seed + 1 : 0};
                    r.name = "allreduce.out";
                    r.level = LS_LEVEL_COLLECTIVE;
                    r.dtype = LS_F32;
                    r.ndim = 1;
                    r.shape[0] = 256;
                    r.nbytes = 1024;
                    r.fp = fp_lsfp1(key, sizeof(key));
                } else {
                    int metric = k == 0 ? 0 : 1;
                    double v = value_of(s, rank, step, metric);
                    r.name = s->names[metric] ? s->names[metric] : deflt[metric];
                    r.level = LS_LEVEL_METRIC;
                    r.dtype = LS_F64;
                    r.nbytes = 8;
                    memcpy(&r.value, &v, 8);
                    r.flags = REC_HAS_VALUE;
                    r.fp = fp_lsfp1(&v, 8);
                    /* where the program records it: the record's call site */
                    r.site = (rec_site){.module = "train",
                                        .module_len = 5,
                                        .offset = 0x1c40,
                                        .function = "train_step",
                                        .function_len = 10,
                                        .function_offset = 0x80};
                }
                r.name_len = (uint16_t)strlen(r.name);
                h_batch_add(&b, &r);
            }
        }
        char url[512];
        snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", srv.base, s->id);
        assert_int_equal(h_http("POST", url, "application/x-lockstep", b.buf, b.len, NULL, NULL), 200);
        h_batch_free(&b);
        assert_int_equal(it_end(&srv, s->id, rank, NULL), 200);
    }
}

static spec base1 = {"c-b1", "cmp-base"}, base2 = {"c-b2", "cmp-base"};
static spec noise[5] = {{"c-n1", "cmp-noise", 0, 11, 1e-9},
                        {"c-n2", "cmp-noise", 0, 12, 1e-9},
                        {"c-n3", "cmp-noise", 0, 13, 1e-9},
                        {"c-n4", "cmp-noise", 0, 14, 1e-9},
                        {"c-n5", "cmp-noise", 0, 15, 1e-9}};
static spec extra = {"c-x", "cmp-extra", 0, 21, 1e-9};
static spec lr = {"c-lr", "cmp-lr", 0, 31, 0, 1e-3, 5};
static spec same = {"c-same", "cmp-same"};
static spec tensor = {"c-t", "cmp-tensor", 0, 41, 0, 0, 0, 7};
static spec shortrun = {"c-short", "cmp-short", 30};
static spec other = {"c-o", "cmp-other", 0, 0, 0, 0, 0, 0, 0, {"accuracy", "perplexity"}};
static spec nan_run = {"c-nan", "cmp-nan", 0, 0, 0, 0, 0, 0, 10};
static spec one_noise = {"c-n9", "cmp-one", 0, 19, 1e-9};

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    const char *args[] = {"--db", pg.conninfo, NULL};
    return h_srv_start(&srv, args);
}

/* sanitizer_report - 1 when lockstepd's log holds a sanitizer report (a SAN=1 build says what it found there). */
static int sanitizer_report(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[1024];
    int found = 0;
    while (f && fgets(line, sizeof(line), f) && !found)
        found = strstr(line, "AddressSanitizer") || strstr(line, "runtime error:") || strstr(line, "LeakSanitizer");
    if (found)
        fprintf(stderr, "lockstepd's log %s: %s", log, line);
    if (f)
        fclose(f);
    return found;
}

static int teardown(void **state)
{
    (void)state;
    int st = h_srv_kill(&srv, SIGTERM);
    if (sanitizer_report(srv.log))
        st = -1;
    h_srv_cleanup(&srv);
    h_pg_stop(&pg);
    return st == 0 ? 0 : -1;
}

static void test_feed(void **state)
{
    (void)state;
    feed(&base1);
    feed(&base2);
    for (int i = 0; i < 5; i++)
        feed(&noise[i]);
    spec *rest[] = {&extra, &lr, &same, &tensor, &shortrun, &other, &nan_run, &one_noise};
    for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
        feed(rest[i]);
}

/* compare - GET /api/v1/compare?QUERY; the reply when the status is `want`. */
static json_t *compare(const char *query, long want)
{
    char path[1024];
    snprintf(path, sizeof(path), "/api/v1/compare?%s", query);
    json_t *o = NULL;
    long code = it_call(&srv, "GET", path, NULL, NULL, &o);
    if (code != want)
        fail_msg("GET %s: HTTP %ld, want %ld: %s", path, code, want, o ? json_dumps(o, JSON_COMPACT) : "(not JSON)");
    assert_non_null(o);
    return o;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static json_t *metric(json_t *d, const char *name)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(d, "metrics"), i, m) if (!strcmp(str(m, "name"), name)) return m;
    fail_msg("no metric %s", name);
    return NULL;
}

/* has_note - 1 when a note of `d` contains `text`. */
static int has_note(json_t *d, const char *text)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(d, "notes"), i, n) if (strstr(json_string_value(n), text)) return 1;
    return 0;
}

static void test_identical(void **state)
{
    (void)state;
    json_t *d = compare("base=cmp-base&changed=cmp-same&noise=cmp-noise", 200);
    assert_string_equal(str(d, "verdict"), "identical");
    assert_true(json_is_null(json_object_get(d, "first_effect")));
    assert_true(json_is_true(json_object_get(json_object_get(d, "base"), "identical")));
    assert_string_equal(str(metric(d, "loss"), "verdict"), "identical");
    json_decref(d);
    d = compare("base=cmp-base&changed=cmp-same", 200); /* without replicas too */
    assert_string_equal(str(d, "verdict"), "identical");
    assert_true(json_is_null(json_object_get(d, "noise")));
    json_decref(d);
}

static void test_within_noise(void **state)
{
    (void)state;
    json_t *d = compare("base=cmp-base&changed=cmp-extra&noise=cmp-noise", 200);
    assert_string_equal(str(d, "verdict"), "within-noise");
    json_t *rule = json_object_get(d, "rule");
    assert_int_equal(json_integer_value(json_object_get(rule, "judgements")), 2);
    assert_int_equal(json_integer_value(json_object_get(rule, "replicas")), 5);
    for (int k = 0; k < 2; k++) {
        json_t *m = metric(d, k ? "grad_norm" : "loss");
        assert_string_equal(str(m, "verdict"), "within-noise");
        double score = json_real_value(json_object_get(m, "score"));
        double thr = json_real_value(json_object_get(m, "threshold"));
        assert_true(score > 0 && score < thr);
        assert_int_equal(json_array_size(json_object_get(m, "noise_scores")), 5);
        assert_true(json_is_null(json_object_get(m, "first_step_beyond"))); /* only said for a run beyond */
        json_t *s = json_object_get(m, "series");
        assert_int_equal(json_array_size(json_object_get(s, "steps")), STEPS);
        assert_int_equal(json_array_size(json_object_get(s, "band")), STEPS);
        assert_true(json_real_value(json_array_get(json_object_get(s, "band"), 5)) > 0);
        json_t *c = json_array_get(json_object_get(s, "changed"), 0);
        assert_string_equal(str(c, "run_id"), extra.id);
        assert_int_equal(json_array_size(json_object_get(c, "deviation")), STEPS);
    }
    /* The noisy run departs at step 1, at its first record there (loss). */
    json_t *fe = json_object_get(d, "first_effect");
    assert_int_equal(json_integer_value(json_object_get(fe, "step")), 1);
    assert_string_equal(str(fe, "name"), "loss");
    json_decref(d);
}

static void test_beyond_noise(void **state)
{
    (void)state;
    json_t *d = compare("base=cmp-base&changed=cmp-lr&noise=cmp-noise&series=0", 200);
    assert_string_equal(str(d, "verdict"), "beyond-noise");
    json_t *fe = json_object_get(d, "first_effect");
    assert_int_equal(json_integer_value(json_object_get(fe, "step")), 5);
    assert_int_equal(json_integer_value(json_object_get(fe, "rank")), 0);
    assert_string_equal(str(fe, "name"), "loss");
    assert_string_equal(str(fe, "kind"), "content");
    assert_string_equal(str(fe, "run_id"), lr.id);
    /* The record's call site (one spelling with the twin API's) and the cause rule's word on it. */
    json_t *site = json_object_get(fe, "site");
    assert_string_equal(str(site, "module"), "train");
    assert_string_equal(str(site, "function"), "train_step");
    assert_non_null(strstr(str(site, "text"), "train_step"));
    assert_null(json_object_get(fe, "call_site"));
    assert_true(strlen(str(fe, "cause")) > 0);
    assert_true(strlen(str(fe, "cause_detail")) > 0);
    assert_true(json_is_array(json_object_get(fe, "origin_ranks")));
    assert_int_equal(json_array_size(json_object_get(fe, "ranks")), 2);
    /* Both values, exactly, and their ULP distance. */
    double bv = value_of(&base1, 0, 5, 0), cv = value_of(&lr, 0, 5, 0);
    assert_true(json_real_value(json_object_get(json_object_get(fe, "base"), "value")) == bv);
    assert_true(json_real_value(json_object_get(json_object_get(fe, "changed"), "value")) == cv);
    int64_t bb, cb;
    memcpy(&bb, &bv, 8);
    memcpy(&cb, &cv, 8);
    assert_int_equal(json_integer_value(json_object_get(fe, "ulp")), llabs(bb - cb));
    json_t *m = metric(d, "loss");
    assert_string_equal(str(m, "verdict"), "beyond-noise");
    assert_int_equal(json_integer_value(json_object_get(m, "first_step_differs")), 5);
    assert_int_equal(json_integer_value(json_object_get(m, "first_step_beyond")), 5);
    assert_true(json_real_value(json_object_get(m, "ratio")) > 1000);
    assert_true(fabs(json_real_value(json_object_get(m, "max_rel_deviation")) - 1e-3) < 1e-6);
    assert_null(json_object_get(m, "series"));
    json_decref(d);
}

static void test_without_noise(void **state)
{
    (void)state;
    json_t *d = compare("base=cmp-base&changed=cmp-lr&series=0", 200);
    assert_string_equal(str(d, "verdict"), "differs");
    json_t *m = metric(d, "loss");
    assert_string_equal(str(m, "verdict"), "differs");
    assert_true(json_is_null(json_object_get(m, "threshold")));
    assert_true(json_integer_value(json_object_get(json_array_get(json_object_get(m, "changed"), 0), "max_ulp")) > 0);
    json_t *notes = json_object_get(d, "notes");
    assert_true(json_array_size(notes) >= 1);
    assert_non_null(strstr(json_string_value(json_array_get(notes, 0)), "Without noise replicas"));
    json_decref(d);
}

static void test_tensor_only_and_nan(void **state)
{
    (void)state;
    /* A change that moves a tensor but no metric: its first effect is that tensor; the metrics did not move. */
    json_t *d = compare("base=cmp-base&changed=cmp-tensor&noise=cmp-noise&series=0", 200);
    assert_string_equal(str(d, "verdict"), "within-noise");
    json_t *fe = json_object_get(d, "first_effect");
    assert_int_equal(json_integer_value(json_object_get(fe, "step")), 7);
    assert_string_equal(str(fe, "name"), "allreduce.out");
    assert_string_equal(str(metric(d, "loss"), "verdict"), "identical");
    assert_true(has_note(d, "none of the shared metrics moved"));
    json_decref(d);
    /* A NaN where every other run is finite is beyond any noise. */
    d = compare("base=cmp-base&changed=cmp-nan&noise=cmp-noise&series=0", 200);
    assert_string_equal(str(d, "verdict"), "beyond-noise");
    json_t *m = metric(d, "loss");
    json_t *c = json_array_get(json_object_get(m, "changed"), 0);
    assert_true(json_is_true(json_object_get(c, "nonfinite")));
    assert_int_equal(json_integer_value(json_object_get(c, "first_step_beyond")), 10);
    assert_string_equal(str(metric(d, "grad_norm"), "verdict"), "identical");
    json_decref(d);
}

static void test_run_ids_and_several(void **state)
{
    (void)state;
    char q[512];
    /* Run ids instead of groups, and two changed runs at once (each judged; four judgements). */
    snprintf(q, sizeof(q), "base=%s&changed=%s,cmp-extra&noise=cmp-noise&series=0", base1.id, lr.id);
    json_t *d = compare(q, 200);
    assert_string_equal(str(d, "verdict"), "beyond-noise");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "rule"), "judgements")), 4);
    json_t *runs = json_object_get(metric(d, "loss"), "changed");
    assert_int_equal(json_array_size(runs), 2);
    assert_string_equal(str(json_array_get(runs, 0), "verdict"), "beyond-noise");
    assert_string_equal(str(json_array_get(runs, 1), "verdict"), "within-noise");
    /* The earliest first effect of the two: the noisy run departs at step 1. */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "first_effect"), "step")), 1);
    assert_int_equal(json_array_size(json_object_get(d, "first_effects")), 2);
    json_decref(d);
    /* The first effect's records, side by side. */
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/compare/records?base=%s&changed=%s&rank=0&step=5", base1.id, lr.id);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &d), 200);
    json_t *items = json_object_get(d, "items");
    assert_int_equal(json_array_size(items), 3);
    assert_string_equal(str(json_array_get(items, 0), "name"), "loss");
    assert_string_equal(str(json_array_get(items, 0), "status"), "diverged");
    assert_string_equal(json_string_value(json_array_get(json_object_get(d, "runs"), 0)), base1.id);
    assert_string_equal(str(d, "changed"), lr.id);
    json_decref(d);
    snprintf(path, sizeof(path), "/api/v1/compare/records?base=%s&changed=nope&step=5", base1.id);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, NULL), 404);
}

/* A baseline whose runs are not bit-identical is said to be so: from lockstepd's own comparison of a twin group, or
 * by searching runs named otherwise. */
static void test_base_not_identical(void **state)
{
    (void)state;
    json_decref(it_wait_group(&srv, "cmp-noise", "diverged"));
    json_decref(it_wait_group(&srv, "cmp-base", "match"));
    json_t *d = compare("base=cmp-noise&changed=cmp-lr&series=0", 200);
    assert_true(json_is_false(json_object_get(json_object_get(d, "base"), "identical")));
    /* one twin group: its status from lockstepd's one rule, its first divergence with the cause */
    assert_string_equal(str(json_object_get(d, "base"), "status"), "diverged");
    json_t *bfd = json_object_get(json_object_get(d, "base"), "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(bfd, "step")), 1);
    assert_true(strlen(str(bfd, "cause")) > 0);
    assert_true(has_note(d, "BASE's runs are not bit-identical to each other (they part at step 1"));
    json_decref(d);
    d = compare("base=cmp-base,cmp-extra&changed=cmp-lr&series=0", 200);
    assert_true(json_is_false(json_object_get(json_object_get(d, "base"), "identical")));
    assert_true(json_is_null(json_object_get(json_object_get(d, "base"), "status"))); /* no one group: no status */
    assert_true(has_note(d, "BASE's runs are not bit-identical"));
    json_decref(d);
    d = compare("base=cmp-base&changed=cmp-lr&series=0", 200);
    assert_true(json_is_true(json_object_get(json_object_get(d, "base"), "identical")));
    assert_string_equal(str(json_object_get(d, "base"), "status"), "match");
    assert_false(has_note(d, "BASE's runs are not"));
    json_decref(d);
}

/* Bad inputs, each a clear error: status, fact and a word of the detail. */
static void test_bad_inputs(void **state)
{
    (void)state;
    static const struct {
        const char *query;
        long status;
        const char *error, *detail;
    } B[] = {
        {"base=no-such-group&changed=cmp-lr", 404, "unknown twin group or run", "no-such-group"},
        {"base=cmp-base&changed=cmp-short", 400, "the runs cover different steps", "steps 1-30 (30)"},
        {"base=cmp-base&changed=cmp-other", 400, "no shared metric", "rank 0"},
        {"base=cmp-base&changed=cmp-lr&noise=cmp-one", 400, "too few noise replicas", "1 run"},
        {"base=cmp-base&changed=cmp-lr&noise=cmp-noise,cmp-base", 400, "a run plays two parts", "BASE and NOISE"},
        {"base=cmp-base&changed=cmp-lr&alpha=2", 400, "bad query argument", "alpha"},
        {"base=cmp-base&changed=cmp-lr&from=9&to=3", 400, "bad step range", "from"},
        {"changed=cmp-lr", 400, "missing argument", "base"},
        {"base=cmp-base&changed=cmp-lr&rank=7", 400, "no shared metric", "rank 7"},
    };
    for (size_t i = 0; i < sizeof(B) / sizeof(B[0]); i++) {
        json_t *d = compare(B[i].query, B[i].status);
        if (strcmp(str(d, "error"), B[i].error) || !strstr(str(d, "detail"), B[i].detail) || !*str(d, "hint"))
            fail_msg("%s: %s", B[i].query, json_dumps(d, JSON_COMPACT));
        json_decref(d);
    }
    /* The shared steps of runs of different lengths compare once asked for. */
    json_t *d = compare("base=cmp-base&changed=cmp-short&to=30&series=0", 200);
    assert_string_equal(str(d, "verdict"), "identical");
    assert_int_equal(json_integer_value(json_object_get(d, "to")), 30);
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feed),
        cmocka_unit_test(test_identical),
        cmocka_unit_test(test_within_noise),
        cmocka_unit_test(test_beyond_noise),
        cmocka_unit_test(test_without_noise),
        cmocka_unit_test(test_tensor_only_and_nan),
        cmocka_unit_test(test_run_ids_and_several),
        cmocka_unit_test(test_base_not_identical),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
