/* test_owners.c - lockstepd integration: twin group names scoped to their attested owner, sharing by OWNER/NAME, a
 * claim that sets the runs of others aside (comparison and evidence redone without them), names lockstepd reserves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crypto/token.h"
#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;
static char dir[] = "/tmp/lsowners.XXXXXX";
static const char *ADMIN = "owners-admin-token";
static const char SECRET[] = "owners-secret";

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0 || !mkdtemp(dir))
        return -1;
    chmod(dir, 0711);
    char secret[300], adm[300], conf[300];
    snprintf(secret, sizeof(secret), "%s/secret", dir);
    snprintf(adm, sizeof(adm), "%s/admin", dir);
    snprintf(conf, sizeof(conf), "%s/lockstepd.conf", dir);
    it_write_file(secret, SECRET, 0);
    it_write_file(adm, ADMIN, 0);
    it_write_file(conf, "suspects_interval_ms = 200\n", 0644);
    const char *args[] = {"--db", pg.conninfo, "--secret", secret, "--admin-token", adm, "--config", conf, NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    return it_stop(&srv, &pg, dir);
}

/* job_token, attest_token - a job's own token and the one only slurmstepd (holding the secret) can make. */
static const char *job_token(const char *job)
{
    static char t[8][TOKEN_HEX_LEN + 1];
    static int next;
    char *out = t[next++ % 8];
    assert_int_equal(token_compute(SECRET, sizeof(SECRET) - 1, job, out), 0);
    return out;
}

static const char *attest_token(const char *job)
{
    static char t[8][TOKEN_HEX_LEN + 1];
    static int next;
    char *out = t[next++ % 8];
    assert_int_equal(token_compute_attest(SECRET, sizeof(SECRET) - 1, job, out), 0);
    return out;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* reg - register a one-rank run of `job` in `group` as `user` on `node` with `token`; the HTTP status, the run id
 * in `id` (may be NULL), the reply in `*reply` (when given). */
static long reg(const char *job, const char *group, const char *user, const char *node, const char *token, char *id,
                json_t **reply)
{
    char body[768];
    snprintf(body, sizeof(body),
             "{\"job_id\": \"%s\", \"step_id\": \"0\", \"twin_group\": \"%s\", \"ranks\": 1, \"user\": \"%s\", "
             "\"nodes\": \"%s\", \"command\": \"train\", \"mode\": \"det\"}",
             job, group, user, node);
    json_t *o = NULL;
    long code = it_call(&srv, "POST", "/api/v1/runs", body, token, &o);
    if (id)
        snprintf(id, 40, "%s", json_string_value(json_object_get(o, "run_id")) ?: "");
    if (reply)
        *reply = o;
    else
        json_decref(o);
    return code;
}

/* attest - slurmstepd's word on `job` step 0: it ran as `user`, rank 0 on `node`. */
static void attest(const char *job, const char *user, const char *node)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"job_id\": \"%s\", \"step_id\": \"0\", \"node\": \"%s\", \"node_index\": 0, \"ranks\": [0], "
             "\"user\": \"%s\", \"nodes\": \"%s\"}",
             job, node, user, node);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/attest", body, attest_token(job), NULL), 200);
}

/* feed - steps [0, 6) of rank 0 in one batch, record 1 of step 2 flipped when `flip`; then end it. */
static void feed(const char *run, const char *job, int flip)
{
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&srv, run, 0, 0, 0, 6, 4, flip ? 2 : -1, 1, -1, -1, &seq, job_token(job)), 200);
    assert_int_equal(it_end(&srv, run, 0, job_token(job)), 200);
}

/* twin - GET /api/v1/twins/PATH (PATH percent-encoded by the caller); the reply, after checking the status. */
static json_t *twin(const char *path, long want)
{
    char url[512];
    snprintf(url, sizeof(url), "/api/v1/twins/%s", path);
    json_t *o = NULL;
    long got = it_call(&srv, "GET", url, NULL, NULL, &o);
    if (got != want)
        fail_msg("GET %s: HTTP %ld, want %ld", url, got, want);
    return o;
}

/* Two attested users each have "exp1": the second one's is bob/exp1, a group of its own (before: 403, the first
 * registrant held the name); each one's runs join their own by the plain name, bob/exp1 and alice/exp1 read
 * each, and the list shows each group's name and owner. */
static void test_names_per_owner(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(reg("6001", "exp1", "alice", "n1", attest_token("6001"), a, NULL), 201);
    assert_int_equal(reg("6002", "exp1", "bob", "n2", attest_token("6002"), b, NULL), 201);
    assert_int_equal(reg("6003", "exp1", "alice", "n1", attest_token("6003"), NULL, NULL), 201);
    assert_int_equal(reg("6004", "exp1", "bob", "n2", attest_token("6004"), NULL, NULL), 201);
    assert_int_equal(reg("6005", "bob/exp1", "bob", "n2", attest_token("6005"), NULL, NULL), 201);
    json_t *o = twin("exp1", 200);
    assert_string_equal(str(o, "group"), "exp1");
    assert_string_equal(str(json_object_get(o, "owner"), "user"), "alice");
    assert_int_equal(json_array_size(json_object_get(o, "runs")), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(o, "same_name"), 0)), "bob/exp1");
    json_decref(o);
    o = twin("bob%2Fexp1", 200);
    assert_string_equal(str(o, "group"), "bob/exp1");
    assert_string_equal(str(o, "name"), "exp1");
    assert_string_equal(str(json_object_get(o, "owner"), "user"), "bob");
    assert_true(json_is_true(json_object_get(json_object_get(o, "owner"), "attested")));
    assert_int_equal(json_array_size(json_object_get(o, "runs")), 3);
    json_decref(o);
    o = twin("alice%2Fexp1", 200); /* alice's, whose key is its name */
    assert_string_equal(str(o, "group"), "exp1");
    json_decref(o);
    /* the runs list by OWNER/NAME */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/runs?group=bob%2Fexp1", NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 3);
    json_decref(o);
    /* the list: every group with its name and owner */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins?limit=100", NULL, NULL, &o), 200);
    size_t i;
    json_t *it;
    int seen = 0;
    json_array_foreach(json_object_get(o, "items"), i, it) if (!strcmp(str(it, "group"), "bob/exp1"))
    {
        seen = 1;
        assert_string_equal(str(it, "name"), "exp1");
        assert_string_equal(str(json_object_get(it, "owner"), "user"), "bob");
    }
    assert_true(seen);
    json_decref(o);
}

/* Another user's run joins a group only by the owner's share, naming it OWNER/NAME; the plain name is its own. */
static void test_share_by_qualified_name(void **state)
{
    (void)state;
    char path[200];
    assert_int_equal(reg("6101", "shared1", "alice", "n1", attest_token("6101"), NULL, NULL), 201);
    json_t *r = NULL;
    assert_int_equal(reg("6102", "alice/shared1", "bob", "n2", attest_token("6102"), NULL, &r), 403);
    assert_string_equal(str(r, "error"), "twin group belongs to another user");
    json_decref(r);
    snprintf(path, sizeof(path), "/api/v1/twins/shared1/share?job=6101");
    assert_int_equal(it_call(&srv, "POST", path, "{\"users\": [\"bob\"]}", job_token("6101"), NULL), 200);
    assert_int_equal(reg("6102", "alice/shared1", "bob", "n2", attest_token("6102"), NULL, NULL), 201);
    /* bob's plain "shared1" is bob's own */
    assert_int_equal(reg("6103", "shared1", "bob", "n2", attest_token("6103"), NULL, NULL), 201);
    json_t *o = twin("shared1", 200);
    assert_int_equal(json_array_size(json_object_get(o, "runs")), 2);
    json_decref(o);
    o = twin("bob%2Fshared1", 200);
    assert_int_equal(json_array_size(json_object_get(o, "runs")), 1);
    json_decref(o);
    /* an unattested job cannot make a name with '/' (it would take an owner's OWNER/NAME) */
    assert_int_equal(reg("6104", "carol/x", "carol", "n3", job_token("6104"), NULL, &r), 403);
    assert_string_equal(str(r, "error"), "twin group name reserved");
    json_decref(r);
}

/* A name that several owners' groups hold (and no group holds as its key) is ambiguous: 409 names them all;
 * OWNER/NAME reads each. */
static void test_ambiguous_name(void **state)
{
    (void)state;
    assert_int_equal(reg("6201", "exp-9/a", "alice", "n1", attest_token("6201"), NULL, NULL), 201);
    json_t *o = twin("exp-9%2Fa", 200);
    assert_string_equal(str(o, "group"), "alice/exp-9/a");
    json_decref(o);
    assert_int_equal(reg("6202", "exp-9/a", "bob", "n2", attest_token("6202"), NULL, NULL), 201);
    o = twin("exp-9%2Fa", 409);
    assert_string_equal(str(o, "error"), "ambiguous twin group name");
    assert_non_null(strstr(str(o, "detail"), "alice/exp-9/a"));
    assert_non_null(strstr(str(o, "detail"), "bob/exp-9/a"));
    json_decref(o);
    o = twin("bob%2Fexp-9%2Fa", 200);
    assert_string_equal(str(json_object_get(o, "owner"), "user"), "bob");
    json_decref(o);
}

/* history_has - node `node`'s history holds an event of `kind` for group `group` whose detail holds `needle`. */
static int history_has(const char *node, const char *kind, const char *group, const char *needle)
{
    char path[200];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s/history?limit=500", node);
    json_t *o = NULL;
    if (it_call(&srv, "GET", path, NULL, NULL, &o) != 200) {
        json_decref(o);
        return 0;
    }
    size_t i;
    json_t *e;
    int found = 0;
    json_array_foreach(json_object_get(o, "items"), i, e) found |=
        !strcmp(str(e, "kind"), kind) && !strcmp(str(e, "group"), group) && strstr(str(e, "detail"), needle) != NULL;
    json_decref(o);
    return found;
}

/* involvements - node `node`'s involvements as the fleet last scored them (-1 when unknown). */
static double involvements(const char *node)
{
    char path[200];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
    json_t *o = NULL;
    double v = -1;
    json_t *n = it_call(&srv, "GET", path, NULL, NULL, &o) == 200 ? json_object_get(o, "node") : NULL;
    if (json_is_number(json_object_get(n, "involvements")))
        v = json_number_value(json_object_get(n, "involvements"));
    json_decref(o);
    return v;
}

/* wait_classified - poll group `path` until the fleet classified it with `cls` (10 s); the last reply. */
static json_t *wait_classified(const char *path, const char *cls)
{
    json_t *o = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(o);
        o = twin(path, 200);
        if (!strcmp(str(json_object_get(o, "classification"), "class"), cls))
            break;
        usleep(50000);
    }
    return o;
}

/* A group made unattested where squatters reporting "alice" joined and outvote her run (attested by slurmstepd
 * on n1 after it registered): strong evidence against n1. Her first attested registration claims the group: the
 * runs not attested as alice are set aside (kept, with why), the divergence only they made goes, the evidence they
 * made is withdrawn, and the group compares her runs alone: match, n1 not involved (before: the squatters stayed,
 * four to her three, and the group stayed diverged with strong evidence against n1 and n2). */
static void test_claim_sets_aside(void **state)
{
    (void)state;
    char a0[40], m[4][40], a1[40], a2[40], job[16];
    assert_int_equal(reg("6301", "upgraded", "alice", "n1", job_token("6301"), a0, NULL), 201);
    attest("6301", "alice", "n1");
    for (int i = 0; i < 4; i++) {
        snprintf(job, sizeof(job), "%d", 6311 + i);
        assert_int_equal(reg(job, "upgraded", "alice", "n9", job_token(job), m[i], NULL), 201);
        feed(m[i], job, 1);
    }
    feed(a0, "6301", 0);
    json_t *o = wait_classified("upgraded", "hardware");
    assert_string_equal(str(o, "status"), "diverged");
    assert_string_equal(str(json_object_get(o, "first_divergence"), "odd_run_id"), a0);
    assert_string_equal(str(json_object_get(o, "classification"), "class"), "hardware");
    assert_false(json_is_true(json_object_get(json_object_get(o, "owner"), "attested")));
    json_decref(o);
    assert_true(history_has("n1", "involvement", "upgraded", ""));
    for (int k = 0; k < 100 && involvements("n1") <= 0; k++)
        usleep(50000);
    assert_true(involvements("n1") > 0);

    /* alice's first attested run claims it */
    assert_int_equal(reg("6302", "upgraded", "alice", "n2", attest_token("6302"), a1, NULL), 201);
    attest("6302", "alice", "n2");
    o = twin("upgraded", 200);
    assert_true(json_is_true(json_object_get(json_object_get(o, "owner"), "attested")));
    assert_int_equal(json_array_size(json_object_get(o, "runs")), 2);
    assert_true(json_is_null(json_object_get(o, "first_divergence")));
    json_t *aside = json_object_get(o, "set_aside");
    assert_int_equal(json_array_size(aside), 4);
    assert_string_equal(str(json_array_get(aside, 0), "run_id"), m[0]);
    assert_non_null(strstr(str(json_array_get(aside, 0), "reason"), "not attested"));
    json_decref(o);
    char path[120];
    snprintf(path, sizeof(path), "/api/v1/runs/%s", m[0]);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_true(json_is_null(json_object_get(o, "twin_group")));
    assert_string_equal(str(json_object_get(o, "set_aside"), "group"), "upgraded");
    json_decref(o);
    assert_true(history_has("n1", "withdrawn", "upgraded", "claimed"));
    /* the divergence alert they raised is over */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/alerts?limit=100", NULL, NULL, &o), 200);
    size_t ai;
    json_t *al;
    int ended = 0;
    json_array_foreach(json_object_get(o, "items"), ai, al) if (!strcmp(str(al, "group"), "upgraded"))
    {
        assert_string_equal(str(al, "resolved_reason"), "set-aside");
        ended++;
    }
    assert_true(ended > 0);
    json_decref(o);
    /* the squatters cannot come back; alice's second attested run joins; her runs match */
    assert_int_equal(reg("6315", "upgraded", "alice", "n9", job_token("6315"), NULL, NULL), 403);
    assert_int_equal(reg("6303", "upgraded", "alice", "n3", attest_token("6303"), a2, NULL), 201);
    attest("6303", "alice", "n3");
    feed(a1, "6302", 0);
    feed(a2, "6303", 0);
    o = it_wait_group(&srv, "upgraded", "match");
    assert_string_equal(str(o, "status"), "match");
    json_decref(o);
    o = wait_classified("upgraded", "none");
    assert_string_equal(str(json_object_get(o, "classification"), "class"), "none");
    json_decref(o);
    for (int k = 0; k < 100 && involvements("n1") != 0; k++)
        usleep(50000);
    assert_true(involvements("n1") == 0);
    assert_false(history_has("n2", "involvement", "upgraded", ""));
}

/* Names lockstepd makes are reserved: NAME.narrow-N takes runs only of the users whose runs narrow N replays
 * (or the admin's), and a NAME.narrow-N no narrow made takes none (before: whoever registered first held it). */
static void test_reserved_names(void **state)
{
    (void)state;
    char id[40], job[16];
    const char *nodes[] = {"n1", "n2", "n3"};
    for (int i = 0; i < 3; i++) {
        snprintf(job, sizeof(job), "%d", 6401 + i);
        assert_int_equal(reg(job, "nx", "alice", nodes[i], attest_token(job), id, NULL), 201);
        attest(job, "alice", nodes[i]);
        feed(id, job, i == 2);
    }
    json_t *o = it_wait_group(&srv, "nx", "diverged");
    assert_string_equal(str(o, "status"), "diverged");
    json_decref(o);
    json_t *r = NULL;
    assert_int_equal(reg("6410", "nx.narrow-77", "mallory", "n4", attest_token("6410"), NULL, &r), 403);
    assert_string_equal(str(r, "error"), "twin group name reserved");
    json_decref(r);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/twins/nx/narrows",
                             "{\"nodes\": [{\"name\": \"n1\", \"state\": \"idle\"}, {\"name\": \"n2\", \"state\": "
                             "\"idle\"}, {\"name\": \"n3\", \"state\": \"idle\"}, {\"name\": \"n4\", \"state\": "
                             "\"idle\"}], \"actor\": \"sre\"}",
                             ADMIN, &o),
                     201);
    char ngroup[200];
    snprintf(ngroup, sizeof(ngroup), "%s", str(json_object_get(o, "narrow"), "narrow_group"));
    json_decref(o);
    assert_non_null(strstr(ngroup, "nx.narrow-"));
    /* another user, attested or not, and an unattested job reporting alice: refused */
    assert_int_equal(reg("6411", ngroup, "mallory", "n4", attest_token("6411"), NULL, &r), 403);
    assert_non_null(strstr(str(r, "detail"), "replay"));
    json_decref(r);
    assert_int_equal(reg("6412", ngroup, "alice", "n4", job_token("6412"), NULL, NULL), 403);
    /* alice's replay (the narrow helper submits it as her), and the admin's */
    assert_int_equal(reg("6413", ngroup, "alice", "n4", attest_token("6413"), NULL, NULL), 201);
    assert_int_equal(reg("6414", ngroup, "ops", "n4", ADMIN, NULL, NULL), 201);
    char enc[240];
    snprintf(enc, sizeof(enc), "%s", ngroup);
    o = twin(enc, 200);
    assert_string_equal(str(json_object_get(o, "owner"), "user"), "alice");
    assert_string_equal(str(json_object_get(o, "narrow_of"), "group"), "nx");
    assert_int_equal(json_array_size(json_object_get(o, "runs")), 2);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_per_owner), cmocka_unit_test(test_share_by_qualified_name),
        cmocka_unit_test(test_ambiguous_name),  cmocka_unit_test(test_claim_sets_aside),
        cmocka_unit_test(test_reserved_names),
    };
    return cmocka_run_group_tests_name("lockstepd twin group owners", tests, setup, teardown);
}
