/* test_suspects.c - lockstepd integration: evidence, suspects, node history, admin actions and alerts to real local receivers (webhook, Slack, Alertmanager, mail). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;
static char dir[256], hooklog[300], maillog[300], conf[300], admin_file[300], scontrol_log[300];
static int rport;
static pid_t receiver = -1;
static const char *ADMIN = "admin-secret-token";
static int job_no = 5000;

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(fd, (struct sockaddr *)&a, &l) < 0)
        return -1;
    close(fd);
    return ntohs(a.sin_port);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ls-susp.XXXXXX");
    if (!mkdtemp(dir) || h_pg_start(&pg) < 0 || (rport = free_port()) < 0)
        return -1;
    snprintf(hooklog, sizeof(hooklog), "%s/hooks.jsonl", dir);
    snprintf(maillog, sizeof(maillog), "%s/mail.txt", dir);
    snprintf(conf, sizeof(conf), "%s/lockstepd.conf", dir);
    snprintf(admin_file, sizeof(admin_file), "%s/admin", dir);
    char script[600], text[2048];
    snprintf(script, sizeof(script), "%s/capture-mail.sh", dir);
    /* a sendmail-compatible capture program: arguments and the message, appended */
    snprintf(text, sizeof(text), "#!/bin/sh\n{ echo \"ARGS: $*\"; cat; echo '=== END'; } >> %s\n", maillog);
    write_file(script, text, 0755);
    /* an scontrol that writes down what it was asked (slurm_action = drain) */
    char scontrol[300];
    snprintf(scontrol_log, sizeof(scontrol_log), "%s/scontrol.log", dir);
    snprintf(scontrol, sizeof(scontrol), "%s/scontrol.sh", dir);
    snprintf(text, sizeof(text), "#!/bin/sh\necho \"$*\" >> %s\n", scontrol_log);
    write_file(scontrol, text, 0755);
    write_file(admin_file, ADMIN, 0600);
    snprintf(text, sizeof(text),
             "alert_webhook_url = http://127.0.0.1:%d/hook\n"
             "alert_slack_url = http://127.0.0.1:%d/slack\n"
             "alert_alertmanager_url = http://127.0.0.1:%d/am/\n"
             "mail_program = %s\nmail_domain = example.org\n"
             "public_url = https://lockstep.example/\n"
             "alert_retry_ms = 100\nalert_retry_max_s = 1\nsuspects_interval_ms = 200\nalert_give_up_s = 10\n"
             "slurm_action = drain\nscontrol = %s\n",
             rport, rport, rport, script, scontrol);
    write_file(conf, text, 0644);
    const char *args[] = {"--db", pg.conninfo, "--config", conf, "--admin-token", admin_file, NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    if (receiver > 0) {
        kill(receiver, SIGTERM);
        waitpid(receiver, NULL, 0);
    }
    int st = h_srv_kill(&srv, SIGTERM);
    const char *keep = getenv("IT_KEEP_LOG"); /* a copy of lockstepd's log, for debugging */
    char cp[700];
    snprintf(cp, sizeof(cp), "cp %s %s", srv.log, keep ? keep : "");
    if (keep && system(cp) != 0)
        fprintf(stderr, "cannot copy the log to %s\n", keep);
    h_srv_cleanup(&srv);
    h_pg_stop(&pg);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return -1;
    return st == 0 ? 0 : -1;
}

static void start_receiver(void)
{
    char script[600];
    const char *src = getenv("LOCKSTEP_SRC");
    snprintf(script, sizeof(script), "%s/tests/integration/receiver.py", src ? src : ".");
    char port[16];
    snprintf(port, sizeof(port), "%d", rport);
    receiver = fork();
    if (receiver == 0) {
        execlp("python3", "python3", script, port, hooklog, (char *)NULL);
        _exit(127);
    }
    assert_true(receiver > 0);
}

/* manifest - post rank `rank`'s manifest: node, one GPU, NCCL_ALGO. */
static void manifest(const char *run, int rank, const char *node, const char *algo)
{
    char body[512], path[128];
    snprintf(body, sizeof(body),
             "{\"rank\": %d, \"host\": \"localhost\", \"slurm_node\": \"%s\", \"gpus\": [{\"index\": 0, \"uuid\": "
             "\"GPU-%s-0\", \"name\": \"TestGPU\", \"sm_count\": 132}], \"env\": {\"NCCL_ALGO\": \"%s\", "
             "\"LOCKSTEP_RUN_ID\": \"%s\"}}",
             rank, node, node, algo, run);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", run);
    assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
}

/* attest_run - what slurmstepd would attest for the run of `job` (registered without a step id): rank r ran on
 * nodes[r]. Posted with the admin token, which may attest too (this lockstepd has no site secret). */
static void attest_run(const char *job, int nranks, const char *const *nodes)
{
    for (int r = 0; r < nranks; r++) {
        int first = 1;
        for (int q = 0; q < r; q++)
            first &= strcmp(nodes[q], nodes[r]) != 0;
        if (!first)
            continue; /* one attestation per node, naming all its ranks */
        char body[512], list[128] = "";
        size_t n = 0;
        for (int q = r; q < nranks; q++)
            if (!strcmp(nodes[q], nodes[r]))
                n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", n ? "," : "", q);
        snprintf(body, sizeof(body),
                 "{\"job_id\": \"%s\", \"node\": \"%s\", \"ranks\": [%s], \"user\": \"alice\"}", job, nodes[r], list);
        assert_int_equal(it_call(&srv, "POST", "/api/v1/attest", body, ADMIN, NULL), 200);
    }
}

/* run_rec - a run of `group` on `nranks` ranks with rank r on nodes[r] (attested); record
 * `rec` (0: loss, 1..3: layerN.out) of step 3 flipped on rank `flip_rank`
 * (-1: none); 6 steps; ended. Each test flips its own record so that the
 * spread rule compares only its own groups. */
static void run_rec_as(const char *group, int nranks, const char *const *nodes, int flip_rank, int rec,
                       const char *algo, int attested)
{
    char id[40], job[16];
    snprintf(job, sizeof(job), "%d", job_no++);
    assert_int_equal(it_register(&srv, job, group, nranks, 0, NULL, id), 0);
    if (attested)
        attest_run(job, nranks, nodes);
    for (int r = 0; r < nranks; r++)
        manifest(id, r, nodes[r], algo ? algo : "Ring");
    for (int r = 0; r < nranks; r++) {
        uint64_t seq = 0;
        assert_int_equal(it_post_steps(&srv, id, r, 0, 0, 6, 4, r == flip_rank ? 3 : -1, rec, -1, -1, &seq, NULL), 200);
        assert_int_equal(it_end(&srv, id, r, NULL), 200);
    }
}

static void run_rec(const char *group, int nranks, const char *const *nodes, int flip_rank, int rec, const char *algo)
{
    run_rec_as(group, nranks, nodes, flip_rank, rec, algo, 1);
}

static void run(const char *group, int nranks, const char *const *nodes, int flip_rank, const char *algo)
{
    run_rec(group, nranks, nodes, flip_rank, 0, algo);
}

/* get - GET path; the reply (caller decrefs). */
static json_t *get(const char *path)
{
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_non_null(o);
    return o;
}

/* alert_of - the group's alerts in GET /alerts: how many, and the first (borrowed from *all). */
static int alerts_of(const char *group, const char *node, json_t **all, json_t **first)
{
    *all = get("/api/v1/alerts?limit=1000");
    int n = 0;
    size_t i;
    json_t *a;
    *first = NULL;
    json_array_foreach(json_object_get(*all, "items"), i, a)
    {
        const char *g = json_string_value(json_object_get(a, "group"));
        const char *nd = json_string_value(json_object_get(a, "node"));
        if ((group && g && !strcmp(g, group)) || (node && nd && !strcmp(nd, node))) {
            n++;
            *first = a;
        }
    }
    return n;
}

/* wait_alert - poll until the group's (or node's) alert exists and `pred` holds. */
static json_t *wait_alert(const char *group, const char *node, int (*pred)(json_t *))
{
    for (int i = 0; i < 300; i++) {
        json_t *all, *a;
        if (alerts_of(group, node, &all, &a) && (!pred || pred(a))) {
            json_t *c = json_deep_copy(a);
            json_decref(all);
            return c;
        }
        json_decref(all);
        usleep(50000);
    }
    fail_msg("no alert for %s", group ? group : node);
    return NULL;
}

/* http_sinks_are - mail (a local program) delivered, and the three HTTP sinks (their receiver down) in `state`
 * after at least two attempts, each with its last error. */
static int http_sinks_are(json_t *a, const char *state)
{
    json_t *d = json_object_get(a, "deliveries");
    if (json_array_size(d) != 4)
        return 0;
    size_t i;
    json_t *x;
    json_array_foreach(d, i, x)
    {
        const char *sink = json_string_value(json_object_get(x, "sink"));
        const char *st = json_string_value(json_object_get(x, "state"));
        if (!strcmp(sink, "mail") ? strcmp(st, "delivered")
                                  : strcmp(st, state) || json_integer_value(json_object_get(x, "attempts")) < 2 ||
                                        !json_is_string(json_object_get(x, "last_error")))
            return 0;
    }
    return 1;
}

/* retried_and_pending - the HTTP sinks retried and still pending. */
static int retried_and_pending(json_t *a)
{
    return http_sinks_are(a, "pending");
}

static int all_delivered(json_t *a)
{
    json_t *d = json_object_get(a, "deliveries");
    size_t i;
    json_t *x;
    json_array_foreach(d, i, x) if (strcmp(json_string_value(json_object_get(x, "state")), "delivered")) return 0;
    return json_array_size(d) > 0;
}

/* hook_bodies - the receiver's requests on `path` whose body mentions `needle`. */
static int hook_count(const char *path, const char *needle, json_t **last)
{
    FILE *f = fopen(hooklog, "r");
    int n = 0;
    char line[65536];
    if (last)
        *last = NULL;
    while (f && fgets(line, sizeof(line), f)) {
        json_t *o = json_loads(line, 0, NULL);
        const char *p = json_string_value(json_object_get(o, "path"));
        const char *b = json_string_value(json_object_get(o, "body"));
        if (p && b && !strcmp(p, path) && strstr(b, needle)) {
            n++;
            if (last) {
                json_decref(*last);
                *last = json_loads(b, 0, NULL);
            }
        }
        json_decref(o);
    }
    if (f)
        fclose(f);
    return n;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void test_receiver_down_then_up(void **state)
{
    (void)state;
    const char *na[] = {"a1", "a2"}, *nb[] = {"a3", "a4"};
    run("a-down", 2, na, 0, NULL);
    run("a-down", 2, nb, -1, NULL);
    /* the receiver is down: every sink is retried with backoff and stays pending */
    json_t *a = wait_alert("a-down", NULL, retried_and_pending);
    const char *text = str(a, "text");
    assert_non_null(strstr(text, "step 3, rank 0, record loss"));
    assert_non_null(strstr(text, "value 2.5 "));
    assert_non_null(strstr(text, "value 2.5000000000000004"));
    assert_non_null(strstr(text, "https://lockstep.example/#/twins/a-down"));
    assert_string_equal(str(a, "url"), "https://lockstep.example/#/twins/a-down");
    assert_string_equal(str(a, "kind"), "divergence");
    assert_string_equal(str(a, "classification"), "hardware");
    json_decref(a);
    assert_int_equal(hook_count("/hook", "a-down", NULL), 0);

    start_receiver();
    a = wait_alert("a-down", NULL, all_delivered);
    json_decref(a);
    json_t *b;
    assert_int_equal(hook_count("/hook", "a-down", &b), 1);
    assert_string_equal(str(b, "group"), "a-down");
    assert_string_equal(str(b, "kind"), "divergence");
    assert_non_null(strstr(str(b, "text"), "record loss"));
    json_t *runs = json_object_get(json_object_get(b, "details"), "runs");
    assert_int_equal(json_array_size(runs), 2);
    assert_string_not_equal(str(json_array_get(runs, 0), "fp"), str(json_array_get(runs, 1), "fp"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "details"), "step")), 3);
    json_decref(b);

    assert_int_equal(hook_count("/slack", "a-down", &b), 1);
    assert_non_null(strstr(str(b, "text"), "a-down"));
    json_t *blocks = json_object_get(b, "blocks");
    assert_int_equal(json_array_size(blocks), 3);
    assert_string_equal(str(json_array_get(blocks, 0), "type"), "section");
    json_t *ctx = json_array_get(json_object_get(json_array_get(blocks, 2), "elements"), 0);
    assert_string_equal(str(ctx, "text"), "<https://lockstep.example/#/twins/a-down|Open in the Lockstep dashboard>");
    json_decref(b);

    assert_int_equal(hook_count("/am/api/v2/alerts", "a-down", &b), 1);
    assert_true(json_is_array(b));
    json_t *am = json_array_get(b, 0);
    assert_string_equal(str(json_object_get(am, "labels"), "alertname"), "LockstepTwinDivergence");
    assert_string_equal(str(json_object_get(am, "labels"), "twin_group"), "a-down");
    assert_string_equal(str(am, "generatorURL"), "https://lockstep.example/#/twins/a-down");
    assert_non_null(strstr(str(json_object_get(am, "annotations"), "description"), "record loss"));
    assert_int_equal(strlen(str(am, "startsAt")), 24);
    json_decref(b);

    FILE *f = fopen(maillog, "r");
    assert_non_null(f);
    char mail[16384];
    size_t n = fread(mail, 1, sizeof(mail) - 1, f);
    fclose(f);
    mail[n] = 0;
    assert_non_null(strstr(mail, "ARGS: -t -i"));
    assert_non_null(strstr(mail, "To: alice@example.org\n"));
    assert_non_null(strstr(mail, "Subject: [lockstep] twin group a-down diverged at step 3 (rank 0, loss)\n"));
    assert_non_null(strstr(mail, "https://lockstep.example/#/twins/a-down"));
}

static void test_one_alert_per_group(void **state)
{
    (void)state;
    const char *na[] = {"b1", "b2"}, *nb[] = {"b3", "b4"}, *nc[] = {"b5", "b6"};
    run("b-once", 2, na, 0, NULL);
    run("b-once", 2, nb, 1, NULL); /* both ranks diverge */
    json_t *a = wait_alert("b-once", NULL, all_delivered);
    json_decref(a);
    run("b-once", 2, nc, -1, NULL); /* a third run joins: re-evaluated, no second alert */
    usleep(1500000);
    json_t *all, *first;
    assert_int_equal(alerts_of("b-once", NULL, &all, &first), 1);
    json_decref(all);
    assert_int_equal(hook_count("/hook", "\"group\":\"b-once\"", NULL), 1);
    assert_int_equal(hook_count("/slack", "b-once", NULL), 1);
    assert_int_equal(hook_count("/am/api/v2/alerts", "b-once", NULL), 1);
}

static int has_state(const char *node, const char *state)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
    json_t *o = NULL;
    long code = it_call(&srv, "GET", path, NULL, NULL, &o);
    int ok = code == 200 && !strcmp(str(json_object_get(o, "node"), "state"), state);
    json_decref(o);
    return ok;
}

/* node_runs - the exposures ("runs") of a node as last rescored, -1 when unknown. */
static long long node_runs(const char *node)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
    json_t *o = NULL;
    long long n = it_call(&srv, "GET", path, NULL, NULL, &o) == 200
                      ? json_integer_value(json_object_get(json_object_get(o, "node"), "runs"))
                      : -1;
    json_decref(o);
    return n;
}

/* scontrol_count - how many scontrol calls mention `needle`. */
static int scontrol_count(const char *needle)
{
    FILE *f = fopen(scontrol_log, "r");
    int n = 0;
    char line[1024];
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

/* history_count - the node's history events of `kind` (optionally in `group`). */
static int history_count(const char *node, const char *kind, const char *group, double *weight)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/nodes/%s/history?limit=1000", node);
    json_t *o = NULL;
    long code = it_call(&srv, "GET", path, NULL, NULL, &o);
    if (code == 404) { /* not seen yet */
        json_decref(o);
        return 0;
    }
    assert_int_equal(code, 200);
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(o, "items"), i,
                       e) if (!strcmp(str(e, "kind"), kind) && (!group || !strcmp(str(e, "group"), group)))
    {
        if (weight && n == 0) /* the newest */
            *weight = json_number_value(json_object_get(e, "weight"));
        n++;
    }
    json_decref(o);
    return n;
}

static void test_fleet_pairs_name_n3(void **state)
{
    (void)state;
    /* 8 pairs: run A has rank 0 on n3 (the faulty node flips a bit there), run B runs on healthy nodes */
    static const char *pairs[8][4] = {{"n3", "n1", "n2", "n4"}, {"n3", "n2", "n4", "n1"}, {"n3", "n4", "n1", "n2"},
                                      {"n3", "n1", "n4", "n2"}, {"n3", "n2", "n1", "n4"}, {"n3", "n4", "n2", "n1"},
                                      {"n3", "n1", "n2", "n4"}, {"n3", "n2", "n4", "n1"}};
    char group[32];
    for (int p = 0; p < 8; p++) {
        snprintf(group, sizeof(group), "fleet-%d", p);
        run_rec(group, 2, pairs[p], 0, 1, NULL);
        run_rec(group, 2, pairs[p] + 2, -1, 1, NULL);
    }
    for (int i = 0; i < 300 && !(has_state("n3", "suspect") && history_count("n3", "involvement", NULL, NULL) == 8 &&
                                 history_count("n4", "involvement", "fleet-7", NULL) == 1 && node_runs("n3") == 8);
         i++)
        usleep(50000);
    json_t *o = get("/api/v1/nodes");
    json_t *nodes = json_object_get(o, "items");
    size_t i;
    json_t *n;
    int seen = 0;
    json_array_foreach(nodes, i, n)
    {
        const char *name = str(n, "name");
        if (strlen(name) != 2 || name[0] != 'n')
            continue;
        seen++;
        if (!strcmp(name, "n3")) {
            assert_string_equal(str(n, "state"), "suspect");
            assert_true(json_number_value(json_object_get(n, "score")) >= 0.95);
            assert_true(json_number_value(json_object_get(n, "involvements")) > 6.0);
            assert_int_equal(json_integer_value(json_object_get(n, "runs")), 8);
            assert_int_equal(json_array_size(json_object_get(n, "gpus")), 1);
            assert_string_equal(str(json_array_get(json_object_get(n, "gpus"), 0), "uuid"), "GPU-n3-0");
        } else {
            assert_string_equal(str(n, "state"), "ok");
            assert_true(json_number_value(json_object_get(n, "score")) < 0.5);
        }
    }
    assert_int_equal(seen, 4);
    assert_string_equal(str(json_array_get(nodes, 0), "name"), "n3"); /* sorted by score */
    json_decref(o);
    assert_int_equal(history_count("n3", "involvement", NULL, NULL), 8);
    assert_int_equal(history_count("n3", "state", NULL, NULL), 2); /* the node and its GPU */
    assert_true(history_count("n3", "score", NULL, NULL) >= 1);
    /* one suspect alert for n3, delivered, and none for the healthy nodes */
    json_t *a = wait_alert(NULL, "n3", all_delivered);
    assert_string_equal(str(a, "kind"), "suspect");
    assert_string_equal(str(a, "url"), "https://lockstep.example/#/nodes/n3");
    json_decref(a);
    json_t *all, *first;
    assert_int_equal(alerts_of(NULL, "n1", &all, &first), 0);
    json_decref(all);
    assert_int_equal(hook_count("/hook", "\"kind\":\"suspect\"", NULL), 1);
    assert_int_equal(hook_count("/am/api/v2/alerts", "LockstepHardwareSuspect", NULL), 1);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/nodes/nope", NULL, NULL, NULL), 404);
    /* slurm_action = drain: n3 was drained, and no other node */
    assert_int_equal(scontrol_count("nodename=n3 state=drain"), 1);
    assert_int_equal(scontrol_count("state=drain"), 1);
}

/* Three fabricated three-run groups whose odd run reports prod-gpu-17, none attested (finding 2: one job's
 * token made prod-gpu-17 a suspect, score 0.993, and lockstepd drained it): no evidence, no suspect, no drain. */
static void test_unattested_blames_nobody(void **state)
{
    (void)state;
    const char *good[] = {"q1", "q2"}, *good2[] = {"q3", "q4"}, *bad[] = {"prod-gpu-17", "q5"};
    char group[32];
    for (int i = 0; i < 3; i++) {
        snprintf(group, sizeof(group), "fabricated-%d", i);
        run_rec_as(group, 2, good, -1, 2, NULL, 0);
        run_rec_as(group, 2, good2, -1, 2, NULL, 0);
        run_rec_as(group, 2, bad, 0, 2, NULL, 0);
        json_t *a = wait_alert(group, NULL, NULL);
        assert_string_equal(str(a, "classification"), "software");
        assert_non_null(strstr(str(a, "text"), "no attested hardware"));
        assert_non_null(strstr(str(a, "text"), "prod-gpu-17, reported, not attested"));
        json_decref(a);
    }
    usleep(1000000); /* a rescore pass */
    assert_int_equal(history_count("prod-gpu-17", "involvement", NULL, NULL), 0);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/nodes/prod-gpu-17", NULL, NULL, NULL), 404);
    assert_int_equal(scontrol_count("prod-gpu-17"), 0);
}

/* An attested run whose manifest names another host than slurmstepd attested: the rank's hardware counts
 * for nothing (neither the attested node nor the reported one is blamed for it). */
static void test_reported_host_disagrees(void **state)
{
    (void)state;
    /* the odd run comes last, so the group is first evaluated with all three (as test_three_runs_minority) */
    const char *twin[] = {"k3", "k4"}, *third[] = {"k5", "k6"}, *ran[] = {"k1", "k2"}, *said[] = {"prod-gpu-18", "k2"};
    for (int i = 0; i < 3; i++) {
        char id[40], job[16];
        snprintf(job, sizeof(job), "%d", job_no++);
        assert_int_equal(it_register(&srv, job, "disagree", 2, 0, NULL, id), 0);
        int odd = i == 2;
        const char *const *nodes = odd ? ran : i == 0 ? twin : third;
        attest_run(job, 2, nodes);
        for (int r = 0; r < 2; r++)
            manifest(id, r, odd ? said[r] : nodes[r], "Ring");
        for (int r = 0; r < 2; r++) {
            uint64_t seq = 0;
            assert_int_equal(it_post_steps(&srv, id, r, 0, 0, 6, 4, odd && r == 0 ? 3 : -1, 3, -1, -1, &seq, NULL), 200);
            assert_int_equal(it_end(&srv, id, r, NULL), 200);
        }
    }
    json_t *a = wait_alert("disagree", NULL, NULL);
    assert_string_equal(str(a, "classification"), "software");
    assert_non_null(strstr(str(a, "text"), "no attested hardware"));
    json_decref(a);
    assert_int_equal(history_count("prod-gpu-18", "involvement", NULL, NULL), 0);
    assert_int_equal(history_count("k1", "involvement", NULL, NULL), 0);
    assert_int_equal(history_count("k3", "involvement", NULL, NULL), 0);
}

static void test_software_same_hardware(void **state)
{
    (void)state;
    const char *na[] = {"s1", "s2"}, *nb[] = {"s1", "s3"};
    run("sw-same", 2, na, 0, NULL);
    run("sw-same", 2, nb, -1, NULL);
    json_t *a = wait_alert("sw-same", NULL, NULL);
    assert_string_equal(str(a, "classification"), "software");
    assert_non_null(strstr(str(a, "text"), "same hardware (s1"));
    json_decref(a);
    assert_int_equal(history_count("s1", "involvement", NULL, NULL), 0);
    assert_int_equal(history_count("s2", "involvement", NULL, NULL), 0);
}

static void test_software_manifest(void **state)
{
    (void)state;
    const char *na[] = {"m1", "m2"}, *nb[] = {"m3", "m4"};
    run("sw-env", 2, na, 0, "Ring");
    run("sw-env", 2, nb, -1, "Tree");
    json_t *a = wait_alert("sw-env", NULL, NULL);
    assert_string_equal(str(a, "classification"), "software");
    assert_non_null(strstr(str(a, "text"), "env.NCCL_ALGO: Ring vs Tree"));
    json_decref(a);
    assert_int_equal(history_count("m1", "involvement", NULL, NULL), 0);
    assert_int_equal(history_count("m3", "involvement", NULL, NULL), 0);
}

/* json_run - a run of `group` on nodes[0..1] whose two ranks record "allreduce.out" with input
 * fingerprints (`in_salt` changes them) for steps 0..5; `out_salt` != 0 changes the output at step 3. */
static void json_run(const char *group, const char *const *nodes, int in_salt, int out_salt)
{
    char id[40], job[16], path[128], body[4096];
    snprintf(job, sizeof(job), "%d", job_no++);
    assert_int_equal(it_register(&srv, job, group, 2, 0, NULL, id), 0);
    attest_run(job, 2, nodes);
    for (int r = 0; r < 2; r++) {
        manifest(id, r, nodes[r], "Ring");
        size_t n = (size_t)snprintf(body, sizeof(body), "{\"rank\": %d, \"batch_seq\": 0, \"records\": [", r);
        for (int s = 0; s < 6; s++)
            n += (size_t)snprintf(body + n, sizeof(body) - n,
                                  "%s{\"seq\": %d, \"step\": %d, \"name\": \"allreduce.out\", \"level\": "
                                  "\"collective\", \"fp\": \"%016x\", \"inputs\": [\"%016x\"]}",
                                  s ? ", " : "", s, s, 0x1000 + s + (s == 3 ? out_salt : 0), 0x2000 + 16 * s + r + in_salt);
        snprintf(body + n, sizeof(body) - n, "]}");
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records", id);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
        assert_int_equal(it_end(&srv, id, r, NULL), 200);
    }
}

static void test_software_inputs_matched(void **state)
{
    (void)state;
    /* a collective whose output differs on every rank while every input matched: not the hardware */
    const char *na[] = {"i1", "i2"}, *nb[] = {"i3", "i4"};
    json_run("sw-inputs", na, 0, 0);
    json_run("sw-inputs", nb, 0, 7);
    json_t *a = wait_alert("sw-inputs", NULL, NULL);
    assert_string_equal(str(a, "classification"), "software");
    assert_non_null(strstr(str(a, "text"), "differs while its inputs matched"));
    json_decref(a);
    assert_int_equal(history_count("i1", "involvement", NULL, NULL), 0);
    assert_int_equal(history_count("i3", "involvement", NULL, NULL), 0);
}

static void test_three_runs_minority(void **state)
{
    (void)state;
    const char *na[] = {"t1", "t2"}, *nb[] = {"t2", "t3"}, *nc[] = {"t4", "t9"};
    run_rec("three", 2, na, -1, 3, NULL);
    run_rec("three", 2, nb, -1, 3, NULL);
    run_rec("three", 2, nc, 1, 3, NULL); /* rank 1 of the third run, on t9, flips */
    json_t *a = wait_alert("three", NULL, NULL);
    json_decref(a);
    double w = 0;
    for (int i = 0; i < 200 && history_count("t9", "involvement", "three", &w) == 0; i++)
        usleep(50000);
    assert_int_equal(history_count("t9", "involvement", "three", &w), 1);
    assert_true(w == 1.0); /* strong */
    assert_int_equal(history_count("t3", "involvement", NULL, NULL), 0);
    assert_int_equal(history_count("t2", "involvement", NULL, NULL), 0);
    assert_int_equal(history_count("t4", "involvement", NULL, NULL), 0);
}

static void test_pair_then_third_run(void **state)
{
    (void)state;
    /* two runs: both weakly blamed; a third run shows which one was odd and the other is withdrawn */
    const char *na[] = {"w1", "w2"}, *nb[] = {"w3", "w4"}, *nc[] = {"w5", "w6"};
    run_rec("late-third", 2, na, 0, 3, NULL);
    run_rec("late-third", 2, nb, -1, 3, NULL);
    double w = 0;
    for (int i = 0; i < 200 && history_count("w3", "involvement", "late-third", &w) == 0; i++)
        usleep(50000);
    assert_int_equal(history_count("w1", "involvement", "late-third", &w), 1);
    assert_true(w == 0.5);
    run_rec("late-third", 2, nc, -1, 3, NULL);
    for (int i = 0; i < 200 && history_count("w3", "withdrawn", "late-third", NULL) == 0; i++)
        usleep(50000);
    assert_int_equal(history_count("w3", "withdrawn", "late-third", NULL), 1);
    assert_int_equal(history_count("w1", "involvement", "late-third", &w), 2);
    assert_true(w == 1.0);
    assert_int_equal(history_count("w1", "withdrawn", "late-third", NULL), 0);
}

static void test_spread_is_software(void **state)
{
    (void)state;
    /* the same record diverges in pairs on unrelated nodes: no node explains it */
    static const char *nodes[4][4] = {
        {"u1", "u2", "u3", "u4"}, {"u5", "u6", "u7", "u8"}, {"u9", "u10", "u11", "u12"}, {"u13", "u14", "u15", "u16"}};
    char group[32];
    for (int p = 0; p < 4; p++) {
        snprintf(group, sizeof(group), "spread-%d", p);
        run_rec(group, 2, nodes[p], 1, 2, NULL);
        run_rec(group, 2, nodes[p] + 2, -1, 2, NULL);
        json_t *a = wait_alert(group, NULL, NULL);
        json_decref(a);
    }
    json_t *a = wait_alert("spread-3", NULL, NULL);
    assert_string_equal(str(a, "classification"), "software");
    assert_non_null(strstr(str(a, "text"), "need"));
    json_decref(a);
    /* the earlier pairs were taken back */
    for (int i = 0; i < 200 && history_count("u2", "withdrawn", NULL, NULL) == 0; i++)
        usleep(50000);
    assert_int_equal(history_count("u2", "withdrawn", "spread-0", NULL), 1);
    assert_true(has_state("u2", "ok"));
}

static void test_admin_actions_and_ack(void **state)
{
    (void)state;
    const char *body = "{\"action\": \"drain\", \"reason\": \"bad ECC\", \"actor\": \"ops\"}";
    assert_int_equal(it_call(&srv, "POST", "/api/v1/nodes/n3/actions", body, NULL, NULL), 401);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/nodes/n3/actions", body, "wrong", NULL), 403);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/nodes/n3/actions", "{\"action\": \"explode\"}", ADMIN, NULL), 400);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/nodes/zz/actions", body, ADMIN, NULL), 404);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/nodes/n3/actions", NULL, NULL, NULL), 405);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", "/api/v1/nodes/n3/actions", body, ADMIN, &o), 200);
    assert_string_equal(str(json_object_get(o, "node"), "state"), "drained");
    assert_string_equal(str(json_object_get(o, "event"), "kind"), "action");
    assert_string_equal(str(json_object_get(o, "event"), "actor"), "ops");
    assert_string_equal(str(json_object_get(o, "event"), "detail"), "drain: bad ECC");
    json_decref(o);
    usleep(500000); /* a rescore pass keeps drained */
    assert_true(has_state("n3", "drained"));
    assert_int_equal(it_call(&srv, "POST", "/api/v1/nodes/n3/actions",
                             "{\"action\": \"repair\", \"reason\": \"GPU replaced\"}", ADMIN, &o),
                     200);
    assert_string_equal(str(json_object_get(o, "node"), "state"), "repaired");
    json_decref(o);
    usleep(600000);
    o = get("/api/v1/nodes/n3");
    assert_string_equal(str(json_object_get(o, "node"), "state"), "repaired");
    assert_true(json_number_value(json_object_get(json_object_get(o, "node"), "involvements")) == 0.0);
    json_decref(o);
    assert_int_equal(history_count("n3", "action", NULL, NULL), 2);

    json_t *all, *first;
    assert_int_equal(alerts_of("a-down", NULL, &all, &first), 1);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/alerts/%lld/ack",
             (long long)json_integer_value(json_object_get(first, "id")));
    json_decref(all);
    assert_int_equal(it_call(&srv, "POST", path, NULL, NULL, NULL), 401);
    assert_int_equal(it_call(&srv, "POST", path, "{\"actor\": \"ops\"}", ADMIN, &o), 200);
    assert_string_equal(str(o, "state"), "acknowledged");
    assert_string_equal(str(o, "acked_by"), "ops");
    json_decref(o);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/alerts/999999/ack", NULL, ADMIN, NULL), 404);
    o = get("/api/v1/alerts?kind=suspect");
    assert_int_equal(json_integer_value(json_object_get(o, "total")), 1);
    json_decref(o);
}

/* A receiver that stays away: its deliveries stop alert_give_up_s (10 s here) after the alert was raised,
 * 'failed' with their last error, and /metrics counts them. (Last: it stops the receiver.) */
static void test_undeliverable_gives_up(void **state)
{
    (void)state;
    if (receiver > 0) {
        kill(receiver, SIGTERM);
        waitpid(receiver, NULL, 0);
        receiver = 0;
    }
    const char *na[] = {"g1", "g2"}, *nb[] = {"g3", "g4"};
    run("gone", 2, na, 0, NULL);
    run("gone", 2, nb, -1, NULL);
    json_t *a = wait_alert("gone", NULL, retried_and_pending);
    json_decref(a);
    int done = 0;
    for (int i = 0; i < 400 && !done; i++) { /* 10 s, then at most one more backoff step (1 s) */
        json_t *all, *first;
        done = alerts_of("gone", NULL, &all, &first) && http_sinks_are(first, "failed");
        json_decref(all);
        if (!done)
            usleep(100000);
    }
    assert_true(done);
    char url[200], *text = NULL;
    snprintf(url, sizeof(url), "%s/metrics", srv.base);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, NULL, &text), 200);
    const char *m = strstr(text, "lockstepd_alert_deliveries_total{outcome=\"given_up\"} ");
    assert_non_null(m);
    assert_true(atoi(m + strlen("lockstepd_alert_deliveries_total{outcome=\"given_up\"} ")) >= 3);
    assert_non_null(strstr(text, "lockstepd_alert_deliveries_total{outcome=\"delivered\"} "));
    free(text);
    /* nothing more is attempted: the attempts stay where they stopped */
    json_t *all, *first;
    assert_true(alerts_of("gone", NULL, &all, &first));
    json_t *before = json_deep_copy(json_object_get(first, "deliveries"));
    json_decref(all);
    usleep(2500000);
    assert_true(alerts_of("gone", NULL, &all, &first));
    assert_true(json_equal(before, json_object_get(first, "deliveries")));
    json_decref(all);
    json_decref(before);
}

/* A third run whose ranks report seconds apart: rank 1 (on the same node as a twin's rank 1) first, rank 0
 * (whose input diverges, earlier in the program) later. The group is judged once rank 0 has been compared
 * with the third run too, so the odd run's rank 0 node takes the blame; judged on rank 1 alone it was
 * "same hardware", software, and the group's one alert said so. */
static void test_third_run_ranks_apart(void **state)
{
    (void)state;
    const char *na[] = {"y1", "y2"}, *nb[] = {"y3", "y4"}, *nc[] = {"y9", "y4"};
    run_rec("apart", 2, na, -1, 2, NULL);
    run_rec("apart", 2, nb, -1, 2, NULL);
    usleep(1000000); /* the pair is compared and judged a match */
    char id[40], job[16];
    snprintf(job, sizeof(job), "%d", job_no++);
    assert_int_equal(it_register(&srv, job, "apart", 2, 0, NULL, id), 0);
    attest_run(job, 2, nc);
    for (int r = 0; r < 2; r++)
        manifest(id, r, nc[r], "Ring");
    uint64_t seq1 = 0, seq0 = 0;
    /* rank 1 diverges at step 3 on record 3 (a later seq), rank 0 on record 1 (an earlier seq) */
    assert_int_equal(it_post_steps(&srv, id, 1, 0, 0, 6, 4, 3, 3, -1, -1, &seq1, NULL), 200);
    assert_int_equal(it_end(&srv, id, 1, NULL), 200);
    usleep(2500000); /* several comparison sweeps and fleet passes without rank 0 of the third run */
    assert_int_equal(it_post_steps(&srv, id, 0, 0, 0, 6, 4, 3, 1, -1, -1, &seq0, NULL), 200);
    assert_int_equal(it_end(&srv, id, 0, NULL), 200);
    json_t *a = wait_alert("apart", NULL, NULL);
    assert_string_equal(str(a, "classification"), "hardware");
    assert_non_null(strstr(str(a, "text"), "strong evidence against y9"));
    json_decref(a);
    double w = 0;
    for (int i = 0; i < 100 && history_count("y9", "involvement", "apart", &w) == 0; i++)
        usleep(50000);
    assert_true(w == 1.0);
    assert_int_equal(history_count("y4", "involvement", NULL, NULL), 0);
}

/* With trust_reported_hosts = yes (a cluster without the SPANK plugin) manifests' own hosts count: the same
 * unattested groups blame the odd run's node. (Last: it restarts lockstepd with that setting.) */
static void test_trust_reported_hosts(void **state)
{
    (void)state;
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    char conf2[320];
    snprintf(conf2, sizeof(conf2), "%s/trust.conf", dir);
    FILE *f = fopen(conf2, "w");
    assert_non_null(f);
    fprintf(f, "trust_reported_hosts = yes\nsuspects_interval_ms = 200\n");
    fclose(f);
    const char *args[] = {"--db", pg.conninfo, "--config", conf2, "--admin-token", admin_file, NULL};
    h_srv_cleanup(&srv);
    assert_int_equal(h_srv_start(&srv, args), 0);
    const char *good[] = {"v1", "v2"}, *good2[] = {"v3", "v4"}, *bad[] = {"v9", "v5"};
    run_rec_as("trusted", 2, good, -1, 1, NULL, 0);
    run_rec_as("trusted", 2, good2, -1, 1, NULL, 0);
    run_rec_as("trusted", 2, bad, 0, 1, NULL, 0);
    double w = 0;
    for (int i = 0; i < 200 && history_count("v9", "involvement", "trusted", &w) == 0; i++)
        usleep(50000);
    assert_int_equal(history_count("v9", "involvement", "trusted", &w), 1);
    assert_true(w == 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_receiver_down_then_up), cmocka_unit_test(test_one_alert_per_group),
        cmocka_unit_test(test_fleet_pairs_name_n3),   cmocka_unit_test(test_software_same_hardware),
        cmocka_unit_test(test_software_manifest),     cmocka_unit_test(test_software_inputs_matched),
        cmocka_unit_test(test_three_runs_minority),
        cmocka_unit_test(test_pair_then_third_run),   cmocka_unit_test(test_spread_is_software),
        cmocka_unit_test(test_admin_actions_and_ack), cmocka_unit_test(test_undeliverable_gives_up),
        cmocka_unit_test(test_unattested_blames_nobody), cmocka_unit_test(test_reported_host_disagrees),
        cmocka_unit_test(test_third_run_ranks_apart),
        cmocka_unit_test(test_trust_reported_hosts),
    };
    return cmocka_run_group_tests_name("lockstepd suspects and alerts", tests, setup, teardown);
}
