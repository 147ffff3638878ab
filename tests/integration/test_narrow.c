/* test_narrow.c - lockstepd integration: replay experiments (narrows) of diverged groups, with replays posted as a
 * Slurm job would: designs, outcomes, verdicts, the twin API, history, evidence, the follow-up alert, checkpoints and
 * resume templates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;
static char dir[256], conf[300], admin_file[300];
static const char *ADMIN = "narrow-admin-token";
static int job_no = 7000;

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ls-narrow.XXXXXX");
    if (!mkdtemp(dir) || h_pg_start(&pg) < 0)
        return -1;
    snprintf(conf, sizeof(conf), "%s/lockstepd.conf", dir);
    snprintf(admin_file, sizeof(admin_file), "%s/admin", dir);
    it_write_file(admin_file, ADMIN, 0600);
    it_write_file(conf, "suspects_interval_ms = 200\npublic_url = https://lockstep.example/\n", 0644);
    const char *args[] = {"--db", pg.conninfo, "--config", conf, "--admin-token", admin_file, NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    return it_stop(&srv, &pg, dir);
}

static json_t *call(const char *method, const char *path, const char *body, const char *token, long want)
{
    json_t *o = NULL;
    long got = it_call(&srv, method, path, body, token, &o);
    if (got != want) {
        char *t = o ? json_dumps(o, 0) : NULL;
        fail_msg("%s %s: HTTP %ld, want %ld: %s", method, path, got, want, t ? t : "(no JSON)");
    }
    return o;
}

static int saved_block_at = -1;         /* >= 0: run_on's runs also record a saved state block of that step */
static const char *run_extra = "";      /* more registration fields of run_on's runs (", \"argv\": [...]") */
static const char *attest_on;           /* NULL: run_on's runs are attested on their node; "": not at all; else there */
static int restored_block_at = -1;      /* >= 0: ... and a restored one, of value restored_value, at that step */
static const char *restored_value;      /* NULL: none restored */
static const char *manifest_extra = ""; /* more fields of run_on's manifests (", \"env\": {...}") */

/* run_on - a run of `group` (job `job`, 2 ranks on `node`, resume template `resume` or NULL) whose record `flip`
 * (1..3: layerN.out; -1 none) of step 3 is flipped on rank 1; steps 0-5 (from `first`), ended. */
static void run_on(const char *group, const char *job, const char *node, int flip, const char *resume, long long first,
                   char *id)
{
    char body[4096], path[200];
    snprintf(body, sizeof(body),
             "{\"job_id\": \"%s\", \"step_id\": \"0\", \"twin_group\": \"%s\", \"ranks\": 2, \"start_step\": %lld, "
             "\"user\": \"alice\", \"nodes\": \"%s\", \"command\": \"train --steps 6\", \"mode\": \"det\"%s%s%s%s}",
             job, group, first, node, resume ? ", \"resume\": \"" : "", resume ? resume : "", resume ? "\"" : "",
             run_extra);
    json_t *o = call("POST", "/api/v1/runs", body, NULL, 201);
    snprintf(id, 40, "%s", json_string_value(json_object_get(o, "run_id")));
    json_decref(o);
    /* slurmstepd's word on the placement (the admin token may attest; this lockstepd has no site secret):
     * hardware evidence counts only where it was attested */
    snprintf(body, sizeof(body),
             "{\"job_id\": \"%s\", \"step_id\": \"0\", \"node\": \"%s\", \"ranks\": [0, 1], \"user\": \"alice\"}", job,
             attest_on ? attest_on : node);
    if (!attest_on || *attest_on)
        assert_int_equal(it_call(&srv, "POST", "/api/v1/attest", body, ADMIN, NULL), 200);
    for (int r = 0; r < 2; r++) {
        snprintf(body, sizeof(body),
                 "{\"rank\": %d, \"host\": \"localhost\", \"slurm_node\": \"%s\", \"gpus\": [{\"index\": 0, \"uuid\": "
                 "\"GPU-%s-0\", \"name\": \"TestGPU\"}]%s}",
                 r, node, node, manifest_extra);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", id);
        json_decref(call("POST", path, body, NULL, 200));
    }
    for (int r = 0; r < 2; r++) {
        uint64_t seq = 0;
        assert_int_equal(it_post_steps(&srv, id, r, 0, first, (int)(6 - first), 4, r == 1 && flip > 0 ? 3 : -1, flip,
                                       -1, -1, &seq, NULL),
                         200);
        if (saved_block_at >= 0) { /* a saved state block of that step, after the steps (their progress) */
            snprintf(body, sizeof(body),
                     "{\"rank\": %d, \"batch_seq\": 1, \"records\": [{\"seq\": 100000, \"step\": %d, \"name\": "
                     "\"params\", \"level\": \"metric\", \"dtype\": \"u64\", \"nbytes\": 8, \"fp\": "
                     "\"00000000000000aa\", \"value_bits\": \"00000000000000aa\", \"state\": \"saved\"}]}",
                     r, saved_block_at);
            snprintf(path, sizeof(path), "/api/v1/runs/%s/records", id);
            json_decref(call("POST", path, body, NULL, 200));
        }
        if (restored_block_at >= 0 && restored_value) { /* the state it loaded, before its first step */
            snprintf(body, sizeof(body),
                     "{\"rank\": %d, \"batch_seq\": 2, \"records\": [{\"seq\": 100001, \"step\": %d, \"name\": "
                     "\"params\", \"level\": \"metric\", \"dtype\": \"u64\", \"nbytes\": 8, \"fp\": \"%s\", "
                     "\"value_bits\": \"%s\", \"state\": \"restored\"}]}",
                     r, restored_block_at, restored_value, restored_value);
            snprintf(path, sizeof(path), "/api/v1/runs/%s/records", id);
            json_decref(call("POST", path, body, NULL, 200));
        }
        assert_int_equal(it_end(&srv, id, r, NULL), 200);
    }
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

#define NODES4                                                                                                         \
    "[{\"name\": \"n1\", \"state\": \"idle\"}, {\"name\": \"n2\", \"state\": \"idle\"}, "                              \
    "{\"name\": \"n3\", \"state\": \"mix\"}, {\"name\": \"n4\", \"state\": \"idle\"}]"

/* assert_words - the JSON array of strings `a` is the words of `want` ('|'-separated). */
static void assert_words(json_t *a, const char *want)
{
    char got[4096] = "";
    size_t l = 0, i;
    json_t *w;
    assert_true(json_is_array(a));
    json_array_foreach(a, i, w) l +=
        (size_t)snprintf(got + l, sizeof(got) - l, "%s%s", i ? "|" : "", json_string_value(w));
    if (strcmp(got, want))
        fail_msg("words \"%s\", want \"%s\"", got, want);
}

/* start - POST a narrow of `group` with `nodes`; the narrow (caller decrefs). */
static json_t *start(const char *group, const char *nodes, const char *extra)
{
    char path[300], body[2048];
    snprintf(path, sizeof(path), "/api/v1/twins/%s/narrows", group);
    snprintf(body, sizeof(body), "{\"nodes\": %s, \"actor\": \"sre\"%s%s}", nodes, extra ? ", " : "",
             extra ? extra : "");
    json_t *o = call("POST", path, body, ADMIN, 201);
    json_t *n = json_incref(json_object_get(o, "narrow"));
    json_decref(o);
    assert_non_null(n);
    return n;
}

/* replay - each placement of `n` becomes a job and a run of its replay group on its nodes, flipping record
 * `flip_on(nodes, index)` (or none); the jobs are reported to lockstepd, all at once, or with `one_by_one` each
 * alone, waiting until lockstepd has decided that placement before the next runs (replays that finish far apart,
 * so the verdict is given from placements decided in earlier passes). */
static const char *(*restore_of)(int index); /* non-NULL: the state placement `index`'s replay restores */

static void replay(json_t *n, int (*flip_on)(const char *nodes, int index), int one_by_one)
{
    size_t i;
    json_t *p;
    char jobs[4096] = "{\"placements\": [";
    size_t jl = strlen(jobs);
    long long nid = (long long)json_integer_value(json_object_get(n, "id"));
    char path[100], one[200];
    snprintf(path, sizeof(path), "/api/v1/narrows/%lld/jobs", nid);
    size_t count = json_array_size(json_object_get(n, "placements"));
    json_array_foreach(json_object_get(n, "placements"), i, p)
    {
        char job[16], id[40];
        snprintf(job, sizeof(job), "%d", job_no++);
        const char *nodes = str(p, "nodes");
        json_t *rs = json_object_get(p, "start_step");
        restored_value = restore_of ? restore_of((int)i) : NULL;
        run_on(str(n, "narrow_group"), job, nodes, flip_on(nodes, (int)i), NULL,
               json_is_integer(rs) ? json_integer_value(rs) : 0, id);
        restored_value = NULL;
        if (one_by_one) {
            snprintf(one, sizeof(one), "{\"placements\": [{\"index\": %d, \"job_id\": \"%s\"}]}", (int)i, job);
            json_decref(call("POST", path, one, ADMIN, 200));
            if (i + 1 == count)
                continue; /* the last one decided is the verdict: wait_done waits for it */
            char get[100];
            snprintf(get, sizeof(get), "/api/v1/narrows/%lld", nid);
            int decided = 0;
            for (int k = 0; k < 400 && !decided; k++) {
                json_t *o = call("GET", get, NULL, NULL, 200);
                json_t *q = json_array_get(json_object_get(json_object_get(o, "narrow"), "placements"), i);
                decided = strcmp(str(q, "outcome"), "pending") != 0;
                json_decref(o);
                if (!decided)
                    usleep(50000);
            }
            if (!decided)
                fail_msg("placement %d of narrow %lld not decided after 20 s", (int)i, nid);
            continue;
        }
        jl += (size_t)snprintf(jobs + jl, sizeof(jobs) - jl, "%s{\"index\": %d, \"job_id\": \"%s\"}", i ? ", " : "",
                               (int)i, job);
    }
    if (one_by_one)
        return;
    snprintf(jobs + jl, sizeof(jobs) - jl, "]}");
    json_decref(call("POST", path, jobs, ADMIN, 200));
}

static void replay_all(json_t *n, int (*flip_on)(const char *nodes, int index))
{
    replay(n, flip_on, 0);
}

/* wait_done - poll the narrow until it is done; the document. */
static json_t *wait_done(long long id)
{
    char path[100];
    snprintf(path, sizeof(path), "/api/v1/narrows/%lld", id);
    for (int i = 0; i < 400; i++) {
        json_t *o = call("GET", path, NULL, NULL, 200);
        json_t *n = json_object_get(o, "narrow");
        if (!strcmp(str(n, "state"), "done")) {
            json_incref(n);
            json_decref(o);
            return n;
        }
        json_decref(o);
        usleep(50000);
    }
    fail_msg("narrow %lld not done after 20 s", id);
    return NULL;
}

/* three - a three-run group: runs on n1 and n2 agree, the run on n3 flips layer1.out at step 3 on rank 1. */
static void three(const char *group)
{
    char id[40], job[16];
    const char *nodes[] = {"n1", "n2", "n3"};
    for (int k = 0; k < 3; k++) {
        snprintf(job, sizeof(job), "%d", job_no++);
        run_on(group, job, nodes[k], k == 2 ? 1 : -1, NULL, 0, id);
    }
    json_t *t = it_wait_group(&srv, group, "diverged");
    assert_string_equal(str(t, "status"), "diverged");
    json_decref(t);
}

static int on_n3(const char *nodes, int index)
{
    (void)index;
    return !strcmp(nodes, "n3") ? 1 : -1;
}

static int nowhere(const char *nodes, int index)
{
    (void)nodes;
    (void)index;
    return -1;
}

/* history_has - node `node`'s history holds a `kind` event whose detail mentions `needle`. */
static int history_has(const char *node, const char *kind, const char *needle)
{
    char path[200];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s/history?limit=500", node);
    json_t *o = call("GET", path, NULL, NULL, 200);
    size_t i;
    json_t *e;
    int found = 0;
    json_array_foreach(json_object_get(o, "items"), i, e) found |=
        !strcmp(str(e, "kind"), kind) && strstr(str(e, "detail"), needle) != NULL;
    json_decref(o);
    return found;
}

/* assert_alert_metrics_match - /metrics counts the alerts GET /api/v1/alerts lists, for every kind: raised (every
 * state) and open; `verdicts` is how many verdict alerts there must be at least. */
static void assert_alert_metrics_match(int verdicts)
{
    static const char *const kinds[] = {"divergence", "suspect", "verdict"};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        char path[200], sample[200];
        snprintf(path, sizeof(path), "/api/v1/alerts?limit=1&kind=%s", kinds[k]);
        json_t *all = call("GET", path, NULL, NULL, 200);
        snprintf(path, sizeof(path), "/api/v1/alerts?limit=1&kind=%s&state=open", kinds[k]);
        json_t *open = call("GET", path, NULL, NULL, 200);
        long long raised = json_integer_value(json_object_get(all, "total"));
        long long now_open = json_integer_value(json_object_get(open, "total"));
        snprintf(sample, sizeof(sample), "lockstepd_alerts_raised_total{kind=\"%s\"}", kinds[k]);
        if (it_metric(&srv, sample, NULL) != (double)raised)
            fail_msg("%s is %g, the API lists %lld", sample, it_metric(&srv, sample, NULL), raised);
        snprintf(sample, sizeof(sample), "lockstepd_alerts_open{kind=\"%s\"}", kinds[k]);
        if (it_metric(&srv, sample, NULL) != (double)now_open)
            fail_msg("%s is %g, the API has %lld open", sample, it_metric(&srv, sample, NULL), now_open);
        if (!strcmp(kinds[k], "verdict"))
            assert_true(raised >= verdicts);
        json_decref(all);
        json_decref(open);
    }
}

static void test_persistent(void **state)
{
    (void)state;
    three("np-persist");
    json_t *n = start("np-persist", NODES4, NULL);
    /* the design: the odd run again on n3, a majority run on n3, the odd run's job on n1, a control on n4 */
    json_t *pl = json_object_get(n, "placements");
    assert_int_equal(json_array_size(pl), 4);
    const char *roles[] = {"odd-again", "majority-on-odd-nodes", "odd-on-majority-nodes", "odd-on-other-nodes"};
    const char *where[] = {"n3", "n3", "n1", "n4"};
    for (int k = 0; k < 4; k++) {
        assert_string_equal(str(json_array_get(pl, (size_t)k), "role"), roles[k]);
        assert_string_equal(str(json_array_get(pl, (size_t)k), "nodes"), where[k]);
        assert_string_equal(str(json_array_get(pl, (size_t)k), "outcome"), "pending");
    }
    assert_string_equal(str(n, "kind"), "three-run");
    assert_string_equal(str(n, "state"), "running");
    /* runs registered without argv: their command split at white space, said so; run as their attested user */
    assert_words(json_object_get(json_array_get(pl, 0), "argv"), "train|--steps|6");
    assert_non_null(strstr(str(json_array_get(pl, 0), "why"), "split at white space"));
    assert_string_equal(str(json_array_get(pl, 0), "user"), "alice");
    assert_string_equal(str(json_object_get(n, "window"), "trace"), "collectives;modules:steps=2-4:ranks=1");
    assert_string_equal(str(n, "narrow_group"), "np-persist.narrow-1");
    /* the group shows the replay while it runs */
    json_t *t = call("GET", "/api/v1/twins/np-persist", NULL, NULL, 200);
    assert_string_equal(str(json_object_get(t, "replay"), "state"), "running");
    json_decref(t);

    replay(n, on_n3, 1); /* decided over several passes: the GPU must survive them */
    json_t *d = wait_done(json_integer_value(json_object_get(n, "id")));
    if (strcmp(str(d, "verdict"), "persistent-hardware")) {
        char *txt = json_dumps(d, JSON_INDENT(1));
        fail_msg("verdict: %s", txt);
    }
    assert_string_equal(str(d, "node"), "n3");
    assert_string_equal(str(d, "gpu"), "GPU-n3-0");
    assert_non_null(strstr(str(d, "reason"), "follows n3"));
    assert_true(json_array_size(json_object_get(d, "reasoning")) >= 3);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(d, "placements"), i, p)
    {
        assert_string_equal(str(p, "outcome"), "ran");
        assert_true(json_is_true(json_object_get(p, "diverged")) == !strcmp(str(p, "nodes"), "n3"));
        assert_true(*str(p, "run_id"));
    }
    /* the record: the first record that differs between a replay on n3 and one elsewhere */
    json_t *rec = json_object_get(d, "record");
    assert_true(json_is_object(rec));
    assert_int_equal(json_integer_value(json_object_get(rec, "step")), 3);
    assert_int_equal(json_integer_value(json_object_get(rec, "rank")), 1);
    assert_string_equal(str(rec, "name"), "layer1.out");
    json_decref(n);
    json_decref(d);

    /* the twin API: the group's verdict, and the replay group links back */
    t = call("GET", "/api/v1/twins/np-persist", NULL, NULL, 200);
    assert_string_equal(str(json_object_get(t, "replay"), "verdict"), "persistent-hardware");
    assert_int_equal(json_integer_value(json_object_get(t, "replays")), 1);
    json_decref(t);
    t = call("GET", "/api/v1/twins/np-persist.narrow-1", NULL, NULL, 200);
    assert_string_equal(str(json_object_get(t, "narrow_of"), "group"), "np-persist");
    assert_string_equal(str(t, "kind"), "replay"); /* behind the front page's kind filter */
    json_decref(t);
    t = call("GET", "/api/v1/twins?kind=replay", NULL, NULL, 200);
    assert_int_equal(json_array_size(json_object_get(t, "items")), 1);
    assert_string_equal(str(json_array_get(json_object_get(t, "items"), 0), "group"), "np-persist.narrow-1");
    json_decref(t);
    t = call("GET", "/api/v1/twins/np-persist/narrows", NULL, NULL, 200);
    assert_int_equal(json_array_size(json_object_get(t, "items")), 1);
    json_decref(t);

    /* the follow-up alert, the history and the evidence */
    int alert = 0;
    for (int k = 0; k < 200 && !alert; k++) {
        json_t *a = call("GET", "/api/v1/alerts?limit=100", NULL, NULL, 200);
        json_array_foreach(json_object_get(a, "items"), i,
                           p) if (!strcmp(str(p, "kind"), "verdict") && !strcmp(str(p, "group"), "np-persist"))
        {
            alert = 1;
            assert_string_equal(str(p, "severity"), "critical");
            assert_non_null(strstr(str(p, "summary"), "replay verdict persistent-hardware on n3"));
            assert_non_null(strstr(str(p, "text"), "odd-again on n3"));
        }
        json_decref(a);
        if (!alert)
            usleep(50000);
    }
    assert_true(alert);
    /* an alert's lifecycle (server/alerts/alerts.h): the follow-up supersedes the group's divergence alert; it blames
     * n3 (labels) */
    int superseded = 0;
    long long verdict_id = 0;
    for (int k = 0; k < 200 && !superseded; k++) {
        json_t *a = call("GET", "/api/v1/alerts?limit=100", NULL, NULL, 200);
        json_array_foreach(json_object_get(a, "items"), i,
                           p) if (!strcmp(str(p, "group"), "np-persist") && !strcmp(str(p, "kind"), "verdict"))
        {
            verdict_id = (long long)json_integer_value(json_object_get(p, "id"));
            json_t *l = json_object_get(p, "labels");
            assert_string_equal(str(l, "alertname"), "LockstepReplayVerdict");
            assert_string_equal(str(l, "node"), "n3");
            assert_string_equal(str(l, "gpu"), "GPU-n3-0");
            assert_string_equal(str(l, "group"), "np-persist");
            assert_string_equal(str(l, "kind"), "verdict");
            assert_string_equal(str(l, "severity"), "critical");
            assert_string_equal(str(l, "user"), "alice"); /* as slurmstepd attested the group's runs */
            assert_null(strchr(str(json_object_get(p, "annotations"), "description"), '\n'));
            assert_non_null(strstr(str(json_object_get(p, "annotations"), "dashboard"), "/#/twins/np-persist"));
            assert_string_equal(str(json_object_get(p, "annotations"), "verdict"), "persistent-hardware");
            assert_string_equal(str(p, "state"), "open");
        }
        json_array_foreach(json_object_get(a, "items"), i,
                           p) if (!strcmp(str(p, "group"), "np-persist") && !strcmp(str(p, "kind"), "divergence"))
            superseded = verdict_id && !strcmp(str(p, "resolved_reason"), "superseded") &&
                         json_integer_value(json_object_get(p, "superseded_by")) == verdict_id;
        json_decref(a);
        if (!superseded)
            usleep(50000);
    }
    assert_true(superseded);
    /* the replay group raised no divergence alert of its own (its verdict speaks); /metrics counts as the API */
    json_t *al = call("GET", "/api/v1/alerts?limit=1000", NULL, NULL, 200);
    json_array_foreach(json_object_get(al, "items"), i, p)
        assert_string_not_equal(str(p, "group"), "np-persist.narrow-1");
    json_decref(al);
    assert_alert_metrics_match(1);
    assert_true(history_has("n3", "verdict", "persistent-hardware"));
    /* n3: the group's strong evidence and the two replays that reproduced it there */
    int ok = 0;
    for (int k = 0; k < 200 && !ok; k++) {
        json_t *o = call("GET", "/api/v1/nodes/n3", NULL, NULL, 200);
        json_t *node = json_object_get(o, "node");
        ok = json_number_value(json_object_get(node, "involvements")) >= 2.99 &&
             history_has("n3", "involvement", "replays of group np-persist");
        json_decref(o);
        if (!ok)
            usleep(50000);
    }
    assert_true(ok);
    /* the classification stays the rules' (the odd run of three: hardware, minority); the evidence follows the
     * verdict beside it; the twin list shows the verdict too */
    t = call("GET", "/api/v1/twins/np-persist", NULL, NULL, 200);
    assert_string_equal(str(json_object_get(t, "classification"), "class"), "hardware");
    assert_string_not_equal(str(json_object_get(t, "classification"), "code"), "replay");
    assert_string_equal(str(json_object_get(t, "evidence"), "from"), "replay");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "evidence"), "narrow")), 1);
    assert_non_null(strstr(str(json_object_get(t, "evidence"), "reason"), "replay verdict persistent-hardware on n3"));
    json_decref(t);
    t = call("GET", "/api/v1/twins?limit=500", NULL, NULL, 200);
    int listed = 0;
    json_array_foreach(json_object_get(t, "items"), i, p) if (!strcmp(str(p, "group"), "np-persist"))
    {
        listed = 1;
        assert_string_equal(str(json_object_get(p, "replay"), "verdict"), "persistent-hardware");
        assert_string_equal(str(json_object_get(p, "replay"), "node"), "n3");
    }
    assert_true(listed);
    json_decref(t);
    /* n4 ran a clean replay: an exposure, no involvement */
    json_t *o = call("GET", "/api/v1/nodes/n4", NULL, NULL, 200);
    assert_true(json_number_value(json_object_get(json_object_get(o, "node"), "runs")) >= 1);
    assert_true(json_number_value(json_object_get(json_object_get(o, "node"), "involvements")) < 0.01);
    json_decref(o);
}

static void test_transient(void **state)
{
    (void)state;
    three("np-once");
    json_t *n = start("np-once", NODES4, NULL);
    replay_all(n, nowhere);
    json_t *d = wait_done(json_integer_value(json_object_get(n, "id")));
    assert_string_equal(str(d, "verdict"), "transient-hardware");
    assert_string_equal(str(d, "node"), "n3");
    assert_non_null(strstr(str(d, "reason"), "one-off"));
    assert_true(json_is_null(json_object_get(d, "record"))); /* nothing reproduced: nothing to name */
    assert_true(history_has("n3", "verdict", "transient-hardware"));
    int ok = 0;
    for (int k = 0; k < 200 && !ok; k++) {
        ok = history_has("n3", "involvement", "replay verdict transient-hardware on n3");
        if (!ok)
            usleep(50000);
    }
    assert_true(ok);
    json_decref(n);
    json_decref(d);
}

/* Twins run with an ignore rule (their manifests say so), one with a one-off fault: the replays carry the rule, the
 * run's determinism environment and its directory; replays that recorded with the rule give the one-off its verdict,
 * and replays that recorded without it are failed with what differs, never counted as results. */
#define RULE_ENV                                                                                                       \
    ", \"cwd\": \"/work/run 1\", \"env\": {\"LOCKSTEP_IGNORE\": \"report_*\", \"OMP_NUM_THREADS\": \"4\", "            \
    "\"LOCKSTEP_JOB_ID\": \"77\", \"LOCKSTEP_STEP_ON\": \"train_step\"}"
static void test_replays_carry_the_rules(void **state)
{
    (void)state;
    manifest_extra = RULE_ENV;
    three("np-rule");
    three("np-norule");
    json_t *n = start("np-rule", NODES4, NULL);
    json_t *st = json_object_get(json_array_get(json_object_get(n, "placements"), 0), "settings");
    assert_string_equal(str(st, "ignore"), "report_*");
    assert_string_equal(str(st, "step_on"), "train_step");
    assert_string_equal(str(st, "cwd"), "/work/run 1");
    assert_string_equal(str(st, "trace"), "collectives;modules:steps=2-4:ranks=1");
    assert_string_equal(str(json_object_get(st, "env"), "OMP_NUM_THREADS"), "4");
    assert_int_equal(json_object_size(json_object_get(st, "env")), 1); /* no LOCKSTEP_* variable of the job's */
    /* replays that recorded as the runs did: the one-off is transient, on its node */
    manifest_extra = ", \"env\": {\"LOCKSTEP_IGNORE\": \"report_*\", \"LOCKSTEP_STEP_ON\": \"train_step\", "
                     "\"LOCKSTEP_TRACE\": \"collectives;modules:steps=2-4:ranks=1\"}";
    replay_all(n, nowhere);
    json_t *d = wait_done(json_integer_value(json_object_get(n, "id")));
    assert_string_equal(str(d, "verdict"), "transient-hardware");
    assert_string_equal(str(d, "node"), "n3");
    json_decref(n);
    json_decref(d);
    /* replays that recorded without the rule: each failed, saying what differs */
    n = start("np-norule", NODES4, NULL);
    manifest_extra = ", \"env\": {\"LOCKSTEP_STEP_ON\": \"train_step\", "
                     "\"LOCKSTEP_TRACE\": \"collectives;modules:steps=2-4:ranks=1\"}";
    replay_all(n, nowhere);
    d = wait_done(json_integer_value(json_object_get(n, "id")));
    manifest_extra = "";
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(d, "placements"), i, p)
    {
        if (strcmp(str(p, "outcome"), "failed") ||
            !strstr(str(p, "detail"), "recorded differently from the run it replays (LOCKSTEP_IGNORE '' where the run "
                                      "it replays had 'report_*')"))
            fail_msg("placement %zu: %s: %s", i, str(p, "outcome"), str(p, "detail"));
    }
    assert_string_not_equal(str(d, "verdict"), "software");
    assert_string_not_equal(str(d, "verdict"), "transient-hardware");
    json_decref(n);
    json_decref(d);
}

/* A pair whose replays on one node disagree with each other: the program does not repeat itself. */
static int differently(const char *nodes, int index)
{
    (void)nodes;
    return 1 + index % 3;
}

static void test_software_pair(void **state)
{
    (void)state;
    char id[40], job[16];
    snprintf(job, sizeof(job), "%d", job_no++);
    run_on("np-pair", job, "n1", -1, NULL, 0, id);
    snprintf(job, sizeof(job), "%d", job_no++);
    run_on("np-pair", job, "n2", 2, NULL, 0, id);
    json_decref(it_wait_group(&srv, "np-pair", "diverged"));
    json_t *n = start("np-pair", NODES4, "\"placements\": 4");
    assert_string_equal(str(n, "kind"), "two-run");
    json_t *pl = json_object_get(n, "placements");
    assert_int_equal(json_array_size(pl), 4);
    assert_string_equal(str(json_array_get(pl, 0), "role"), "run-again");
    assert_string_equal(str(json_array_get(pl, 2), "role"), "swapped");
    replay_all(n, differently);
    json_t *d = wait_done(json_integer_value(json_object_get(n, "id")));
    assert_string_equal(str(d, "verdict"), "software");
    assert_non_null(strstr(str(d, "reason"), "does not repeat itself"));
    json_decref(n);
    json_decref(d);
}

/* No usable node: the experiment cannot run, and the verdict says why. */
static void test_no_nodes(void **state)
{
    (void)state;
    three("np-none");
    json_t *n = start("np-none",
                      "[{\"name\": \"n1\", \"state\": \"down*\"}, {\"name\": \"n2\", \"state\": \"drain\"}, "
                      "{\"name\": \"n3\", \"state\": \"drain\"}, {\"name\": \"n4\", \"state\": \"down\"}]",
                      NULL);
    assert_int_equal(json_array_size(json_object_get(n, "placements")), 0);
    assert_true(json_array_size(json_object_get(n, "notes")) >= 2);
    json_t *d = wait_done(json_integer_value(json_object_get(n, "id")));
    assert_string_equal(str(d, "verdict"), "inconclusive");
    assert_non_null(strstr(str(d, "reason"), "n3 is drain in Slurm and takes no job"));
    json_decref(n);
    json_decref(d);
}

/* A placement that could not be submitted, and one whose job never registers before the deadline. */
static void test_not_run_and_deadline(void **state)
{
    (void)state;
    three("np-late");
    json_t *n = start("np-late", NODES4, "\"timeout_s\": 5, \"placements\": 2");
    char path[100];
    long long id = json_integer_value(json_object_get(n, "id"));
    snprintf(path, sizeof(path), "/api/v1/narrows/%lld/jobs", id);
    json_decref(call("POST", path,
                     "{\"placements\": [{\"index\": 0, \"error\": \"sbatch: error: Invalid node name specified\"}, "
                     "{\"index\": 1, \"job_id\": \"999999\"}]}",
                     ADMIN, 200));
    json_decref(call("POST", path, "{\"placements\": [{\"index\": 7, \"job_id\": \"1\"}]}", ADMIN, 400));
    json_t *d = wait_done(id);
    assert_string_equal(str(d, "verdict"), "inconclusive");
    json_t *pl = json_object_get(d, "placements");
    assert_string_equal(str(json_array_get(pl, 0), "outcome"), "not-run");
    assert_non_null(strstr(str(json_array_get(pl, 0), "detail"), "Invalid node name"));
    assert_string_equal(str(json_array_get(pl, 1), "outcome"), "timed-out");
    assert_non_null(strstr(str(json_array_get(pl, 1), "detail"), "job 999999 registered no run"));
    json_decref(call("POST", path, "{\"placements\": [{\"index\": 1, \"job_id\": \"1\"}]}", ADMIN, 409));
    json_decref(n);
    json_decref(d);
}

/* A run that says how it resumes and declares its checkpoints: its replays start from the one before the window. */
static void test_resume(void **state)
{
    (void)state;
    char ids[3][40], job[16], path[200];
    const char *nodes[] = {"n1", "n2", "n3"};
    for (int k = 0; k < 3; k++) {
        snprintf(job, sizeof(job), "%d", job_no++);
        run_on("np-resume", job, nodes[k], k == 2 ? 1 : -1, "train --resume {path} --steps {stop} # {step}", 0, ids[k]);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/checkpoints", ids[k]);
        json_decref(call("POST", path, "{\"step\": 1, \"path\": \"/ck/step-1\"}", NULL, 200));
        json_decref(call("POST", path, "{\"step\": 4, \"path\": \"/ck/step-4\"}", NULL, 200));
        json_decref(call("POST", path, "{\"step\": -1}", NULL, 400));
        json_decref(call("POST", path, "{\"step\": 2, \"rank\": 9}", NULL, 400));
    }
    json_t *c = call("GET", path, NULL, NULL, 200);
    assert_int_equal(json_array_size(json_object_get(c, "items")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(c, "items"), 0), "step")), 4);
    json_decref(c);
    snprintf(path, sizeof(path), "/api/v1/runs/%s", ids[0]);
    c = call("GET", path, NULL, NULL, 200);
    assert_string_equal(str(c, "resume"), "train --resume {path} --steps {stop} # {step}");
    json_decref(c);
    json_decref(it_wait_group(&srv, "np-resume", "diverged"));
    json_t *n = start("np-resume", NODES4, NULL);
    json_t *p0 = json_array_get(json_object_get(n, "placements"), 0);
    /* the template's words, filled in: "#" is a word like any other (shown quoted, as sh would need it) */
    assert_string_equal(str(p0, "command"), "train --resume /ck/step-1 --steps 4 '#' 1");
    assert_words(json_object_get(p0, "argv"), "train|--resume|/ck/step-1|--steps|4|#|1");
    assert_int_equal(json_integer_value(json_object_get(p0, "resume_step")), 1);
    assert_int_equal(json_integer_value(json_object_get(p0, "start_step")), 2);
    assert_non_null(strstr(str(p0, "why"), "from the checkpoint of step 1"));
    /* resumed replays compare on the steps they share with the runs */
    replay_all(n, on_n3);
    json_t *d = wait_done(json_integer_value(json_object_get(n, "id")));
    assert_string_equal(str(d, "verdict"), "persistent-hardware");
    /* no state blocks on either side: the replays say that what they loaded is not verified */
    assert_non_null(strstr(str(json_array_get(json_object_get(d, "placements"), 0), "detail"),
                           "the checkpoint it loaded is not verified: neither it nor the run it replays recorded"));
    json_decref(n);
    json_decref(d);
}

static const char *restores_other(int index)
{
    return index == 0 ? "00000000000000bb" : "00000000000000aa";
}

/* A run whose program records saved state blocks but declares no checkpoint (ls_state_begin without
 * ls_checkpoint): with a template that needs only {step}, its replays start from the newest checkpoint known from
 * either fact, here the block of step 1 after a declaration of step 0. */
static void test_resume_state_blocks(void **state)
{
    (void)state;
    char ids[3][40], job[16], path[200];
    const char *nodes[] = {"n1", "n2", "n3"};
    saved_block_at = 1;
    for (int k = 0; k < 3; k++) {
        snprintf(job, sizeof(job), "%d", job_no++);
        run_on("np-blocks", job, nodes[k], k == 2 ? 1 : -1, "train --resume-step {step} --steps {stop}", 0, ids[k]);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/checkpoints", ids[k]);
        json_decref(call("POST", path, "{\"step\": 0, \"path\": \"/ck/step-0\"}", NULL, 200));
    }
    saved_block_at = -1;
    json_decref(it_wait_group(&srv, "np-blocks", "diverged"));
    json_t *n = start("np-blocks", NODES4, NULL);
    json_t *p0 = json_array_get(json_object_get(n, "placements"), 0);
    if (strcmp(str(p0, "command"), "train --resume-step 1 --steps 4")) {
        json_t *t = call("GET", "/api/v1/twins/np-blocks", NULL, NULL, 200);
        char *txt = json_dumps(json_object_get(t, "first_divergence"), JSON_COMPACT);
        print_message("placement 0: %s\nfirst divergence: %.3000s\n", str(p0, "why"), txt);
        free(txt);
        json_decref(t);
    }
    assert_string_equal(str(p0, "command"), "train --resume-step 1 --steps 4");
    assert_int_equal(json_integer_value(json_object_get(p0, "resume_step")), 1);
    assert_non_null(strstr(str(p0, "why"), "from the checkpoint of step 1, known from its saved state block"));
    /* The replays restore step 1's state: the first loads another (0xbb, not the 0xaa its run saved) and does not
     * count; the others loaded what their runs saved. */
    restored_block_at = 1;
    restore_of = restores_other;
    replay_all(n, on_n3);
    restore_of = NULL;
    restored_block_at = -1;
    json_t *d = wait_done(json_integer_value(json_object_get(n, "id")));
    json_t *pl = json_object_get(d, "placements");
    assert_string_equal(str(json_array_get(pl, 0), "outcome"), "failed");
    assert_non_null(strstr(str(json_array_get(pl, 0), "detail"),
                           "resumed from state that is not what the run it replays saved at step 1: on rank 1, entry "
                           "params (occurrence 0) differs in content"));
    for (size_t k = 1; k < json_array_size(pl); k++) {
        assert_string_equal(str(json_array_get(pl, k), "outcome"), "ran");
        assert_non_null(strstr(str(json_array_get(pl, k), "detail"),
                               "its restored state at step 1 is what the run it replays saved there"));
    }
    json_decref(n);
    json_decref(d);
}

/* The words a job registered are the words its replays run, byte for byte, whatever they hold; they are shown quoted
 * as sh would need them. */
static void test_words(void **state)
{
    (void)state;
    char id[40], job[16], path[100];
    const char *nodes[] = {"n1", "n2", "n3"};
    run_extra = ", \"argv\": [\"train\", \"--tag\", \"a b; touch owned #\", \"$(touch owned)\", \"it's\", \"\"]";
    for (int k = 0; k < 3; k++) {
        snprintf(job, sizeof(job), "%d", job_no++);
        run_on("np-words", job, nodes[k], k == 2 ? 1 : -1, NULL, 0, id);
    }
    run_extra = "";
    snprintf(path, sizeof(path), "/api/v1/runs/%s", id);
    json_t *r = call("GET", path, NULL, NULL, 200);
    assert_words(json_object_get(r, "argv"), "train|--tag|a b; touch owned #|$(touch owned)|it's|");
    json_decref(r);
    json_decref(it_wait_group(&srv, "np-words", "diverged"));
    json_t *n = start("np-words", NODES4, "\"timeout_s\": 5");
    size_t i;
    json_t *p;
    assert_int_equal(json_array_size(json_object_get(n, "placements")), 4);
    json_array_foreach(json_object_get(n, "placements"), i, p)
    {
        assert_words(json_object_get(p, "argv"), "train|--tag|a b; touch owned #|$(touch owned)|it's|");
        assert_string_equal(str(p, "command"), "train --tag 'a b; touch owned #' '$(touch owned)' 'it'\\''s' ''");
        assert_null(strstr(str(p, "why"), "split at white space"));
    }
    json_decref(wait_done(json_integer_value(json_object_get(n, "id"))));
    json_decref(n);
}

/* A resume template is split into words first, then filled in inside each word: a path with spaces, quotes and ';'
 * stays one word. Paths a replay could not use are refused at the door. */
static void test_template_words(void **state)
{
    (void)state;
    char id[40], job[16], path[200];
    const char *nodes[] = {"n1", "n2", "n3"};
    for (int k = 0; k < 3; k++) {
        snprintf(job, sizeof(job), "%d", job_no++);
        run_on("np-tpl", job, nodes[k], k == 2 ? 1 : -1,
               "train --resume '{path}' --note \\\"{step} of {stop}\\\" --tag=\\\"a b\\\"", 0, id);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/checkpoints", id);
        json_decref(call("POST", path, "{\"step\": 1, \"path\": \"/ck/my ckpt/it's;$(touch owned) #\"}", NULL, 200));
    }
    /* a path that holds a control character or reads as an option: 400, and nothing stored */
    static const char *const bad[] = {"{\"step\": 2, \"path\": \"/ck/step-2\\ntouch /tmp/owned\"}",
                                      "{\"step\": 2, \"path\": \"--help\"}"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        json_t *e = call("POST", path, bad[k], NULL, 400);
        assert_non_null(strstr(str(e, "error"), "bad checkpoint"));
        json_decref(e);
    }
    json_t *c = call("GET", path, NULL, NULL, 200);
    assert_int_equal(json_array_size(json_object_get(c, "items")), 1);
    json_decref(c);
    json_decref(it_wait_group(&srv, "np-tpl", "diverged"));
    json_t *n = start("np-tpl", NODES4, "\"timeout_s\": 5");
    json_t *p0 = json_array_get(json_object_get(n, "placements"), 0);
    assert_words(json_object_get(p0, "argv"),
                 "train|--resume|/ck/my ckpt/it's;$(touch owned) #|--note|1 of 4|--tag=a b");
    assert_string_equal(str(p0, "command"),
                        "train --resume '/ck/my ckpt/it'\\''s;$(touch owned) #' --note '1 of 4' '--tag=a b'");
    json_decref(wait_done(json_integer_value(json_object_get(n, "id"))));
    json_decref(n);
}

/* Replays go where slurmstepd attested the runs ran, never where a job said it ran, and run as the runs' attested
 * users: a run reported on n2 but attested on n4 is placed on n4 (n2 is then a node outside the group); a run with no
 * attestation has unknown nodes; a run whose user is not attested is not replayed. */
static void test_attested(void **state)
{
    (void)state;
    char ids[3][40], job[16];
    const char *nodes[] = {"n1", "n2", "n3"}, *attested[] = {"", "n4", NULL};
    for (int k = 0; k < 3; k++) {
        snprintf(job, sizeof(job), "%d", job_no++);
        attest_on = attested[k];
        run_on("np-attested", job, nodes[k], k == 2 ? 1 : -1, NULL, 0, ids[k]);
    }
    attest_on = NULL;
    json_decref(it_wait_group(&srv, "np-attested", "diverged"));
    json_t *n = start("np-attested", NODES4, "\"timeout_s\": 5");
    json_t *pl = json_object_get(n, "placements");
    static const char *const want[] = {"odd-again@n3", "majority-on-odd-nodes@n3", "odd-on-majority-nodes@n4",
                                       "odd-on-other-nodes@n1", "odd-on-other-nodes@n2"};
    assert_int_equal(json_array_size(pl), 5);
    for (size_t k = 0; k < 5; k++) {
        char got[100];
        snprintf(got, sizeof(got), "%s@%s", str(json_array_get(pl, k), "role"), str(json_array_get(pl, k), "nodes"));
        assert_string_equal(got, want[k]);
        assert_string_equal(str(json_array_get(pl, k), "user"), "alice");
    }
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(n, "runs"), i, r)
    {
        if (!strcmp(str(r, "run_id"), ids[1])) {
            assert_string_equal(str(r, "nodes"), "n4");
            assert_string_equal(str(r, "reported_nodes"), "n2");
        }
        if (!strcmp(str(r, "run_id"), ids[0]))
            assert_string_equal(str(r, "nodes"), "");
    }
    int noted = 0;
    json_array_foreach(json_object_get(n, "notes"), i, r) noted |=
        strstr(json_string_value(r), "slurmstepd attested no node list") != NULL;
    assert_true(noted);
    json_decref(wait_done(json_integer_value(json_object_get(n, "id"))));
    json_decref(n);

    /* the odd run's user no longer attested (a row from before attestation): its job is not replayed, the other's is */
    PGconn *db = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(db), CONNECTION_OK);
    const char *pv[] = {ids[2]};
    PGresult *u =
        PQexecParams(db, "UPDATE runs SET attested_user = NULL WHERE run_id = $1::uuid", 1, NULL, pv, NULL, NULL, 0);
    assert_int_equal(PQresultStatus(u), PGRES_COMMAND_OK);
    PQclear(u);
    PQfinish(db);
    n = start("np-attested", NODES4, "\"timeout_s\": 5");
    json_array_foreach(json_object_get(n, "placements"), i, r)
    {
        int from_odd = strcmp(str(r, "role"), "majority-on-odd-nodes") != 0;
        assert_string_equal(str(r, "outcome"), from_odd ? "not-run" : "pending");
        if (from_odd) {
            assert_true(json_is_null(json_object_get(r, "user")));
            assert_non_null(strstr(str(r, "detail"), "never attested the user"));
        }
    }
    json_decref(wait_done(json_integer_value(json_object_get(n, "id"))));
    json_decref(n);
}

/* A registration's argv of more words than lockstepd keeps is refused (the other refusals are cases in
 * tests/integration/cases/: run-argv-*, run-resume-*, checkpoint-path-*); words with any text are taken as they are. */
static void test_argv_limits(void **state)
{
    (void)state;
    char body[20000];
    int l = snprintf(body, sizeof(body), "{\"job_id\": \"%d\", \"step_id\": \"0\", \"argv\": [\"train\"", job_no++);
    for (int k = 0; k < 1024; k++)
        l += snprintf(body + l, sizeof(body) - (size_t)l, ", \"w\"");
    snprintf(body + l, sizeof(body) - (size_t)l, "]}");
    json_t *e = call("POST", "/api/v1/runs", body, NULL, 400);
    assert_non_null(strstr(str(e, "detail"), "1 to 1024 strings"));
    json_decref(e);
    /* a word may hold a newline, quotes, $(): it is passed as it is, never parsed */
    snprintf(body, sizeof(body),
             "{\"job_id\": \"%d\", \"step_id\": \"0\", \"argv\": [\"python3\", \"-c\", \"import os\\nprint(1)\", "
             "\"$(touch owned)\"]}",
             job_no++);
    json_t *o = call("POST", "/api/v1/runs", body, NULL, 201);
    char path[100];
    snprintf(path, sizeof(path), "/api/v1/runs/%s", str(o, "run_id"));
    json_t *r = call("GET", path, NULL, NULL, 200);
    assert_string_equal(json_string_value(json_array_get(json_object_get(r, "argv"), 2)), "import os\nprint(1)");
    json_decref(r);
    json_decref(o);
}

static void test_refusals(void **state)
{
    (void)state;
    char body[600];
    snprintf(body, sizeof(body), "{\"nodes\": %s}", NODES4);
    json_decref(call("POST", "/api/v1/twins/np-persist/narrows", body, NULL, 401));
    json_decref(call("POST", "/api/v1/twins/np-persist/narrows", body, "wrong", 403));
    json_decref(call("POST", "/api/v1/twins/no-such-group/narrows", body, ADMIN, 404));
    json_decref(call("POST", "/api/v1/twins/np-persist/narrows", "{\"level\": \"modules\"}", ADMIN, 400));
    json_decref(call("POST", "/api/v1/twins/np-persist/narrows",
                     "{\"nodes\": [{\"name\": \"n 1\", \"state\": \"idle\"}]}", ADMIN, 400));
    snprintf(body, sizeof(body), "{\"nodes\": %s, \"level\": \"metrics\"}", NODES4);
    json_decref(call("POST", "/api/v1/twins/np-persist/narrows", body, ADMIN, 400));
    /* a group that matches has nothing to narrow */
    char id[40], job[16];
    for (int k = 0; k < 2; k++) {
        snprintf(job, sizeof(job), "%d", job_no++);
        run_on("np-match", job, k ? "n2" : "n1", -1, NULL, 0, id);
    }
    json_decref(it_wait_group(&srv, "np-match", "match"));
    snprintf(body, sizeof(body), "{\"nodes\": %s}", NODES4);
    json_t *e = call("POST", "/api/v1/twins/np-match/narrows", body, ADMIN, 409);
    assert_non_null(strstr(str(e, "detail"), "nothing to narrow"));
    json_decref(e);
    json_decref(call("GET", "/api/v1/narrows/424242", NULL, NULL, 404));
    json_decref(call("GET", "/api/v1/narrows/abc", NULL, NULL, 404));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_persistent),
        cmocka_unit_test(test_transient),
        cmocka_unit_test(test_replays_carry_the_rules),
        cmocka_unit_test(test_software_pair),
        cmocka_unit_test(test_no_nodes),
        cmocka_unit_test(test_not_run_and_deadline),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_resume_state_blocks),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_words),
        cmocka_unit_test(test_template_words),
        cmocka_unit_test(test_attested),
        cmocka_unit_test(test_argv_limits),
    };
    return cmocka_run_group_tests_name("narrow", tests, setup, teardown);
}
