/* test_envrule.c - environment variables by name (common/envrule.h): secret names, classes, keyed digests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "common/crypto/token.h"
#include "common/envrule.h"
#include "common/json/msecret.h"

static int secret(const char *name, const site_patterns *extra)
{
    return env_secret_name(name, strlen(name), extra);
}

/* The built-in rule, name by name: what it catches and what it must not. */
static void test_secret_names(void **state)
{
    (void)state;
    static const char *const yes[] = {"LOCKSTEP_ADMIN_TOKEN",
                                      "LOCKSTEP_TOKEN",
                                      "LOCKSTEP_ADMIN_TOKEN_FILE",
                                      "HF_TOKEN",
                                      "github_token",
                                      "NCCL_SECRET",
                                      "DJANGO_SECRET_KEY",
                                      "PGPASSWORD",
                                      "MYSQL_PWD_PASSWD",
                                      "GPG_PASSPHRASE",
                                      "GOOGLE_APPLICATION_CREDENTIALS",
                                      "API_KEY",
                                      "WANDB_API_KEY",
                                      "AWS_ACCESS_KEY_ID",
                                      "KEY",
                                      "SSH_KEYS",
                                      "OPENAI_APIKEY",
                                      "NCCL_AuthKey",
                                      "MY_PRIVKEY",
                                      "TLS_PRIVATEKEY",
                                      "S3_ACCESSKEY",
                                      "LOCKSTEP_DIGEST_KEY",
                                      "NCCL_IB_KEY",
                                      "key",
                                      "x.key",
                                      "LOCKSTEP_SECRET_VARS",
                                      NULL};
    static const char *const no[] = {
        "NCCL_IB_PKEY", "KEYBOARD_LAYOUT",         "MONKEY", "NCCL_ALGO", "OMP_NUM_THREADS", "LOCKSTEP_SERVER",
        "KEYFILE",      "CUBLAS_WORKSPACE_CONFIG", "PASS",   "NCCL_TOKE", "KEYSTORE",        NULL};
    for (const char *const *n = yes; *n; n++)
        if (!secret(*n, NULL))
            fail_msg("%s should look like a secret", *n);
    for (const char *const *n = no; *n; n++)
        if (secret(*n, NULL))
            fail_msg("%s should not look like a secret", *n);
    /* the length counts, not a NUL: "KEY" cut out of "KEYBOARD" is a word */
    assert_true(env_secret_name("KEYBOARD", 3, NULL));
    assert_false(env_secret_name("NCCL_ALGO=TOKEN", 9, NULL));
}

/* The site's patterns: shell globs, as written. */
static void test_site_patterns(void **state)
{
    (void)state;
    site_patterns p;
    char why[300];
    assert_int_equal(site_patterns_parse("NCCL_IB_PKEY,MY_LICENSE*", &p, why, sizeof(why)), 0);
    assert_true(secret("NCCL_IB_PKEY", &p));
    assert_true(secret("MY_LICENSE_SERVER", &p));
    assert_false(secret("my_license_server", &p));
    assert_false(secret("NCCL_ALGO", &p));
    assert_true(secret("HF_TOKEN", &p)); /* the built-in rule still holds */
}

static void test_classes(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        env_class want;
    } cases[] = {
        {"NCCL_ALGO", ENV_CONFIGURATION},       {"NCCL_IB_PKEY", ENV_CONFIGURATION},
        {"CUBLASLT_X", ENV_CONFIGURATION},      {"LOCKSTEP_TRACE", ENV_CONFIGURATION},
        {"LOCKSTEP_IGNORE", ENV_CONFIGURATION}, {"LOCKSTEP_RUN_ID", ENV_IDENTITY},
        {"NCCL_GRAPH_DUMP_FILE", ENV_IDENTITY}, {"CUDA_VISIBLE_DEVICES", ENV_IDENTITY},
        {"LOCKSTEP_SERVER", ENV_OTHER},         {"LOCKSTEP_ADMIN_TOKEN", ENV_OTHER},
        {"LOCKSTEP_DIGEST_KEY", ENV_OTHER},     {"HOME", ENV_OTHER},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (env_classify(cases[i].name, strlen(cases[i].name)) != cases[i].want)
            fail_msg("%s: class %d, want %d", cases[i].name, env_classify(cases[i].name, strlen(cases[i].name)),
                     cases[i].want);
    assert_int_equal(env_classify("LOCKSTEP_MODE=fp", 13), ENV_CONFIGURATION);
}

static void test_digests(void **state)
{
    (void)state;
    const unsigned char k1[] = "key one", k2[] = "key two";
    char a[ENV_DIGEST_LEN + 1], b[ENV_DIGEST_LEN + 1], c[ENV_DIGEST_LEN + 1], d[ENV_DIGEST_LEN + 1];
    char ida[ENV_KEY_ID_LEN + 1], idd[ENV_KEY_ID_LEN + 1];
    assert_int_equal(env_digest(k1, 7, "NCCL_X_TOKEN", 12, "hunter2", a, sizeof(a)), 0);
    assert_int_equal(env_digest(k1, 7, "NCCL_X_TOKEN", 12, "hunter2", b, sizeof(b)), 0);
    assert_int_equal(env_digest(k1, 7, "NCCL_X_TOKEN", 12, "hunter3", c, sizeof(c)), 0);
    assert_int_equal(env_digest(k2, 7, "NCCL_X_TOKEN", 12, "hunter2", d, sizeof(d)), 0);
    assert_int_equal(strlen(a), ENV_DIGEST_LEN);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    assert_string_not_equal(a, d);
    assert_null(strstr(a, "hunter2"));
    assert_int_equal(strncmp(a, ENV_DIGEST_PREFIX, strlen(ENV_DIGEST_PREFIX)), 0);
    /* the key id says which runs' digests compare: one key, one id */
    assert_int_equal(env_digest_key_id(a, ida), 0);
    assert_int_equal(env_digest_key_id(c, idd), 0);
    assert_string_equal(ida, idd);
    assert_int_equal(env_digest_key_id(d, idd), 0);
    assert_string_not_equal(ida, idd);
    /* the name is part of what is digested */
    assert_int_equal(env_digest(k1, 7, "NCCL_Y_TOKEN", 12, "hunter2", b, sizeof(b)), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(env_digest(k1, 7, "N", 1, "v", a, ENV_DIGEST_LEN), -1);
    assert_int_equal(env_digest_key_id("Ring", ida), -1);
    assert_int_equal(env_digest_key_id(NULL, ida), -1);
    assert_int_equal(env_digest_key_id("(secret; no digest key)", ida), -1);
}

/* The plugin's per-user key: one per user, not the job token of any job. */
static void test_env_key(void **state)
{
    (void)state;
    char a[TOKEN_HEX_LEN + 1], b[TOKEN_HEX_LEN + 1], t[TOKEN_HEX_LEN + 1];
    assert_int_equal(token_compute_env_key("s3cret", 6, "alice", a), 0);
    assert_int_equal(token_compute_env_key("s3cret", 6, "alice", b), 0);
    assert_string_equal(a, b);
    assert_int_equal(token_compute_env_key("s3cret", 6, "bob", b), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(token_compute_env_key("s3cret", 6, "1234", a), 0);
    assert_int_equal(token_compute("s3cret", 6, "1234", t), 0);
    assert_string_not_equal(a, t);
    assert_int_equal(token_compute_attest("s3cret", 6, "1234", t), 0);
    assert_string_not_equal(a, t);
}

/* What lockstepd keeps of a manifest an older agent sent: no secret-named variable but a digest or the agent's
 * note, no file such a variable names. */
static void test_scrub(void **state)
{
    (void)state;
    const char *digest = "hmac-sha256:0123456789abcdef:"
                         "1111111111111111111111111111111111111111111111111111111111111111";
    json_t *m =
        json_pack("{s:i, s:{s:s, s:s, s:s, s:s, s:s, s:s}, s:[{s:s, s:s}, {s:s, s:s}]}", "rank", 0, "env",
                  "LOCKSTEP_ADMIN_TOKEN", "adm1n", "LOCKSTEP_TOKEN", "j0b", "NCCL_ALGO", "Ring", "NCCL_IB_TOKEN",
                  digest, "NCCL_X_KEY", ENV_SECRET_NO_KEY, "NCCL_Y_PASSWORD", "hmac-sha256:not-a-digest", "files",
                  "env", "NCCL_TOPO_FILE", "path", "/t.xml", "env", "NCCL_KEY_FILE", "path", "/k");
    assert_int_equal(msecret_scrub(m), 4);
    char *t = json_dumps(m, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(t, "{\"env\":{\"NCCL_ALGO\":\"Ring\",\"NCCL_IB_TOKEN\":\"hmac-sha256:0123456789abcdef:"
                           "1111111111111111111111111111111111111111111111111111111111111111\",\"NCCL_X_KEY\":"
                           "\"(secret; no digest key)\"},\"files\":[{\"env\":\"NCCL_TOPO_FILE\",\"path\":"
                           "\"/t.xml\"}],\"rank\":0}");
    free(t);
    assert_int_equal(msecret_scrub(m), 0);
    json_decref(m);
    json_t *bare = json_pack("{s:i}", "rank", 1); /* nothing to scrub, nothing broken */
    assert_int_equal(msecret_scrub(bare), 0);
    json_decref(bare);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_names), cmocka_unit_test(test_site_patterns), cmocka_unit_test(test_classes),
        cmocka_unit_test(test_digests),      cmocka_unit_test(test_env_key),       cmocka_unit_test(test_scrub),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
