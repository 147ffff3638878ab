/* test_manifest_env.c - the manifest's environment (agent/manifest.c): secrets left out or digested, and diffed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "agent/manifest.h"
#include "common/envrule.h"
#include "common/json/mdiff.h"
#include "common/jsonw.h"

#define KEY_A "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define KEY_B "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

static char home[64];

/* The variables of a job whose shell held the admin token and whose site and user have secrets of their own. */
static void job_env(const char *ib_token, const char *key)
{
    setenv("LOCKSTEP_ADMIN_TOKEN", "adm1n-t0ken-value", 1);
    setenv("LOCKSTEP_ADMIN_TOKEN_FILE", "/home/op/.config/lockstep/admin-token", 1);
    setenv("LOCKSTEP_TOKEN", "j0b-t0ken-value", 1);
    setenv("LOCKSTEP_SERVER", "http://127.0.0.1:1", 1);
    setenv("LOCKSTEP_TRACE", "metrics", 1);
    setenv("NCCL_ALGO", "Ring", 1);
    setenv("NCCL_IB_TOKEN", ib_token, 1);             /* can change results: digested */
    setenv("LOCKSTEP_PASSWORD_HINT", "pa55-hint", 1); /* changes nothing: left out */
    setenv("NCCL_SITE_LICENSE", "l1cense-value", 1);  /* the site's pattern */
    setenv("LOCKSTEP_SECRET_VARS", "NCCL_SITE_*", 1);
    setenv("NCCL_TOPO_FILE", "/etc/hostname", 1);
    setenv("NCCL_TOPO_TOKEN_FILE", "/etc/hostname", 1); /* a file a secret names: not hashed */
    setenv("LOCKSTEP_MANIFEST_HASH", "1", 1);
    if (key)
        setenv("LOCKSTEP_DIGEST_KEY", key, 1);
    else
        unsetenv("LOCKSTEP_DIGEST_KEY");
}

/* build - this process's manifest, parsed (no libraries: they are not what is tested). */
static json_t *build(void)
{
    jw w;
    jw_init(&w);
    manifest_build(&w, 0, NULL, "");
    assert_non_null(jw_text(&w));
    const char *t = jw_text(&w);
    static const char *const never[] = {
        "adm1n-t0ken-value", "j0b-t0ken-value", "pa55-hint", "l1cense-value", KEY_A, KEY_B, "ibsecret", NULL};
    for (const char *const *s = never; *s; s++)
        if (strstr(t, *s))
            fail_msg("the manifest holds '%s':\n%s", *s, t);
    json_t *m = json_loads(t, 0, NULL);
    jw_release(&w);
    assert_non_null(m);
    return m;
}

static const char *env_of(json_t *m, const char *name)
{
    return json_string_value(json_object_get(json_object_get(m, "env"), name));
}

static int files_name(json_t *m, const char *name)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(m, "files"), i, f)
    {
        if (!strcmp(json_string_value(json_object_get(f, "env")), name))
            return 1;
    }
    return 0;
}

/* diff - the manifest diff of two one-rank runs that differ in nothing else. */
static json_t *diff(json_t *a, json_t *b)
{
    json_t *ma = json_pack("[{s:i, s:O}]", "rank", 0, "manifest", a);
    json_t *mb = json_pack("[{s:i, s:O}]", "rank", 0, "manifest", b);
    md_run runs[2] = {{"run-a", "1", "0", "alice", "n1", "train", 1, ma},
                      {"run-b", "2", "0", "alice", "n2", "train", 1, mb}};
    json_t *d = md_diff(runs, 2);
    json_decref(ma);
    json_decref(mb);
    assert_non_null(d);
    return d;
}

/* entry - the diff's entry for `key`, or NULL. */
static json_t *entry(json_t *d, const char *key)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(d, "diffs"), i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "key")), key))
            return e;
    }
    return NULL;
}

static void test_secrets_left_out(void **state)
{
    (void)state;
    job_env("ibsecret", KEY_A);
    json_t *m = build();
    assert_string_equal(env_of(m, "NCCL_ALGO"), "Ring");
    assert_string_equal(env_of(m, "LOCKSTEP_TRACE"), "metrics");
    assert_string_equal(env_of(m, "LOCKSTEP_SERVER"), "http://127.0.0.1:1");
    static const char *const absent[] = {"LOCKSTEP_ADMIN_TOKEN",
                                         "LOCKSTEP_ADMIN_TOKEN_FILE",
                                         "LOCKSTEP_TOKEN",
                                         "LOCKSTEP_PASSWORD_HINT",
                                         "LOCKSTEP_DIGEST_KEY",
                                         "LOCKSTEP_SECRET_VARS",
                                         NULL};
    for (const char *const *n = absent; *n; n++)
        if (env_of(m, *n))
            fail_msg("env.%s is recorded: %s", *n, env_of(m, *n));
    char id[ENV_KEY_ID_LEN + 1];
    assert_int_equal(env_digest_key_id(env_of(m, "NCCL_IB_TOKEN"), id), 0);
    assert_int_equal(env_digest_key_id(env_of(m, "NCCL_SITE_LICENSE"), id), 0);
    assert_int_equal(env_digest_key_id(env_of(m, "NCCL_TOPO_TOKEN_FILE"), id), 0); /* its path, digested */
    assert_true(files_name(m, "NCCL_TOPO_FILE"));
    assert_false(files_name(m, "NCCL_TOPO_TOKEN_FILE"));
    json_decref(m);
}

/* Equal values, equal digests: twins match; another value: the diff says the configuration differs. */
static void test_digest_differs(void **state)
{
    (void)state;
    job_env("ibsecret", KEY_A);
    json_t *a = build(), *b = build();
    job_env("ibsecret-2", KEY_A);
    json_t *c = build();
    assert_string_equal(env_of(a, "NCCL_IB_TOKEN"), env_of(b, "NCCL_IB_TOKEN"));
    assert_string_not_equal(env_of(a, "NCCL_IB_TOKEN"), env_of(c, "NCCL_IB_TOKEN"));
    assert_string_equal(env_of(a, "NCCL_SITE_LICENSE"), env_of(c, "NCCL_SITE_LICENSE"));

    json_t *same = diff(a, b);
    assert_null(entry(same, "env.NCCL_IB_TOKEN"));
    json_t *d = diff(a, c);
    json_t *e = entry(d, "env.NCCL_IB_TOKEN");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "class")), "configuration");
    assert_true(json_is_true(json_object_get(d, "explains")));
    assert_non_null(strstr(json_string_value(json_object_get(d, "summary")), "env.NCCL_IB_TOKEN differs"));
    json_decref(same);
    json_decref(d);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

/* Digests under different keys (runs of different users) cannot be compared: listed, never an explanation. */
static void test_other_key_explains_nothing(void **state)
{
    (void)state;
    job_env("ibsecret", KEY_A);
    json_t *a = build();
    job_env("ibsecret", KEY_B);
    json_t *b = build();
    assert_string_not_equal(env_of(a, "NCCL_IB_TOKEN"), env_of(b, "NCCL_IB_TOKEN"));
    json_t *d = diff(a, b);
    json_t *e = entry(d, "env.NCCL_IB_TOKEN");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "class")), "other");
    assert_false(json_is_true(json_object_get(d, "explains")));
    json_decref(d);
    json_decref(a);
    json_decref(b);
}

/* Without the plugin's key: the user's key file, made private once and kept; a key file others can read is not
 * used. */
static void test_key_file(void **state)
{
    (void)state;
    char path[128];
    struct stat st;
    snprintf(home, sizeof(home), "/tmp/ls-test-home-XXXXXX");
    assert_non_null(mkdtemp(home));
    setenv("HOME", home, 1);
    unsetenv("XDG_CONFIG_HOME");
    job_env("ibsecret", NULL);
    json_t *a = build();
    snprintf(path, sizeof(path), "%s/.config/lockstep/digest-key", home);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    json_t *b = build();
    char id[ENV_KEY_ID_LEN + 1];
    assert_int_equal(env_digest_key_id(env_of(a, "NCCL_IB_TOKEN"), id), 0);
    assert_string_equal(env_of(a, "NCCL_IB_TOKEN"), env_of(b, "NCCL_IB_TOKEN"));
    assert_int_equal(chmod(path, 0644), 0);
    json_t *c = build();
    assert_string_equal(env_of(c, "NCCL_IB_TOKEN"), "(secret; no digest key)");
    json_decref(a);
    json_decref(b);
    json_decref(c);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
    assert_int_equal(system(cmd), 0);
}

/* A site list that cannot be read: every variable counts as a secret (digested or left out), none leaks. */
static void test_bad_site_list(void **state)
{
    (void)state;
    job_env("ibsecret", KEY_A);
    setenv("LOCKSTEP_SECRET_VARS", "NCCL_[x", 1);
    json_t *m = build();
    char id[ENV_KEY_ID_LEN + 1];
    assert_int_equal(env_digest_key_id(env_of(m, "NCCL_ALGO"), id), 0);
    assert_null(env_of(m, "LOCKSTEP_SERVER"));
    assert_false(files_name(m, "NCCL_TOPO_FILE"));
    json_decref(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secrets_left_out),
        cmocka_unit_test(test_digest_differs),
        cmocka_unit_test(test_other_key_explains_nothing),
        cmocka_unit_test(test_key_file),
        cmocka_unit_test(test_bad_site_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
