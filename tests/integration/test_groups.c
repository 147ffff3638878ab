/* test_groups.c - lockstepd integration: twin groups belong to their attested owner; runs that share no steps never
 * hold the others back; at most 64 runs; late records are compared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crypto/token.h"
#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;
static char dir[] = "/tmp/lsgroups.XXXXXX";
static const char *ADMIN = "groups-admin-token";
static const char SECRET[] = "groups-secret";

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0 || !mkdtemp(dir))
        return -1;
    chmod(dir, 0711);
    char secret[300], adm[300];
    snprintf(secret, sizeof(secret), "%s/secret", dir);
    snprintf(adm, sizeof(adm), "%s/admin", dir);
    it_write_file(secret, SECRET, 0);
    it_write_file(adm, ADMIN, 0);
    /* more HTTP threads than cores: rank ends of one run are handled at the same time (test_concurrent_ends) */
    const char *args[] = {"--db", pg.conninfo, "--secret", secret, "--admin-token", adm, "--threads", "8", NULL};
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

/* reg - register a run of `job` in `group` as `user` with `token`; the HTTP status, the run id in `id`. */
static long reg(const char *job, const char *group, const char *user, long long start_step, const char *token, char *id,
                json_t **reply)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"job_id\": \"%s\", \"step_id\": \"0\", \"twin_group\": \"%s\", \"ranks\": 1, \"start_step\": %lld, "
             "\"user\": \"%s\", \"command\": \"train\", \"mode\": \"det\"}",
             job, group, start_step, user);
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

/* feed - steps [0, n) of rank 0 in one batch, record `flip` of step `flip_step` flipped; then end it. */
static void feed(const char *run, const char *job, int n, int64_t flip_step, int flip, int end)
{
    uint64_t seq = 0;
    assert_int_equal(it_post_steps(&srv, run, 0, 0, 0, n, 4, flip_step, flip, -1, -1, &seq, job_token(job)), 200);
    if (end)
        assert_int_equal(it_end(&srv, run, 0, job_token(job)), 200);
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* A group belongs to its attested creator: another user's job cannot add runs to it, whatever user it
 * claims, until the owner shares the group (finding 3: one foreign run could stop a group's comparison,
 * three turned a matched group diverged and blamed the victim's nodes). */
static void test_owner_refuses_others(void **state)
{
    (void)state;
    char a[40], b[40], x[40];
    /* alice's two runs, registered as the SPANK plugin does (the attestation token) */
    assert_int_equal(reg("8001", "victim", "alice", 0, attest_token("8001"), a, NULL), 201);
    assert_int_equal(reg("8002", "victim", "alice", 0, attest_token("8002"), b, NULL), 201);
    feed(a, "8001", 6, -1, -1, 1);
    feed(b, "8002", 6, -1, -1, 1);
    json_t *o = it_wait_group(&srv, "victim", "match");
    assert_string_equal(str(o, "status"), "match");
    assert_string_equal(str(json_object_get(o, "owner"), "user"), "alice");
    assert_true(json_is_true(json_object_get(json_object_get(o, "owner"), "attested")));
    json_decref(o);

    /* mallory's job, with its own token: as itself, as alice, attested or not */
    json_t *r = NULL;
    assert_int_equal(reg("9001", "victim", "mallory", 0, job_token("9001"), x, &r), 403);
    assert_string_equal(str(r, "error"), "twin group belongs to another user");
    assert_non_null(strstr(str(r, "detail"), "alice"));
    json_decref(r);
    assert_int_equal(reg("9001", "victim", "alice", 0, job_token("9001"), x, NULL), 403);
    attest("9001", "mallory", "n9");
    /* attested, mallory's "victim" is a group of her own (mallory/victim); alice's OWNER/NAME stays closed */
    assert_int_equal(reg("9001", "victim", "alice", 0, job_token("9001"), x, NULL), 201);
    assert_int_equal(reg("9001", "alice/victim", "mallory", 0, job_token("9001"), x, &r), 403);
    assert_string_equal(str(r, "error"), "twin group belongs to another user");
    json_decref(r);
    /* an empty run, an ended run with an absurd start: none gets in */
    assert_int_equal(reg("9001", "alice/victim", "mallory", 4000000000000000000LL, job_token("9001"), x, NULL), 403);
    /* the job's own token cannot attest */
    assert_int_equal(it_call(&srv, "POST", "/api/v1/attest",
                             "{\"job_id\": \"9001\", \"step_id\": \"0\", \"node\": \"n1\", \"ranks\": [0], "
                             "\"user\": \"alice\"}",
                             job_token("9001"), NULL),
                     403);
    o = it_wait_group(&srv, "victim", "match");
    assert_string_equal(str(o, "status"), "match");
    assert_int_equal(json_array_size(json_object_get(o, "runs")), 2);
    json_decref(o);

    /* sharing: not by mallory; by one of alice's jobs in the group; then mallory's attested runs join */
    assert_int_equal(it_call(&srv, "POST", "/api/v1/twins/victim/share?job=9001", "{\"users\": [\"mallory\"]}",
                             job_token("9001"), NULL),
                     403);
    assert_int_equal(
        it_call(&srv, "POST", "/api/v1/twins/victim/share?job=8001", "{\"users\": [\"mallory\"]}", NULL, NULL), 401);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/twins/victim/share?job=8001", "{\"users\": [\"mallory\"]}",
                             job_token("8001"), &o),
                     200);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(json_object_get(o, "owner"), "shared_with"), 0)), "mallory");
    json_decref(o);
    assert_int_equal(reg("9001", "alice/victim", "mallory", 0, job_token("9001"), x, NULL), 201);
    o = it_wait_group(&srv, "victim", "pending");
    assert_int_equal(json_array_size(json_object_get(o, "runs")), 3);
    json_decref(o);
    /* the admin may always */
    assert_int_equal(reg("9003", "victim", "ops", 0, ADMIN, x, NULL), 201);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/twins/nope/share", "{\"users\": []}", ADMIN, NULL), 404);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/twins/victim/share", "{\"users\": \"x\"}", ADMIN, NULL), 400);
}

/* A group first registered unattested (every group made before attestation existed, at upgrade) is claimed by
 * its owner's first attested run: the ownership becomes attested (before: the claim read the owner from a
 * PostgreSQL result already freed; an ASan lockstepd aborted on this registration). */
static void test_claim(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(reg("8701", "legacy", "alice", 0, job_token("8701"), a, NULL), 201);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/legacy", NULL, NULL, &o), 200);
    assert_string_equal(str(json_object_get(o, "owner"), "user"), "alice");
    assert_true(json_is_false(json_object_get(json_object_get(o, "owner"), "attested")));
    json_decref(o);
    assert_int_equal(reg("8702", "legacy", "alice", 0, attest_token("8702"), b, NULL), 201);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/legacy", NULL, NULL, &o), 200);
    assert_string_equal(str(json_object_get(o, "owner"), "user"), "alice");
    assert_true(json_is_true(json_object_get(json_object_get(o, "owner"), "attested")));
    json_decref(o);
    /* a later unattested run of "alice" no longer gets in */
    assert_int_equal(reg("8703", "legacy", "alice", 0, job_token("8703"), NULL, NULL), 403);
}

/* Runs that share no steps with the others (nothing recorded, ended empty, an absurd start_step) never hold
 * the comparison of the others back, and the status says why each was left out (before: the group stayed
 * pending, its divergence unseen). */
static void test_left_out_runs(void **state)
{
    (void)state;
    char a[40], b[40], c[40], d[40], e[40];
    assert_int_equal(reg("8101", "held", "alice", 0, attest_token("8101"), a, NULL), 201);
    assert_int_equal(reg("8102", "held", "alice", 0, attest_token("8102"), b, NULL), 201);
    assert_int_equal(reg("8103", "held", "alice", 0, attest_token("8103"), c, NULL), 201); /* never records */
    assert_int_equal(reg("8104", "held", "alice", 0, attest_token("8104"), d, NULL), 201); /* ends empty */
    assert_int_equal(reg("8105", "held", "alice", 4000000000000000000LL, attest_token("8105"), e, NULL), 201);
    assert_int_equal(it_end(&srv, d, 0, job_token("8104")), 200);
    feed(e, "8105", 3, -1, -1, 1); /* records 0..2, all before its start */
    feed(a, "8101", 6, -1, -1, 1);
    feed(b, "8102", 6, 3, 2, 1); /* step 3, record 2 flipped */
    json_t *o = it_wait_group(&srv, "held", "diverged");
    assert_string_equal(str(o, "status"), "diverged");
    json_t *fd = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(fd, "step")), 3);
    assert_int_equal(json_array_size(json_object_get(fd, "runs")), 2); /* a and b only */
    json_t *runs = json_object_get(o, "runs");
    static const char *const why[] = {NULL, NULL, "no records yet", "ended without records",
                                      "its records all come before its start_step"};
    for (int i = 0; i < 5; i++) {
        json_t *r = json_array_get(runs, (size_t)i);
        if (!why[i]) {
            assert_true(json_is_true(json_object_get(r, "compared")));
            assert_true(json_is_null(json_object_get(r, "left_out")));
        } else {
            assert_true(json_is_false(json_object_get(r, "compared")));
            assert_string_equal(str(r, "left_out"), why[i]);
        }
    }
    json_decref(o);
}

/* Runs resumed at step 3 beside a run that ended at step 1 and one that starts at step 40: the shared start is
 * step 3 (two runs cover it), the others are left out with the rule's words and the two are compared (before:
 * the comparison took the latest start_step, 40, and the group stayed pending). */
static void test_left_out_by_shared_start(void **state)
{
    (void)state;
    char a[40], b[40], c[40], d[40];
    uint64_t seq;
    assert_int_equal(reg("8111", "resumed", "alice", 3, attest_token("8111"), a, NULL), 201);
    assert_int_equal(reg("8112", "resumed", "alice", 3, attest_token("8112"), b, NULL), 201);
    assert_int_equal(reg("8113", "resumed", "alice", 0, attest_token("8113"), c, NULL), 201);  /* ends at step 1 */
    assert_int_equal(reg("8114", "resumed", "alice", 40, attest_token("8114"), d, NULL), 201); /* starts late */
    seq = 0;
    assert_int_equal(it_post_steps(&srv, c, 0, 0, 0, 2, 4, -1, -1, -1, -1, &seq, job_token("8113")), 200);
    assert_int_equal(it_end(&srv, c, 0, job_token("8113")), 200);
    seq = 0;
    assert_int_equal(it_post_steps(&srv, d, 0, 0, 40, 2, 4, -1, -1, -1, -1, &seq, job_token("8114")), 200);
    assert_int_equal(it_end(&srv, d, 0, job_token("8114")), 200);
    seq = 0;
    assert_int_equal(it_post_steps(&srv, a, 0, 0, 3, 4, 4, -1, -1, -1, -1, &seq, job_token("8111")), 200);
    assert_int_equal(it_end(&srv, a, 0, job_token("8111")), 200);
    seq = 0;
    assert_int_equal(it_post_steps(&srv, b, 0, 0, 3, 4, 4, 5, 1, -1, -1, &seq, job_token("8112")), 200);
    assert_int_equal(it_end(&srv, b, 0, job_token("8112")), 200);
    json_t *o = it_wait_group(&srv, "resumed", "diverged");
    assert_string_equal(str(o, "status"), "diverged");
    json_t *fd = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(fd, "step")), 5);
    assert_int_equal(json_array_size(json_object_get(fd, "runs")), 2); /* a and b only */
    json_t *runs = json_object_get(o, "runs");
    static const char *const why[] = {NULL, NULL, "it has not reached the shared start_step",
                                      "no other run has reached its start_step"};
    for (int i = 0; i < 4; i++) {
        json_t *r = json_array_get(runs, (size_t)i);
        if (!why[i]) {
            assert_true(json_is_true(json_object_get(r, "compared")));
        } else {
            assert_true(json_is_false(json_object_get(r, "compared")));
            assert_string_equal(str(r, "left_out"), why[i]);
        }
    }
    json_decref(o);
}

/* A group takes at most 64 runs: the 65th registration is refused, and every run of a full group is
 * compared (before: runs past the 64th were silently never compared). */
static void test_group_limit(void **state)
{
    (void)state;
    char ids[64][40], job[16], x[40];
    for (int i = 0; i < 64; i++) {
        snprintf(job, sizeof(job), "%d", 8200 + i);
        assert_int_equal(reg(job, "full", "alice", 0, attest_token(job), ids[i], NULL), 201);
    }
    json_t *r = NULL;
    assert_int_equal(reg("8300", "full", "alice", 0, attest_token("8300"), x, &r), 409);
    assert_string_equal(str(r, "error"), "twin group is full");
    json_decref(r);
    for (int i = 0; i < 64; i++) {
        snprintf(job, sizeof(job), "%d", 8200 + i);
        feed(ids[i], job, 4, i == 63 ? 2 : -1, 1, 1); /* the 64th diverges at step 2 */
    }
    json_t *o = it_wait_group(&srv, "full", "diverged");
    assert_string_equal(str(o, "status"), "diverged");
    json_t *fd = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(fd, "step")), 2);
    assert_string_equal(str(fd, "odd_run_id"), ids[63]);
    json_decref(o);
}

/* post_json_batch - one JSON batch of rank 0 with the given records text. */
static void post_json_batch(const char *run, const char *job, int batch_seq, const char *records)
{
    char path[128], body[2048];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records", run);
    snprintf(body, sizeof(body), "{\"rank\": 0, \"batch_seq\": %d, \"records\": [%s]}", batch_seq, records);
    assert_int_equal(it_call(&srv, "POST", path, body, job_token(job), NULL), 200);
}

/* wait_first - poll the group until its first divergence is at `step` (-1: none) and its status `want`. */
static json_t *wait_first(const char *group, int64_t step, const char *want)
{
    json_t *o = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(o);
        o = NULL;
        char path[128];
        snprintf(path, sizeof(path), "/api/v1/twins/%s", group);
        assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
        json_t *fd = json_object_get(o, "first_divergence");
        int at = step < 0 ? json_is_null(fd) : json_integer_value(json_object_get(fd, "step")) == step;
        if (at && !strcmp(str(o, "status"), want))
            return o;
        usleep(50000);
    }
    return o;
}

/* A record that arrives for a step already compared is compared: the group's status and first divergence
 * follow it, both ways (finding 7: /twins said match while /twins/G/steps said that step diverged). */
static void test_late_records(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(reg("8401", "late", "alice", 0, attest_token("8401"), a, NULL), 201);
    assert_int_equal(reg("8402", "late", "alice", 0, attest_token("8402"), b, NULL), 201);
    char recs[1024];
    size_t n = 0;
    for (int s = 0; s < 6; s++)
        n += (size_t)snprintf(recs + n, sizeof(recs) - n,
                              "%s{\"seq\": %d, \"step\": %d, \"name\": \"loss\", "
                              "\"fp\": \"%016x\"}",
                              s ? ", " : "", s, s, 100 + s);
    post_json_batch(a, "8401", 0, recs);
    post_json_batch(b, "8402", 0, recs);
    assert_int_equal(it_end(&srv, a, 0, job_token("8401")), 200);
    assert_int_equal(it_end(&srv, b, 0, job_token("8402")), 200);
    json_t *o = wait_first("late", -1, "match");
    assert_string_equal(str(o, "status"), "match");
    json_decref(o);
    /* a late record of step 3 in b only */
    post_json_batch(b, "8402", 1, "{\"seq\": 10, \"step\": 3, \"name\": \"late.x\", \"fp\": \"00000000000000aa\"}");
    o = wait_first("late", 3, "diverged");
    assert_string_equal(str(o, "status"), "diverged");
    assert_string_equal(str(json_object_get(o, "first_divergence"), "name"), "late.x");
    assert_string_equal(str(json_object_get(o, "first_divergence"), "kind"), "missing");
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/late/steps?from=3&to=3", NULL, NULL, &o), 200);
    assert_string_equal(
        str(json_array_get(json_object_get(json_array_get(json_object_get(o, "steps"), 0), "ranks"), 0), "status"),
        "diverged");
    json_decref(o);
    /* the same record arrives late in a too: step 3 matches again, the divergence goes */
    post_json_batch(a, "8401", 1, "{\"seq\": 10, \"step\": 3, \"name\": \"late.x\", \"fp\": \"00000000000000aa\"}");
    o = wait_first("late", -1, "match");
    assert_string_equal(str(o, "status"), "match");
    json_decref(o);
}

/* A group name with a '/' (the plugin allows it) is read with the slash percent-encoded: routing splits the
 * raw path and decodes each segment on its own (before, the decoded path split at the slash: 404). Such a name's
 * key is its owner's OWNER/NAME; the name alone finds it while it is the only group of that name. */
static void test_group_name_with_slash(void **state)
{
    (void)state;
    char a[40];
    assert_int_equal(reg("8501", "exp-42/a.b_c:d@e+f", "alice", 0, attest_token("8501"), a, NULL), 201);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/exp-42%2Fa.b_c:d@e+f", NULL, NULL, &o), 200);
    assert_string_equal(str(o, "group"), "alice/exp-42/a.b_c:d@e+f");
    assert_string_equal(str(o, "name"), "exp-42/a.b_c:d@e+f");
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/exp-42%2Fa.b_c:d@e+f/steps", NULL, NULL, NULL), 200);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/alice%2Fexp-42%2Fa.b_c:d@e+f/steps", NULL, NULL, NULL), 200);
}

typedef struct ender {
    const char *run, *job;
    int rank;
    long code;
} ender;

static void *end_main(void *arg)
{
    ender *e = arg;
    e->code = it_end(&srv, e->run, e->rank, job_token(e->job));
    return NULL;
}

/* Every rank of a run ends at once (slurmstepd reports each node's tasks as they exit): the run ends. */
static void test_concurrent_ends(void **state)
{
    (void)state;
    enum { R = 16 };
    for (int round = 0; round < 10; round++) {
        char body[256], path[128], job[16], id[40];
        snprintf(job, sizeof(job), "%d", 8600 + round);
        snprintf(body, sizeof(body),
                 "{\"job_id\": \"%s\", \"twin_group\": \"ends\", \"ranks\": %d, \"user\": \"alice\"}", job, R);
        json_t *o = NULL;
        assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", body, attest_token(job), &o), 201);
        snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(o, "run_id")));
        json_decref(o);
        pthread_t t[R];
        ender e[R];
        for (int r = 0; r < R; r++) {
            e[r] = (ender){id, job, r, 0};
            pthread_create(&t[r], NULL, end_main, &e[r]);
        }
        for (int r = 0; r < R; r++) {
            pthread_join(t[r], NULL);
            assert_int_equal(e[r].code, 200);
        }
        snprintf(path, sizeof(path), "/api/v1/runs/%s", id);
        assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
        assert_string_equal(str(o, "status"), "ended");
        json_decref(o);
    }
}

/* A rank's end reported twice (its agent's, then the plugin's) counts once towards the run's end: the run ends with
 * its last rank, whatever their order (each end looks for a rank without one, not all of them at once), failed when
 * a rank's exit code is not 0. */
static void test_end_counted_once(void **state)
{
    (void)state;
    char body[256], path[128], id[40];
    snprintf(body, sizeof(body),
             "{\"job_id\": \"8700\", \"twin_group\": \"ends-once\", \"ranks\": 4, "
             "\"user\": \"alice\"}");
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", body, attest_token("8700"), &o), 201);
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(o, "run_id")));
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/runs/%s", id);
    char end[128];
    snprintf(end, sizeof(end), "/api/v1/runs/%s/end", id);
    const int order[] = {1, 2, 0, 0};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        snprintf(body, sizeof(body), "{\"rank\": %d, \"exit_code\": 0}", order[i]);
        assert_int_equal(it_call(&srv, "POST", end, body, job_token("8700"), &o), 200);
        assert_true(json_is_false(json_object_get(o, "run_ended")));
        json_decref(o);
    }
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_string_equal(str(o, "status"), "running"); /* three of four ranks ended, one of them twice */
    json_decref(o);
    assert_int_equal(it_call(&srv, "POST", end, "{\"rank\": 3, \"exit_code\": 3}", job_token("8700"), &o), 200);
    assert_true(json_is_true(json_object_get(o, "run_ended")));
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_string_equal(str(o, "status"), "failed");
    json_decref(o);
}

/* get_code - GET `path` with `token`; the HTTP status (the reply in *out when given). */
static long get_code(const char *path, const char *token, json_t **out)
{
    json_t *o = NULL;
    long code = it_call(&srv, "GET", path, NULL, token, &o);
    if (out)
        *out = o;
    else
        json_decref(o);
    return code;
}

/* has_group - whether the list envelope `o` holds group `g`. */
static int has_group(json_t *o, const char *g)
{
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(o, "items"), i, it) if (!strcmp(str(it, "group"), g)) return 1;
    return 0;
}

/* With read_access = admin a job's own token (?job=J) reads only the twin groups J's user owns or was shared
 * with: the list is filtered, a group of another user and its steps, records and manifest diff are 403. (Last:
 * it restarts lockstepd with that setting.) */
static void test_reads_follow_owners(void **state)
{
    (void)state;
    char x[40];
    assert_int_equal(reg("7901", "bobs", "bob", 0, attest_token("7901"), x, NULL), 201);
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    h_srv_cleanup(&srv);
    char secret[300], adm[300];
    snprintf(secret, sizeof(secret), "%s/secret", dir);
    snprintf(adm, sizeof(adm), "%s/admin", dir);
    const char *args[] = {"--db", pg.conninfo,     "--secret", secret, "--admin-token",
                          adm,    "--read-access", "admin",    NULL};
    assert_int_equal(h_srv_start(&srv, args), 0);

    json_t *o = NULL;
    assert_int_equal(get_code("/api/v1/twins", NULL, NULL), 401);
    assert_int_equal(get_code("/api/v1/twins", job_token("8001"), NULL), 403); /* a job's token names its job */
    assert_int_equal(get_code("/api/v1/twins?job=8001", job_token("8002"), NULL), 403);
    /* alice (job 8001) sees her group, not bob's */
    assert_int_equal(get_code("/api/v1/twins?job=8001", job_token("8001"), &o), 200);
    assert_true(has_group(o, "victim"));
    assert_false(has_group(o, "bobs"));
    json_decref(o);
    assert_int_equal(get_code("/api/v1/twins/victim?job=8001", job_token("8001"), NULL), 200);
    const char *other[] = {"/api/v1/twins/bobs?job=8001", "/api/v1/twins/bobs/steps?job=8001",
                           "/api/v1/twins/bobs/records?job=8001&step=0&rank=0",
                           "/api/v1/twins/bobs/manifest-diff?job=8001"};
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        assert_int_equal(get_code(other[i], job_token("8001"), &o), 403);
        assert_string_equal(str(o, "error"), "twin group of another user");
        json_decref(o);
    }
    /* mallory (job 9001), with whom alice shared "victim", sees it too; bob sees his own */
    assert_int_equal(get_code("/api/v1/twins?job=9001", job_token("9001"), &o), 200);
    assert_true(has_group(o, "victim"));
    assert_false(has_group(o, "bobs"));
    json_decref(o);
    assert_int_equal(get_code("/api/v1/twins/bobs?job=7901", job_token("7901"), NULL), 200);
    assert_int_equal(get_code("/api/v1/twins/victim/steps?job=7901", job_token("7901"), NULL), 403);
    /* a job nobody attested that reports "alice" reads as an unattested alice: her attested groups and runs stay
     * closed to it, its own unattested group reads (before: it read every group of alice's) */
    char y[40], path[160];
    assert_int_equal(reg("7902", "claimed-alice", "alice", 0, job_token("7902"), y, NULL), 201);
    assert_int_equal(get_code("/api/v1/twins?job=7902", job_token("7902"), &o), 200);
    assert_false(has_group(o, "victim"));
    assert_true(has_group(o, "claimed-alice"));
    json_decref(o);
    const char *closed[] = {"/api/v1/twins/victim?job=7902", "/api/v1/twins/victim/steps?job=7902",
                            "/api/v1/twins/victim/records?job=7902&step=0&rank=0",
                            "/api/v1/twins/victim/manifest-diff?job=7902", "/api/v1/twins/victim/narrows?job=7902"};
    for (size_t i = 0; i < sizeof(closed) / sizeof(closed[0]); i++) {
        assert_int_equal(get_code(closed[i], job_token("7902"), &o), 403);
        assert_string_equal(str(o, "error"), "twin group of another user");
        json_decref(o);
    }
    assert_int_equal(get_code("/api/v1/twins/claimed-alice?job=7902", job_token("7902"), NULL), 200);
    assert_int_equal(get_code("/api/v1/runs?job=8001", job_token("8001"), &o), 200);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/checkpoints?job=7902",
             str(json_array_get(json_object_get(o, "items"), 0), "run_id"));
    json_decref(o);
    assert_int_equal(get_code(path, job_token("7902"), NULL), 403);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/checkpoints?job=7902", y);
    assert_int_equal(get_code(path, job_token("7902"), NULL), 200);
    /* once slurmstepd attests the job as alice, it reads as alice */
    attest("7902", "alice", "n1");
    assert_int_equal(get_code("/api/v1/twins/victim?job=7902", job_token("7902"), NULL), 200);
    /* the admin sees every group */
    assert_int_equal(get_code("/api/v1/twins", ADMIN, &o), 200);
    assert_true(has_group(o, "victim") && has_group(o, "bobs"));
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_refuses_others),  cmocka_unit_test(test_claim),
        cmocka_unit_test(test_left_out_runs),         cmocka_unit_test(test_left_out_by_shared_start),
        cmocka_unit_test(test_group_limit),           cmocka_unit_test(test_late_records),
        cmocka_unit_test(test_group_name_with_slash), cmocka_unit_test(test_concurrent_ends),
        cmocka_unit_test(test_end_counted_once),      cmocka_unit_test(test_reads_follow_owners),
    };
    return cmocka_run_group_tests_name("lockstepd twin groups", tests, setup, teardown);
}
