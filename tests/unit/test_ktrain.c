/* test_ktrain.c - lockstep-train's host parts: options, fault specs, the RNG, the gradient, checkpoints. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernels/ckpt.h"
#include "kernels/ctr_rng.h"
#include "kernels/mlp.h"
#include "kernels/train_opts.h"

static int parse(train_opts *o, char *why, const char *a1, const char *a2, const char *a3)
{
    char *argv[] = {"lockstep-train", (char *)a1, (char *)a2, (char *)a3, NULL};
    int argc = 1 + (a1 != NULL) + (a2 != NULL) + (a3 != NULL);
    return train_opts_parse(argc, argv, o, why, 256);
}

static void test_opts_defaults_and_values(void **state)
{
    (void)state;
    train_opts o;
    char why[256];
    unsetenv("LOCKSTEP_FAULT");
    assert_int_equal(parse(&o, why, NULL, NULL, NULL), 0);
    assert_int_equal(o.steps, 20);
    assert_int_equal(o.dims.hidden, 64);
    assert_false(o.fault.set);
    assert_int_equal(parse(&o, why, "--steps=7", "--hidden", "32"), 0);
    assert_int_equal(o.steps, 7);
    assert_int_equal(o.dims.hidden, 32);
    assert_int_equal(parse(&o, why, "--inject-fault=20:3", "--nondeterministic", NULL), 0);
    assert_true(o.fault.set && o.nondet);
    assert_int_equal(o.fault.step, 20);
    assert_int_equal(o.fault.rank, 3);
    assert_int_equal(o.fault.bit, TRAIN_DEFAULT_BIT);
    assert_int_equal(parse(&o, why, "--checkpoint-every", "4", "--resume=/x"), 0);
    assert_string_equal(o.ckpt_dir, "/x"); /* checkpoints continue where the resume came from */
}

/* Invalid command lines, each with the words its error must contain. */
static void test_opts_invalid(void **state)
{
    (void)state;
    static const struct {
        const char *a1, *a2, *want;
    } cases[] = {
        {"--steps", "0", "bad value for --steps"},
        {"--steps", NULL, "needs a value"},
        {"--hidden=abc", NULL, "bad value"},
        {"--inject-fault=3", NULL, "STEP:RANK"},
        {"--inject-fault=3:1:32", NULL, "BIT 0..31"},
        {"--inject-fault=a:b", NULL, "STEP:RANK"},
        {"--reduce=fast", NULL, "bad value for --reduce"},
        {"--checkpoint-every=3", NULL, "needs --checkpoint-dir"},
        {"--resume-step", "4", "--resume-step needs --resume D"},
        {"--resume-step=-1", NULL, "bad value for --resume-step"},
        {"--frobnicate", NULL, "unknown option"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        train_opts o;
        char why[256] = "";
        assert_int_equal(parse(&o, why, cases[i].a1, cases[i].a2, NULL), -1);
        if (!strstr(why, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, why, cases[i].want);
    }
}

static void test_fault_env(void **state)
{
    (void)state;
    train_fault f;
    char why[256];
    assert_int_equal(train_fault_parse_env("node=n3,step=20,bit=12", &f, why, sizeof(why)), 0);
    assert_true(train_fault_applies(&f, 20, 0, "n3"));
    assert_true(train_fault_applies(&f, 20, 5, "n3")); /* every rank on that node */
    assert_false(train_fault_applies(&f, 20, 0, "n4"));
    assert_false(train_fault_applies(&f, 21, 0, "n3"));
    assert_int_equal(f.bit, 12);
    assert_int_equal(train_fault_parse_env("rank=2,step=5", &f, why, sizeof(why)), 0);
    assert_true(train_fault_applies(&f, 5, 2, "anything"));
    assert_false(train_fault_applies(&f, 5, 1, "anything"));
    static const char *const bad[] = {
        "node=n3", "step=5", "node=n3,step=x", "node=n3,step=1,bit=40", "node=n3,step=1,colour=red", "garbage"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (train_fault_parse_env(bad[i], &f, why, sizeof(why)) != -1)
            fail_msg("'%s' was accepted", bad[i]);
    setenv("LOCKSTEP_FAULT", "node=n9,step=3", 1);
    train_opts o;
    assert_int_equal(parse(&o, why, NULL, NULL, NULL), 0);
    assert_true(o.fault.set);
    assert_string_equal(o.fault.node, "n9");
    assert_int_equal(parse(&o, why, "--inject-fault=4:0", NULL, NULL), 0); /* the flag wins */
    assert_int_equal(o.fault.step, 4);
    unsetenv("LOCKSTEP_FAULT");
}

static void test_rng(void **state)
{
    (void)state;
    /* counter-based: any value on demand, the same every time, different per stream */
    assert_int_equal(crng_u32(7, CRNG_DATA, 123456789, 5, 2), crng_u32(7, CRNG_DATA, 123456789, 5, 2));
    assert_int_not_equal(crng_u32(7, CRNG_DATA, 1, 0, 0), crng_u32(7, CRNG_NOISE, 1, 0, 0));
    assert_int_not_equal(crng_u32(7, CRNG_DATA, 1, 0, 0), crng_u32(8, CRNG_DATA, 1, 0, 0));
    double sum = 0;
    for (uint32_t i = 0; i < 4000; i++) {
        float u = crng_uniform(1, CRNG_DATA, i, i);
        assert_true(u >= -1.0f && u < 1.0f);
        sum += u;
    }
    assert_true(fabs(sum / 4000) < 0.05);
}

/* The gradient equals central differences of the loss. */
static void test_gradient_matches_finite_differences(void **state)
{
    (void)state;
    mlp_dims d = {.d_in = 5, .vocab = 7, .d_emb = 3, .hidden = 6, .d_out = 2};
    mlp_layout L;
    assert_int_equal(mlp_layout_init(&L, &d), 0);
    assert_int_equal(L.n_params, 7 * 3 + 6 * 8 + 6 + 6 * 6 + 6 + 2 * 6 + 2);
    size_t n = L.n_params;
    float *p = calloc(n, 4), *g = calloc(n, 4), *gx = calloc(n, 4), *w = calloc(mlp_work_floats(&L), 4);
    float x[8 * 5], y[8 * 2];
    uint32_t tok[8];
    mlp_batch b = {.n = 8, .x = x, .tok = tok, .y = y};
    uint64_t ctr = 0;
    mlp_init_params(&L, 3, p);
    for (size_t i = 0; i < n; i++)
        p[i] += 0.1f * crng_uniform(9, CRNG_INIT, i, 1); /* nonzero biases too */
    mlp_make_batch(&L, 3, 100, 1000, 0, &ctr, &b);
    assert_int_equal(ctr, 8);
    mlp_grad(&L, p, &b, 0, 8, 1.0f, g, w);
    int checked = 0;
    for (size_t i = 0; i < n; i += 3) {
        float keep = p[i], h = 1e-2f;
        p[i] = keep + h;
        double up = mlp_grad(&L, p, &b, 0, 8, 0.0f, gx, w);
        p[i] = keep - h;
        double down = mlp_grad(&L, p, &b, 0, 8, 0.0f, gx, w);
        p[i] = keep;
        double fd = (up - down) / (2.0 * h);
        if (fabs(fd - g[i]) > 2e-3 + 0.03 * fabs(fd))
            fail_msg("parameter %zu: gradient %g, finite difference %g", i, (double)g[i], fd);
        checked++;
    }
    assert_true(checked > 40);
    free(p);
    free(g);
    free(gx);
    free(w);
}

static void test_checkpoint_roundtrip_and_corruption(void **state)
{
    (void)state;
    char dir[] = "/tmp/ls-test-ckpt-XXXXXX", why[512];
    assert_non_null(mkdtemp(dir));
    float p[5] = {1, 2, 3, 4, 5}, m[5] = {0.5f}, v[5] = {0.25f, 0, 0, 0, -0.0f};
    ckpt_state s = {.step = 8,
                    .rank = 1,
                    .world = 2,
                    .seed = 42,
                    .dims = {16, 64, 8, 64, 4},
                    .batch = 32,
                    .dataset = 1000,
                    .data_pos = 512,
                    .rng_ctr = 256,
                    .adam_t = 8,
                    .n_params = 5,
                    .params = p,
                    .m = m,
                    .v = v};
    assert_int_equal(ckpt_latest(dir, why, sizeof(why)), -1);
    assert_int_equal(ckpt_save(dir, &s, why, sizeof(why)), 0);
    assert_int_equal(ckpt_latest(dir, why, sizeof(why)), -1); /* not complete yet */
    assert_int_equal(ckpt_mark_complete(dir, 8, why, sizeof(why)), 0);
    s.step = 12;
    assert_int_equal(ckpt_save(dir, &s, why, sizeof(why)), 0); /* incomplete: ignored */
    assert_int_equal(ckpt_latest(dir, why, sizeof(why)), 8);
    /* what --resume (and --resume-step) name: the newest, one step, or a step directory itself */
    char got[600], sdir[600];
    assert_int_equal(ckpt_resolve(dir, -1, got, sizeof(got), why, sizeof(why)), 8);
    assert_string_equal(got, dir);
    assert_int_equal(ckpt_resolve(dir, 8, got, sizeof(got), why, sizeof(why)), 8);
    assert_int_equal(ckpt_resolve(dir, 12, got, sizeof(got), why, sizeof(why)), -1); /* not complete */
    assert_non_null(strstr(why, "no complete checkpoint of step 12"));
    snprintf(sdir, sizeof(sdir), "%s/step-00000008", dir);
    assert_int_equal(ckpt_resolve(sdir, -1, got, sizeof(got), why, sizeof(why)), 8);
    assert_string_equal(got, dir);
    snprintf(sdir, sizeof(sdir), "%s/step-00000008//", dir);
    assert_int_equal(ckpt_resolve(sdir, -1, got, sizeof(got), why, sizeof(why)), 8);
    assert_string_equal(got, dir);
    snprintf(sdir, sizeof(sdir), "%s/step-00000012", dir);
    assert_int_equal(ckpt_resolve(sdir, -1, got, sizeof(got), why, sizeof(why)), -1); /* incomplete step dir */

    ckpt_state r;
    assert_int_equal(ckpt_load(dir, 8, 1, &r, why, sizeof(why)), 0);
    assert_int_equal(r.data_pos, 512);
    assert_int_equal(r.rng_ctr, 256);
    assert_int_equal(r.adam_t, 8);
    assert_int_equal(r.seed, 42);
    assert_int_equal(r.dims.hidden, 64);
    assert_memory_equal(r.params, p, sizeof(p));
    assert_memory_equal(r.v, v, sizeof(v)); /* -0.0 kept bit for bit */
    free(r.params);
    free(r.m);
    free(r.v);
    assert_int_equal(ckpt_load(dir, 8, 0, &r, why, sizeof(why)), -1); /* no rank 0 file */

    char path[600], cmd[700];
    snprintf(path, sizeof(path), "%s/step-00000008/rank-00001.ckpt", dir);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 130, SEEK_SET);
    fputc(0x7f, f);
    fclose(f);
    assert_int_equal(ckpt_load(dir, 8, 1, &r, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "CRC32C"));
    assert_int_equal(truncate(path, 100), 0);
    assert_int_equal(ckpt_load(dir, 8, 1, &r, why, sizeof(why)), -1);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opts_defaults_and_values),
        cmocka_unit_test(test_opts_invalid),
        cmocka_unit_test(test_fault_env),
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_gradient_matches_finite_differences),
        cmocka_unit_test(test_checkpoint_roundtrip_and_corruption),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
