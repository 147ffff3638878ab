/* test_suspects.c - lockstepd integration: evidence, suspects, node history, admin actions and alerts to real local
 * receivers (webhook, Slack, Alertmanager, mail): raised, re-sent, resolved by an acknowledgement, a repair or a
 * supersession. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

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
    it_write_file(script, text, 0755);
    /* an scontrol that writes down what it was asked (slurm_action = drain) */
    char scontrol[300];
    snprintf(scontrol_log, sizeof(scontrol_log), "%s/scontrol.log", dir);
    snprintf(scontrol, sizeof(scontrol), "%s/scontrol.sh", dir);
    snprintf(text, sizeof(text), "#!/bin/sh\necho \"$*\" >> %s\n", scontrol_log);
    it_write_file(scontrol, text, 0755);
    it_write_file(admin_file, ADMIN, 0600);
    char map[300];
    snprintf(map, sizeof(map), "%s/mail-map", dir);
    it_write_file(map, "# the site's users and where their alert mail goes\ndave dave.smith@lab.example\n", 0644);
    snprintf(text, sizeof(text),
             "alert_webhook_url = http://127.0.0.1:%d/hook\n"
             "alert_slack_url = http://127.0.0.1:%d/slack\n"
             "alert_alertmanager_url = http://127.0.0.1:%d/am/\n"
             "mail_program = %s\nmail_domain = example.org\nmail_map = %s/mail-map\n"
             "public_url = https://lockstep.example/\n"
             "alert_retry_ms = 100\nalert_retry_max_s = 1\nsuspects_interval_ms = 200\nalert_give_up_s = 10\n"
             "alert_resend_s = 1\ncluster = testcluster\nslurm_action = drain\nscontrol = %s\n",
             rport, rport, rport, script, dir, scontrol);
    it_write_file(conf, text, 0644);
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
        snprintf(body, sizeof(body), "{\"job_id\": \"%s\", \"node\": \"%s\", \"ranks\": [%s], \"user\": \"alice\"}",
                 job, nodes[r], list);
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

static json_t *alert_by_id(long long id);

/* wait_alert_id - poll until alert `id` exists and `pred` holds; a copy (caller decrefs). */
static json_t *wait_alert_id(long long id, int (*pred)(json_t *))
{
    for (int i = 0; i < 300; i++) {
        json_t *a = alert_by_id(id);
        if (a && (!pred || pred(a)))
            return a;
        json_decref(a);
        usleep(50000);
    }
    fail_msg("alert %lld did not reach the expected state", id);
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

/* hook_count_in - the requests on `path` logged in `log` by a receiver whose body mentions `needle` (the last one's
 * body in *last when given; caller decrefs). */
static int hook_count_in(const char *log, const char *path, const char *needle, json_t **last)
{
    FILE *f = fopen(log, "r");
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

/* hook_count - the same in the shared receiver's log. */
static int hook_count(const char *path, const char *needle, json_t **last)
{
    return hook_count_in(hooklog, path, needle, last);
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* iso_epoch - "2026-11-29T12:00:00.123Z" as epoch seconds (0 when it is not such a time). */
static double iso_epoch(const char *s)
{
    struct tm tm = {0};
    const char *rest = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!rest)
        return 0;
    return (double)timegm(&tm) + (*rest == '.' ? atof(rest) : 0);
}

/* slack_at - when the receiver logging to `log` first heard of `group` on /slack (epoch seconds; 0: never). */
static double slack_at(const char *log, const char *group)
{
    FILE *f = fopen(log, "r");
    char line[65536], needle[300];
    snprintf(needle, sizeof(needle), "twin group %s ", group);
    double at = 0;
    while (f && !at && fgets(line, sizeof(line), f)) {
        json_t *o = json_loads(line, 0, NULL);
        if (!strcmp(str(o, "path"), "/slack") && strstr(str(o, "body"), needle))
            at = json_number_value(json_object_get(o, "at"));
        json_decref(o);
    }
    if (f)
        fclose(f);
    return at;
}

/* What the receiver's Alertmanager endpoint heard of one alert (label `key` = `value`). */
typedef struct am_seen {
    int firing;         /* posts of it with endsAt after the post: "still firing" */
    int resolved;       /* posts with endsAt at or before the post: "resolved" */
    int firing_after;   /* firing posts after the first resolution */
    int changed;        /* posts whose labels, annotations or startsAt differ from the first post's */
    json_t *first;      /* the first post of it (caller decrefs; NULL when none) */
    json_t *resolution; /* the first resolution (caller decrefs; NULL when none) */
} am_seen;

static void am_seen_free(am_seen *s)
{
    json_decref(s->first);
    json_decref(s->resolution);
}

/* am_alerts - every alert posted to the Alertmanager endpoint, single or in a batch of re-sends, whose label
 * `key` is `value`. */
static am_seen am_alerts(const char *key, const char *value)
{
    am_seen s = {0};
    FILE *f = fopen(hooklog, "r");
    char line[1 << 18];
    while (f && fgets(line, sizeof(line), f)) {
        json_t *o = json_loads(line, 0, NULL);
        const char *p = json_string_value(json_object_get(o, "path"));
        double at = json_number_value(json_object_get(o, "at"));
        json_t *arr = p && !strcmp(p, "/am/api/v2/alerts") ? json_loads(str(o, "body"), 0, NULL) : NULL;
        size_t i;
        json_t *a;
        json_array_foreach(arr, i, a)
        {
            if (strcmp(str(json_object_get(a, "labels"), key), value))
                continue;
            int firing = iso_epoch(str(a, "endsAt")) > at;
            if (!s.first)
                s.first = json_incref(a);
            else if (!json_equal(json_object_get(a, "labels"), json_object_get(s.first, "labels")) ||
                     !json_equal(json_object_get(a, "annotations"), json_object_get(s.first, "annotations")) ||
                     strcmp(str(a, "startsAt"), str(s.first, "startsAt")))
                s.changed++;
            if (firing) {
                s.firing++;
                s.firing_after += s.resolved > 0;
            } else {
                if (!s.resolution)
                    s.resolution = json_incref(a);
                s.resolved++;
            }
        }
        json_decref(arr);
        json_decref(o);
    }
    if (f)
        fclose(f);
    return s;
}

/* metric - the value of the series `series` (name and labels, exactly) in /metrics, or -1. */
static double metric(const char *series)
{
    char url[200], *text = NULL, needle[300];
    snprintf(url, sizeof(url), "%s/metrics", srv.base);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, NULL, &text), 200);
    snprintf(needle, sizeof(needle), "\n%s ", series);
    const char *m = strstr(text, needle);
    double v = m ? atof(m + strlen(needle)) : -1;
    free(text);
    return v;
}

/* alert_by_id - GET /alerts's alert `id` (a copy; caller decrefs), or NULL. */
static json_t *alert_by_id(long long id)
{
    json_t *all = get("/api/v1/alerts?limit=1000"), *found = NULL;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(all, "items"), i, a) if (json_integer_value(json_object_get(a, "id")) == id)
        found = json_deep_copy(a);
    json_decref(all);
    return found;
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

    /* Alertmanager: the alert, then the same alert again every alert_resend_s (1 s here) while it is open */
    assert_true(hook_count("/am/api/v2/alerts", "a-down", NULL) >= 1);
    am_seen am = am_alerts("group", "a-down");
    assert_non_null(am.first);
    assert_string_equal(str(json_object_get(am.first, "labels"), "alertname"), "LockstepTwinDivergence");
    assert_string_equal(str(am.first, "generatorURL"), "https://lockstep.example/#/twins/a-down");
    assert_non_null(strstr(str(json_object_get(am.first, "annotations"), "summary"), "(rank 0, loss)"));
    assert_non_null(strstr(str(json_object_get(am.first, "annotations"), "description"), "Classified as "));
    assert_int_equal(strlen(str(am.first, "startsAt")), 24);
    assert_int_equal(am.resolved, 0);
    am_seen_free(&am);

    FILE *f = fopen(maillog, "r");
    assert_non_null(f);
    char mail[16384];
    size_t n = fread(mail, 1, sizeof(mail) - 1, f);
    fclose(f);
    mail[n] = 0;
    assert_non_null(strstr(mail, "ARGS: -t -i"));
    assert_non_null(strstr(mail, "To: alice@example.org\n"));
    assert_non_null(strstr(mail, "Subject: [lockstep] twin group a-down diverged at step 3 (rank 0, loss): "));
    assert_non_null(strstr(mail, "https://lockstep.example/#/twins/a-down"));
}

static void test_one_alert_then_superseded(void **state)
{
    (void)state;
    const char *na[] = {"b1", "b2"}, *nb[] = {"b3", "b4"}, *nc[] = {"b5", "b6"};
    run("b-once", 2, na, 0, NULL);
    run("b-once", 2, nb, 1, NULL); /* both ranks diverge: still one alert */
    json_t *a = wait_alert("b-once", NULL, all_delivered);
    long long first = json_integer_value(json_object_get(a, "id"));
    json_t *labels = json_object_get(a, "labels");
    assert_string_equal(str(labels, "node"), "b1,b3"); /* a pair: either run may be the odd one */
    assert_string_equal(str(labels, "group"), "b-once");
    json_decref(a);
    json_t *all, *last;
    assert_int_equal(alerts_of("b-once", NULL, &all, &last), 1);
    json_decref(all);

    /* A third run joins and shows that the first run is the odd one: the report changes, so a new alert is
     * raised and the first one ends as superseded (its label set, with node b1,b3, would otherwise stay). */
    run("b-once", 2, nc, -1, NULL);
    json_t *old = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(old);
        old = alert_by_id(first);
        if (!strcmp(str(old, "state"), "resolved"))
            break;
        usleep(50000);
    }
    assert_string_equal(str(old, "state"), "resolved");
    assert_string_equal(str(old, "resolved_reason"), "superseded");
    long long second = json_integer_value(json_object_get(old, "superseded_by"));
    assert_true(second > first);
    json_decref(old);
    json_t *b = wait_alert_id(second, all_delivered);
    assert_string_equal(str(b, "state"), "open");
    assert_string_equal(str(json_object_get(b, "labels"), "node"), "b1");
    assert_string_equal(str(b, "classification"), "hardware");
    json_decref(b);
    assert_int_equal(alerts_of("b-once", NULL, &all, &last), 2);
    json_decref(all);
    /* each sink: two alerts, and the first one's resolution (mail carries none) */
    for (int i = 0; i < 100 && hook_count("/hook", "\"status\":\"resolved\"", NULL) < 1; i++)
        usleep(50000);
    assert_int_equal(hook_count("/hook", "\"group\":\"b-once\"", NULL), 3);
    assert_int_equal(hook_count("/hook", "\"resolved_reason\":\"superseded\"", &b), 1);
    assert_int_equal(json_integer_value(json_object_get(b, "superseded_by")), second);
    assert_string_equal(str(b, "status"), "resolved");
    json_decref(b);
    assert_int_equal(hook_count("/slack", "b-once", NULL), 3);
    assert_int_equal(hook_count("/slack", "lockstep: resolved (superseded by alert", NULL), 1);
    char id[32];
    snprintf(id, sizeof(id), "%lld", first);
    am_seen am = {0};
    for (int i = 0; i < 100 && !am.resolved; i++) {
        am_seen_free(&am);
        am = am_alerts("lockstep_alert_id", id);
        if (!am.resolved)
            usleep(50000);
    }
    assert_int_equal(am.resolved, 1);
    assert_int_equal(am.changed, 0);
    assert_string_equal(str(json_object_get(am.resolution, "labels"), "node"), "b1,b3");
    am_seen_free(&am);
}

/* Alertmanager's client protocol: re-sent with the same labels every alert_resend_s while open, endsAt ahead
 * of each post; acknowledged: sent once more with endsAt = when it ended, then never again. */
static void test_alertmanager_protocol(void **state)
{
    (void)state;
    const char *na[] = {"c1", "c2"}, *nb[] = {"c3", "c4"};
    run("am-life", 2, na, 0, NULL);
    run("am-life", 2, nb, -1, NULL);
    json_t *a = wait_alert("am-life", NULL, all_delivered);
    long long id = json_integer_value(json_object_get(a, "id"));
    json_t *runs = json_object_get(json_object_get(a, "details"), "runs");
    char jobs[64], ids[32];
    snprintf(jobs, sizeof(jobs), "%s,%s", str(json_array_get(runs, 0), "job_id"),
             str(json_array_get(runs, 1), "job_id"));
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *created = str(a, "created_at");
    char created_at[40];
    snprintf(created_at, sizeof(created_at), "%s", created);
    json_decref(a);

    usleep(3500000); /* three re-send periods */
    am_seen am = am_alerts("lockstep_alert_id", ids);
    assert_true(am.firing >= 3);
    assert_int_equal(am.resolved, 0);
    assert_int_equal(am.changed, 0); /* every post: the same labels, annotations and startsAt */
    json_t *l = json_object_get(am.first, "labels"), *an = json_object_get(am.first, "annotations");
    assert_string_equal(str(l, "alertname"), "LockstepTwinDivergence");
    assert_string_equal(str(l, "kind"), "divergence");
    assert_string_equal(str(l, "group"), "am-life");
    assert_string_equal(str(l, "user"), "alice"); /* the owner, as slurmstepd attested the group's runs */
    assert_string_equal(str(l, "node"), "c1,c3");
    assert_string_equal(str(l, "gpu"), "GPU-c1-0,GPU-c3-0");
    assert_string_equal(str(l, "job_id"), jobs);
    assert_string_equal(str(l, "severity"), "warning");
    assert_string_equal(str(l, "cluster"), "testcluster");
    assert_string_equal(str(l, "service"), "lockstep");
    assert_string_equal(str(l, "lockstep_alert_id"), ids);
    assert_int_equal(json_object_size(l), 11);
    char want_summary[200];
    snprintf(want_summary, sizeof(want_summary), "twin group am-life diverged at step 3 (rank 0, loss): %s",
             str(an, "cause"));
    assert_string_equal(str(an, "summary"), want_summary);
    /* what Alertmanager's default templates show: a one-line description (why, whose fault, where) and the link */
    assert_null(strchr(str(an, "description"), '\n'));
    assert_non_null(strstr(str(an, "description"), "Classified as hardware"));
    assert_non_null(strstr(str(an, "description"), "Diverged on c1,c3"));
    assert_string_equal(str(an, "dashboard"), "https://lockstep.example/#/twins/am-life");
    assert_string_equal(str(an, "first_step"), "3");
    assert_string_equal(str(an, "rank"), "0");
    assert_string_equal(str(an, "record"), "loss (occurrence 0, seq 12, mismatch)");
    /* cause: the first divergence's (common/cause.h's words); classification: the fleet's conclusion */
    json_t *tw = get("/api/v1/twins/am-life");
    json_t *fd = json_object_get(tw, "first_divergence");
    assert_string_equal(str(an, "cause"), str(fd, "cause"));
    assert_string_equal(str(an, "cause_detail"), str(fd, "cause_detail"));
    assert_string_equal(str(an, "status"), "diverged");
    assert_string_equal(str(an, "classification"), "hardware");
    assert_string_equal(str(json_object_get(tw, "classification"), "class"), "hardware");
    assert_non_null(strstr(str(json_object_get(tw, "classification"), "reason"), "evidence against c1,c3"));
    json_decref(tw);
    assert_null(json_object_get(an, "verdict"));
    assert_null(json_object_get(an, "site")); /* these records carry no call site: no empty annotation */
    assert_string_equal(str(am.first, "generatorURL"), "https://lockstep.example/#/twins/am-life");
    assert_string_equal(str(am.first, "startsAt"), created_at);
    am_seen_free(&am);
    assert_true(metric("lockstepd_alert_resends_total{outcome=\"sent\"}") >= 3);
    assert_true(metric("lockstepd_alerts_open{kind=\"divergence\"}") >= 1);

    /* acknowledged: resolved, and each HTTP sink hears it once more */
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/alerts/%lld/ack", id);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", path, "{\"actor\": \"ops\"}", ADMIN, &o), 200);
    assert_string_equal(str(o, "state"), "acknowledged");
    assert_string_equal(str(o, "resolved_reason"), "acknowledged");
    assert_string_equal(str(o, "resolved_by"), "ops");
    char resolved_at[40];
    snprintf(resolved_at, sizeof(resolved_at), "%s", str(o, "resolved_at"));
    assert_int_equal(strlen(resolved_at), 24);
    json_decref(o);
    a = wait_alert_id(id, all_delivered);
    int resolutions = 0;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(a, "deliveries"), i, d) resolutions += !strcmp(str(d, "phase"), "resolved");
    assert_int_equal(resolutions, 3); /* webhook, Slack, Alertmanager; mail carries none */
    json_decref(a);
    usleep(2500000); /* no re-send after the end */
    am = am_alerts("lockstep_alert_id", ids);
    assert_int_equal(am.resolved, 1);
    assert_int_equal(am.firing_after, 0);
    assert_int_equal(am.changed, 0);
    assert_string_equal(str(am.resolution, "endsAt"), resolved_at);
    am_seen_free(&am);
    json_t *b;
    assert_int_equal(hook_count("/hook", "\"group\":\"am-life\"", NULL), 2);
    assert_int_equal(hook_count("/hook", "\"resolution\":\"acknowledged by ops\"", &b), 1);
    assert_string_equal(str(b, "status"), "resolved");
    assert_string_equal(str(b, "group"), "am-life");
    assert_string_equal(str(b, "resolved_at"), resolved_at);
    json_decref(b);
    assert_int_equal(hook_count("/slack", "lockstep: resolved (acknowledged by ops): twin group am-life", NULL), 1);
    assert_true(metric("lockstepd_alerts_resolved_total{reason=\"acknowledged\"}") >= 1);
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

/* check_one_baseline - GET /api/v1/nodes says one fleet baseline: the fleet's involvements over its runs, the same
 * at the top and in every node object (GET /nodes/N too), beside each node's own reference rate (the rest of the
 * fleet); before, the top said K/N and each node its reference, both called "baseline". And n3's timeline ends
 * with n3 as it stands, after score events that carry the involvements and runs they were computed from. */
static void check_one_baseline(void)
{
    json_t *o = get("/api/v1/nodes");
    double k = 0, runs = 0, base = json_number_value(json_object_get(o, "baseline"));
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(o, "items"), i, n)
    {
        k += json_number_value(json_object_get(n, "involvements"));
        runs += json_number_value(json_object_get(n, "runs"));
        assert_true(json_number_value(json_object_get(n, "baseline")) == base);
        assert_true(json_is_number(json_object_get(n, "reference_rate")));
    }
    assert_true(runs > 0 && fabs(base - k / runs) < 1e-9);
    json_decref(o);
    o = get("/api/v1/nodes/n3");
    json_t *n3 = json_object_get(o, "node");
    assert_true(json_number_value(json_object_get(n3, "baseline")) == base);
    double ref = json_number_value(json_object_get(n3, "reference_rate"));
    assert_true(ref > 0 && fabs(ref - base) > 0.01); /* the rest of the fleet: another number */
    json_t *t = get("/api/v1/nodes/n3/timeline");
    json_t *pts = json_object_get(t, "points"), *last = json_array_get(pts, json_array_size(pts) - 1);
    assert_string_equal(str(last, "kind"), "now");
    assert_true(json_number_value(json_object_get(last, "score")) == json_number_value(json_object_get(n3, "score")));
    assert_true(json_number_value(json_object_get(last, "involvements")) ==
                json_number_value(json_object_get(n3, "involvements")));
    int scored = 0, suspect = 0;
    json_array_foreach(pts, i, n)
    {
        if (!strcmp(str(n, "kind"), "score")) {
            scored++;
            assert_true(json_is_number(json_object_get(n, "involvements")) &&
                        json_is_number(json_object_get(n, "runs")));
        }
        suspect |= !strcmp(str(n, "kind"), "state") && !strcmp(str(n, "state"), "suspect");
    }
    assert_true(scored >= 2 && suspect);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/nodes/nope/timeline", NULL, NULL, NULL), 404);
    json_decref(t);
    json_decref(o);
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
    /* every pair evaluated (its involvements in the history), then the fleet rescored after the last one (n3's
     * runs count all eight): on a loaded machine the rescore can trail the last evaluation */
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
    /* the alert names the fleet baseline and the rest of the fleet apart, as percentages */
    assert_non_null(strstr(str(a, "text"), "%; fleet baseline "));
    assert_non_null(strstr(str(a, "text"), "%, the rest of the fleet "));
    assert_non_null(strstr(str(json_object_get(a, "annotations"), "involvements"), "%, fleet baseline "));
    assert_non_null(strstr(str(json_object_get(a, "annotations"), "description"), "%, the rest of the fleet "));
    assert_true(json_is_number(json_object_get(json_object_get(a, "details"), "reference_rate")));
    json_decref(a);
    check_one_baseline();
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
            assert_int_equal(it_post_steps(&srv, id, r, 0, 0, 6, 4, odd && r == 0 ? 3 : -1, 3, -1, -1, &seq, NULL),
                             200);
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

/* Both twins ran the diverging rank on the same node: a transient fault does exactly that, so the group is
 * inconclusive (narrow it), not software, and no node takes evidence until a replay decides. */
static void test_software_same_hardware(void **state)
{
    (void)state;
    const char *na[] = {"s1", "s2"}, *nb[] = {"s1", "s3"};
    run("sw-same", 2, na, 0, NULL);
    run("sw-same", 2, nb, -1, NULL);
    json_t *a = wait_alert("sw-same", NULL, NULL);
    assert_string_equal(str(a, "classification"), "inconclusive");
    assert_non_null(strstr(str(a, "text"), "same hardware (s1"));
    assert_non_null(strstr(str(a, "text"), "a transient fault does exactly that"));
    assert_non_null(strstr(str(a, "text"), "lockstep narrow sw-same"));
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
    assert_non_null(strstr(str(a, "text"), "env.NCCL_ALGO differs"));
    assert_non_null(strstr(str(a, "text"), "'Ring' vs 'Tree'"));
    assert_non_null(strstr(str(a, "text"), "Cause: configuration"));
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
                                  s ? ", " : "", s, s, 0x1000 + s + (s == 3 ? out_salt : 0),
                                  0x2000 + 16 * s + r + in_salt);
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
    assert_non_null(strstr(str(a, "text"), "matched in every run and its output differs"));
    assert_non_null(strstr(str(a, "text"), "Cause: operation"));
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
    /* at a glance, in both reads: the node suspected (t9, strong), the odd run, the classification in short */
    json_t *g = get("/api/v1/twins/three"), *l = get("/api/v1/twins?user=alice&limit=500"), *it = NULL, *x;
    size_t i;
    json_array_foreach(json_object_get(l, "items"), i, x) if (!strcmp(str(x, "group"), "three")) it = x;
    assert_non_null(it);
    json_t *reads[] = {g, it};
    for (int k = 0; k < 2; k++) {
        json_t *sus = json_object_get(reads[k], "suspected");
        assert_int_equal(json_array_size(sus), 1);
        assert_string_equal(str(json_array_get(sus, 0), "node"), "t9");
        assert_true(json_number_value(json_object_get(json_array_get(sus, 0), "weight")) == 1.0);
        assert_string_equal(str(json_object_get(reads[k], "classification"), "summary"),
                            "Hardware: the odd run's node t9");
        json_t *odd = json_object_get(reads[k], "odd_runs"), *runs = json_object_get(reads[k], "runs");
        assert_int_equal(json_array_size(odd), 1);
        assert_string_equal(json_string_value(json_array_get(odd, 0)), str(json_array_get(runs, 2), "run_id"));
        assert_string_equal(str(json_array_get(runs, 0), "outcome"), "majority");
        assert_string_equal(str(json_array_get(runs, 2), "outcome"), "odd-one-out");
        assert_string_equal(str(reads[k], "kind"), "twins");
    }
    json_decref(g);
    json_decref(l);
}

/* Noise replicas (`lockstep twin --noise` names them NAME.noise) are declared nondeterministic: their divergence is
 * expected, so it classifies as software, raises no alert and is no evidence (before: an alert for each new odd run,
 * and weak or strong evidence against the nodes that ran them). */
static void test_noise_replicas_raise_nothing(void **state)
{
    (void)state;
    const char *na[] = {"z1", "z2"}, *nb[] = {"z3", "z4"}, *nc[] = {"z5", "z6"};
    run_rec("exp.noise", 2, na, -1, 2, NULL);
    run_rec("exp.noise", 2, nb, 0, 2, NULL);
    run_rec("exp.noise", 2, nc, -1, 2, NULL);
    const char *code = NULL;
    json_t *t = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(t);
        t = get("/api/v1/twins/exp.noise");
        code = str(json_object_get(t, "classification"), "code");
        if (code && !strcmp(code, "nondeterministic"))
            break;
        usleep(50000);
    }
    assert_string_equal(str(t, "status"), "diverged");
    assert_string_equal(code, "nondeterministic");
    assert_string_equal(str(json_object_get(t, "classification"), "class"), "software");
    json_decref(t);
    usleep(500000); /* a few more sweeps: still nothing */
    json_t *all, *first;
    assert_int_equal(alerts_of("exp.noise", NULL, &all, &first), 0);
    json_decref(all);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(history_count(nb[k], "involvement", NULL, NULL), 0);
        assert_true(node_runs(nb[k]) <= 0); /* no exposure either: noise tells nothing of its hardware */
    }
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
    /* a pair: both runs' origin nodes suspected, weakly; no odd run; the summary says one of the two */
    json_t *g = get("/api/v1/twins/late-third");
    assert_int_equal(json_array_size(json_object_get(g, "suspected")), 2);
    assert_true(json_number_value(json_object_get(json_array_get(json_object_get(g, "suspected"), 0), "weight")) ==
                0.5);
    assert_int_equal(json_array_size(json_object_get(g, "odd_runs")), 0);
    assert_string_equal(str(json_object_get(g, "classification"), "summary"), "Hardware: w1 or w3, one of the pair");
    assert_string_equal(str(json_array_get(json_object_get(g, "runs"), 0), "outcome"), "diverged");
    json_decref(g);
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

    /* The repair ended the alerts that blame n3: its suspect alert and the hardware divergences it ran;
     * Alertmanager hears the suspect alert once more, with endsAt = when it ended. */
    json_t *all, *first;
    assert_int_equal(alerts_of(NULL, "n3", &all, &first), 1);
    long long sid = json_integer_value(json_object_get(first, "id"));
    assert_string_equal(str(first, "state"), "resolved");
    assert_string_equal(str(first, "resolved_reason"), "repaired");
    assert_string_equal(str(first, "resolved_by"), "n3");
    json_decref(all);
    assert_int_equal(alerts_of("fleet-0", NULL, &all, &first), 1);
    assert_string_equal(str(first, "resolved_reason"), "repaired");
    json_decref(all);
    assert_int_equal(alerts_of("sw-same", NULL, &all, &first), 1); /* software: blames no node */
    assert_string_equal(str(first, "state"), "open");
    json_decref(all);
    json_t *sa = wait_alert_id(sid, all_delivered);
    char resolved_at[40], sids[32];
    snprintf(resolved_at, sizeof(resolved_at), "%s", str(sa, "resolved_at"));
    json_decref(sa);
    snprintf(sids, sizeof(sids), "%lld", sid);
    am_seen am = am_alerts("lockstep_alert_id", sids);
    assert_int_equal(am.resolved, 1);
    assert_string_equal(str(json_object_get(am.resolution, "labels"), "alertname"), "LockstepHardwareSuspect");
    assert_string_equal(str(json_object_get(am.resolution, "labels"), "node"), "n3");
    assert_string_equal(str(json_object_get(am.resolution, "labels"), "severity"), "critical");
    assert_string_equal(str(am.resolution, "endsAt"), resolved_at);
    am_seen_free(&am);
    assert_true(hook_count("/hook", "\"resolution\":\"node n3 repaired\"", NULL) >= 9); /* suspect + 8 pairs */
    assert_true(metric("lockstepd_alerts_resolved_total{reason=\"repaired\"}") >= 9);

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

/* collective_run - a run of `group` on 4 ranks, rank r on nodes[r], each making 10 "mpi.allreduce" records
 * with input fingerprints; the 7th call's input differs on `in_rank` (-1: on every rank, -2: nowhere), and
 * then every rank's output of it differs. Ended. */
static void collective_run(const char *group, const char *const *nodes, int in_rank, const char *rec_name)
{
    char id[40], job[16], path[128], body[8192];
    snprintf(job, sizeof(job), "%d", job_no++);
    assert_int_equal(it_register(&srv, job, group, 4, 0, NULL, id), 0);
    attest_run(job, 4, nodes); /* slurmstepd's word on the placement: hardware evidence counts */
    for (int r = 0; r < 4; r++)
        manifest(id, r, nodes[r], "Ring");
    for (int r = 0; r < 4; r++) {
        size_t n = (size_t)snprintf(body, sizeof(body), "{\"rank\": %d, \"batch_seq\": 0, \"records\": [", r);
        for (int k = 0; k < 10; k++) {
            int in = k == 6 && (in_rank == -1 || in_rank == r), out = k == 6 && in_rank != -2;
            n += (size_t)snprintf(body + n, sizeof(body) - n,
                                  "%s{\"seq\": %d, \"step\": 0, \"name\": \"%s\", \"occurrence\": %d, \"level\": "
                                  "\"collective\", \"fp\": \"%016x\", \"inputs\": [\"%016x\"], \"site\": "
                                  "{\"module\": \"app\", \"offset\": 4096, \"function\": \"finish_run(int)\"}}",
                                  k ? ", " : "", k, rec_name, k, 0x1000 + k + (out ? 0x700 : 0),
                                  0x2000 + 16 * k + r + (in ? 0x700 : 0));
        }
        snprintf(body + n, sizeof(body) - n, "]}");
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records", id);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
        assert_int_equal(it_end(&srv, id, r, NULL), 200);
    }
}

/* Every rank's output of a collective differs when one rank fed it another input: the evidence goes to
 * that rank's hardware only, in both runs, never to the nodes that received the change. */
/* run_users - a diverging (flip: rank 0 flipped) or agreeing run of `group` on two nodes whose registration
 * reports `reported` as its user and that slurmstepd attests as `attested` (NULL: not attested); the two runs'
 * NCCL_ALGO differs, so the group is software and blames no node. */
static void run_users(const char *group, const char *const *nodes, int flip, const char *reported, const char *attested)
{
    char id[40], job[16], body[512];
    snprintf(job, sizeof(job), "%d", job_no++);
    snprintf(body, sizeof(body),
             "{\"job_id\": \"%s\", \"twin_group\": \"%s\", \"ranks\": 2, \"user\": \"%s\", "
             "\"nodes\": \"%s,%s\", \"mode\": \"det\"}",
             job, group, reported, nodes[0], nodes[1]);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs", body, NULL, &o), 201);
    snprintf(id, sizeof(id), "%s", str(o, "run_id"));
    json_decref(o);
    for (int r = 0; attested && r < 2; r++) {
        snprintf(body, sizeof(body), "{\"job_id\": \"%s\", \"node\": \"%s\", \"ranks\": [%d], \"user\": \"%s\"}", job,
                 nodes[r], r, attested);
        assert_int_equal(it_call(&srv, "POST", "/api/v1/attest", body, ADMIN, NULL), 200);
    }
    for (int r = 0; r < 2; r++) {
        manifest(id, r, nodes[r], flip ? "Ring" : "Tree"); /* software (configuration): no evidence on the nodes */
        uint64_t seq = 0;
        assert_int_equal(it_post_steps(&srv, id, r, 0, 0, 6, 4, flip && r == 0 ? 3 : -1, 0, -1, -1, &seq, NULL), 200);
        assert_int_equal(it_end(&srv, id, r, NULL), 200);
    }
}

/* mail_to_of - the To: line of the mail about `group` ("" when none was mailed), into `out`. */
static void mail_to_of(const char *group, char *out, size_t cap)
{
    FILE *f = fopen(maillog, "r");
    char line[4096], to[1024] = "", subject[300];
    snprintf(subject, sizeof(subject), "Subject: [lockstep] twin group %s ", group);
    *out = 0;
    while (f && fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "To: ", 4))
            snprintf(to, sizeof(to), "%.1000s", line + 4);
        else if (!strncmp(line, subject, strlen(subject)))
            snprintf(out, cap, "%.*s", (int)strcspn(to, "\n"), to);
    }
    if (f)
        fclose(f);
}

static int has_mail_delivery(json_t *a)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(a, "deliveries"), i, d) if (!strcmp(str(d, "sink"), "mail")) return 1;
    return 0;
}

static int mail_delivered(json_t *a)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(a, "deliveries"), i,
                       d) if (!strcmp(str(d, "sink"), "mail")) return !strcmp(str(d, "state"), "delivered");
    return 0;
}

static int webhook_delivered(json_t *a)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(a, "deliveries"), i,
                       d) if (!strcmp(str(d, "sink"), "webhook")) return !strcmp(str(d, "state"), "delivered");
    return 0;
}

/* Alert mail goes to the attested users of the group's runs, at the addresses the site maps (mail_map, else
 * user@mail_domain), never to what a job reported: before, a job reporting user "mallory@evil.example" had the
 * alert mailed there, and one reporting "carol" had it mailed to carol@example.org. */
static void test_mail_to_mapped_attested_users(void **state)
{
    (void)state;
    const char *na[] = {"mail1", "mail2"}, *nb[] = {"mail3", "mail4"};
    char to[1024];
    /* reported as an outside address, attested as bob: bob@mail_domain only */
    run_users("mail-a", na, 1, "mallory@evil.example", "bob");
    run_users("mail-a", nb, 0, "mallory@evil.example", "bob");
    json_t *a = wait_alert("mail-a", NULL, mail_delivered);
    assert_string_equal(str(json_object_get(a, "labels"), "user"), "bob"); /* the routing label: attested too */
    json_decref(a);
    mail_to_of("mail-a", to, sizeof(to));
    assert_string_equal(to, "bob@example.org");
    /* reported, never attested: nobody is mailed (no mail delivery at all) */
    run_users("mail-b", na, 1, "carol", NULL);
    run_users("mail-b", nb, 0, "carol", NULL);
    a = wait_alert("mail-b", NULL, webhook_delivered);
    assert_false(has_mail_delivery(a));
    assert_null(json_object_get(json_object_get(a, "labels"), "user")); /* "carol" was only reported */
    json_decref(a);
    mail_to_of("mail-b", to, sizeof(to));
    assert_string_equal(to, "");
    /* an attested user the site's map names: the map's address */
    run_users("mail-c", na, 1, "dave", "dave");
    run_users("mail-c", nb, 0, "dave", "dave");
    json_decref(wait_alert("mail-c", NULL, mail_delivered));
    mail_to_of("mail-c", to, sizeof(to));
    assert_string_equal(to, "dave.smith@lab.example");
    /* an attested user name that looks like an address is never used as one */
    run_users("mail-d", na, 1, "x", "eve@evil.example");
    run_users("mail-d", nb, 0, "x", "eve@evil.example");
    a = wait_alert("mail-d", NULL, webhook_delivered);
    assert_false(has_mail_delivery(a));
    json_decref(a);
    mail_to_of("mail-d", to, sizeof(to));
    assert_string_equal(to, "");
}

/* One sink's receiver hangs (the webhook and Alertmanager here; each attempt cut at alert_timeout_s = 3 s): the
 * other sinks still get every alert within seconds of it being raised (before, one thread delivered everything,
 * and a hanging receiver added its timeout per attempt to every alert behind it: 0 -> 49.5 s over 6 alerts); once
 * the receiver answers again it gets every alert (at least once). A lockstepd of its own, on a database of its
 * own in the same PostgreSQL, so that no other lockstepd claims its outbox. */
#define LANE_ALERTS 6
static void test_hanging_sink_delays_no_other(void **state)
{
    (void)state;
    char db[600], conf2[300], log2[300], hang[300], text[2048];
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PGresult *r = PQexec(c, "CREATE DATABASE lanes");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(c);
    snprintf(db, sizeof(db), "%s", pg.conninfo);
    char *dbname = strstr(db, "dbname=postgres");
    assert_non_null(dbname);
    memcpy(dbname, "dbname=lanes   ", 15);
    int port2 = free_port();
    snprintf(log2, sizeof(log2), "%s/lanes.jsonl", dir);
    snprintf(hang, sizeof(hang), "%s/hang", dir);
    snprintf(conf2, sizeof(conf2), "%s/lanes.conf", dir);
    it_write_file(hang, "", 0644);
    snprintf(text, sizeof(text),
             "alert_webhook_url = http://127.0.0.1:%d/hang/hook\nalert_slack_url = http://127.0.0.1:%d/slack\n"
             "alert_alertmanager_url = http://127.0.0.1:%d/hang/am\npublic_url = https://lockstep.example/\n"
             "alert_timeout_s = 3\nalert_retry_ms = 100\nalert_retry_max_s = 1\nsuspects_interval_ms = 200\n",
             port2, port2, port2);
    it_write_file(conf2, text, 0644);
    char script[600], ports[16];
    const char *src = getenv("LOCKSTEP_SRC");
    snprintf(script, sizeof(script), "%s/tests/integration/receiver.py", src ? src : ".");
    snprintf(ports, sizeof(ports), "%d", port2);
    pid_t rcv = fork();
    if (rcv == 0) {
        execlp("python3", "python3", script, ports, log2, hang, (char *)NULL);
        _exit(127);
    }
    assert_true(rcv > 0);
    h_srv lanes, saved = srv;
    const char *args[] = {"--db", db, "--config", conf2, "--admin-token", admin_file, NULL};
    assert_int_equal(h_srv_start(&lanes, args), 0);
    srv = lanes; /* the helpers below talk to this lockstepd */
    const char *na[] = {"l1", "l2"}, *nb[] = {"l3", "l4"};
    char group[32];
    for (int g = 0; g < LANE_ALERTS; g++) {
        snprintf(group, sizeof(group), "lane-%d", g);
        run(group, 2, na, 0, NULL);
        run(group, 2, nb, -1, NULL);
    }
    /* Slack hears of every alert within seconds of it being raised, while the other two hang */
    double t0 = h_now(), lag_worst = 0;
    int heard = 0;
    while (h_now() - t0 < 60 && heard < LANE_ALERTS) {
        heard = 0;
        for (int g = 0; g < LANE_ALERTS; g++) {
            char needle[64];
            snprintf(needle, sizeof(needle), "twin group lane-%d ", g);
            heard += hook_count_in(log2, "/slack", needle, NULL) > 0;
        }
        usleep(100000);
    }
    assert_int_equal(heard, LANE_ALERTS);
    json_t *all = get("/api/v1/alerts?limit=1000");
    size_t i;
    json_t *a;
    int n = 0;
    json_array_foreach(json_object_get(all, "items"), i, a)
    {
        const char *g = str(a, "group");
        if (strncmp(g, "lane-", 5))
            continue;
        n++;
        double raised = iso_epoch(str(a, "created_at")), at = slack_at(log2, g);
        print_message("alert %lld (%s): on Slack %.2f s after it was raised\n",
                      (long long)json_integer_value(json_object_get(a, "id")), g, at - raised);
        lag_worst = at - raised > lag_worst ? at - raised : lag_worst;
        json_t *d;
        size_t k;
        json_array_foreach(json_object_get(a, "deliveries"), k, d) if (!strcmp(str(d, "sink"), "webhook"))
            assert_string_equal(str(d, "state"), "pending"); /* still trying: nothing dropped */
    }
    json_decref(all);
    assert_int_equal(n, LANE_ALERTS);
    assert_true(lag_worst < 5.0);
    /* the receiver answers again: it gets every alert, and every delivery ends delivered */
    unlink(hang);
    for (int g = 0; g < LANE_ALERTS; g++) {
        snprintf(group, sizeof(group), "lane-%d", g);
        json_decref(wait_alert(group, NULL, all_delivered));
        char needle[64];
        snprintf(needle, sizeof(needle), "\"%s\"", group);
        assert_true(hook_count_in(log2, "/hang/hook", needle, NULL) >= 1);
    }
    srv = saved;
    assert_int_equal(h_srv_kill(&lanes, SIGTERM), 0);
    h_srv_cleanup(&lanes);
    kill(rcv, SIGTERM);
    waitpid(rcv, NULL, 0);
}

static void test_origin_rank_only(void **state)
{
    (void)state;
    const char *na[] = {"or1", "or2", "or3", "or4"}, *nb[] = {"or5", "or6", "or7", "or8"};
    collective_run("origin", na, -2, "mpi.allreduce.o");
    collective_run("origin", nb, 3, "mpi.allreduce.o");
    json_t *a = wait_alert("origin", NULL, NULL);
    assert_string_equal(str(a, "classification"), "hardware");
    assert_string_equal(str(json_object_get(a, "details"), "cause"), "origin");
    assert_non_null(strstr(str(a, "text"), "Cause: origin"));
    assert_non_null(strstr(str(a, "text"), "finish_run(int)"));
    /* Alertmanager's annotations: where (with the call site), the cause in a word and in sentences, the
     * classification; the labels name rank 3's node in each run */
    json_t *an = json_object_get(a, "annotations");
    json_t *tw = get("/api/v1/twins/origin");
    json_t *fd = json_object_get(tw, "first_divergence");
    assert_string_equal(str(an, "site"), str(json_object_get(fd, "site"), "text"));
    assert_non_null(strstr(str(an, "site"), "finish_run(int)"));
    assert_string_equal(str(an, "cause"), "origin");
    assert_string_equal(str(an, "cause_detail"), str(fd, "cause_detail"));
    assert_string_equal(str(an, "classification"), "hardware");
    assert_string_equal(str(an, "rank"), "3");
    assert_string_equal(str(an, "first_step"), "0");
    assert_string_equal(str(an, "record"), "mpi.allreduce.o (occurrence 6, seq 6, mismatch)");
    assert_null(json_object_get(an, "verdict"));
    assert_string_equal(str(json_object_get(a, "labels"), "node"), "or4,or8");
    json_decref(tw);
    json_decref(a);
    double w = 0;
    for (int i = 0; i < 200 && history_count("or8", "involvement", "origin", &w) == 0; i++)
        usleep(50000);
    assert_int_equal(history_count("or4", "involvement", "origin", NULL), 1);
    assert_int_equal(history_count("or8", "involvement", "origin", NULL), 1);
    const char *receivers[] = {"or1", "or2", "or3", "or5", "or6", "or7"};
    for (size_t i = 0; i < sizeof(receivers) / sizeof(receivers[0]); i++)
        assert_int_equal(history_count(receivers[i], "involvement", NULL, NULL), 0);
}

/* A closing reduction of run-specific values: every rank's input differs at once. Software: no node is
 * blamed, and the alert says which ignore rule leaves the call out. */
static void test_every_rank_blames_no_node(void **state)
{
    (void)state;
    const char *na[] = {"er1", "er2", "er3", "er4"}, *nb[] = {"er5", "er6", "er7", "er8"};
    collective_run("timings", na, -2, "mpi.reduce.t");
    collective_run("timings", nb, -1, "mpi.reduce.t");
    json_t *a = wait_alert("timings", NULL, NULL);
    assert_string_equal(str(a, "classification"), "software");
    assert_string_equal(str(json_object_get(a, "details"), "cause"), "every-rank");
    assert_string_equal(str(json_object_get(a, "details"), "suggest_ignore"), "finish_run");
    assert_non_null(strstr(str(a, "text"), "--lockstep-ignore='finish_run'"));
    json_decref(a);
    for (int n = 0; n < 8; n++)
        assert_int_equal(history_count(n < 4 ? na[n] : nb[n - 4], "involvement", NULL, NULL), 0);
}

/* bcast_run - a run of `group` on `nranks` ranks (rank r on nodes[r]), each making 4 "mpi.bcast" records from root 0
 * at step 0 on a communicator of `csize` processes (1: each rank's own, MPI_COMM_SELF-like; listed with its world
 * ranks when `listed`); the root's buffer of occurrence 2 differs when `differ` (its input and, on a communicator
 * of more than one, every member's output). The records of a one-process communicator state it by their shape
 * only when not listed, as agents before the comm field did. */
static void bcast_run(const char *group, int nranks, const char *const *nodes, int csize, int listed, int differ)
{
    char id[40], job[16], path[128], body[8192];
    snprintf(job, sizeof(job), "%d", job_no++);
    assert_int_equal(it_register(&srv, job, group, nranks, 0, NULL, id), 0);
    attest_run(job, nranks, nodes);
    for (int r = 0; r < nranks; r++)
        manifest(id, r, nodes[r], "Ring");
    for (int r = 0; r < nranks; r++) {
        int root = csize == 1 || r == 0;
        size_t n = (size_t)snprintf(body, sizeof(body), "{\"rank\": %d, \"batch_seq\": 0, \"records\": [", r);
        for (int k = 0; k < 4; k++) {
            int flip = differ && k == 2 && (csize > 1 || r == 0);
            char comm[128], inputs[64] = "";
            if (!listed)
                snprintf(comm, sizeof(comm), "\"shape\": [%d, 1]", csize);
            else if (csize == 1)
                snprintf(comm, sizeof(comm), "\"shape\": [1, 1], \"comm\": {\"size\": 1, \"ranks\": [%d]}", r);
            else
                snprintf(comm, sizeof(comm), "\"shape\": [%d, 1], \"comm\": {\"size\": %d, \"ranks\": [0, 1, 2, 3]}",
                         csize, csize);
            if (root)
                snprintf(inputs, sizeof(inputs), ", \"inputs\": [\"%016x\"]", 0x3000 + k + (flip ? 0x700 : 0));
            n += (size_t)snprintf(body + n, sizeof(body) - n,
                                  "%s{\"seq\": %d, \"step\": 0, \"name\": \"mpi.bcast\", \"occurrence\": %d, "
                                  "\"level\": \"collective\", \"fp\": \"%016x\"%s, %s, \"site\": {\"module\": "
                                  "\"app\", \"offset\": 8192, \"function\": \"dgebs2d_\"}}",
                                  k ? ", " : "", k, k, 0x3000 + k + (flip ? 0x700 : 0), inputs, comm);
        }
        snprintf(body + n, sizeof(body) - n, "]}");
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records", id);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
        assert_int_equal(it_end(&srv, id, r, NULL), 200);
    }
}

/* A broadcast on a communicator of one process (BLACS on a 1x1 grid) whose buffer, a word the program never uses,
 * differs between the twins on disjoint nodes: nothing was sent, so no node takes evidence, the cause does not
 * claim any rank received anything, and the first report suggests the ignore rule for the call. With the comm field
 * and, as an older agent's records state it, with the shape alone. */
static void test_one_process_bcast_blames_no_node(void **state)
{
    (void)state;
    for (int listed = 1; listed >= 0; listed--) {
        const char *na[] = {listed ? "bs1" : "bo1", listed ? "bs2" : "bo2"},
                   *nb[] = {listed ? "bs3" : "bo3", listed ? "bs4" : "bo4"};
        const char *group = listed ? "blacs" : "blacs-old";
        bcast_run(group, 2, na, 1, listed, 0);
        bcast_run(group, 2, nb, 1, listed, 1);
        json_t *a = wait_alert(group, NULL, NULL);
        json_t *d = json_object_get(a, "details");
        assert_string_equal(str(a, "classification"), "software");
        assert_string_equal(str(d, "cause"), "origin");
        assert_non_null(strstr(str(d, "cause_detail"), "communicator of one process: nothing was sent or received"));
        assert_null(strstr(str(a, "text"), "received the change"));
        assert_string_equal(str(d, "suggest_ignore"), "dgebs2d_");
        assert_non_null(strstr(str(a, "text"), "Nothing left the process"));
        assert_non_null(strstr(str(a, "text"), "--lockstep-ignore='dgebs2d_'"));
        json_decref(a);
        char path[128];
        snprintf(path, sizeof(path), "/api/v1/twins/%s", group);
        json_t *tw = get(path);
        json_t *cl = json_object_get(tw, "classification");
        assert_string_equal(str(cl, "code"), "local");
        json_t *fd = json_object_get(tw, "first_divergence");
        assert_string_equal(str(fd, "suggest_ignore"), "dgebs2d_");
        json_t *runs = json_object_get(fd, "runs");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(runs, 0), "comm"), "size")),
                         1);
        json_decref(tw);
        for (int k = 0; k < 2; k++) {
            assert_int_equal(history_count(na[k], "involvement", NULL, NULL), 0);
            assert_int_equal(history_count(nb[k], "involvement", NULL, NULL), 0);
        }
    }
}

/* The root's buffer differed before a broadcast to four ranks, nothing diverging before: a value the root read (an
 * edited input file) entered from outside; software, no node blamed, the receivers named within the communicator. */
static void test_root_input_blames_no_node(void **state)
{
    (void)state;
    const char *na[] = {"ri1", "ri2", "ri3", "ri4"}, *nb[] = {"ri5", "ri6", "ri7", "ri8"};
    bcast_run("input-file", 4, na, 4, 1, 0);
    bcast_run("input-file", 4, nb, 4, 1, 1);
    json_t *a = wait_alert("input-file", NULL, NULL);
    json_t *d = json_object_get(a, "details");
    assert_string_equal(str(a, "classification"), "software");
    assert_non_null(strstr(str(d, "cause_detail"), "entered at the root from outside"));
    assert_non_null(strstr(str(d, "cause_detail"), "ranks 1, 2 and 3, the other members of its communicator"));
    assert_non_null(strstr(str(a, "text"), "compare what the runs read"));
    json_decref(a);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(history_count(na[k], "involvement", NULL, NULL), 0);
        assert_int_equal(history_count(nb[k], "involvement", NULL, NULL), 0);
    }
}

/* A pair diverges at a record one run lacks, and is alerted; then that run's rank reports a failure (its other
 * rank, killed by the launcher, never reports): the group is incomplete after all. The re-evaluation (a failed
 * rank changes the group's signature) supersedes the alert with one that says so. */
static void test_incomplete_supersedes(void **state)
{
    (void)state;
    const char *na[] = {"ic1", "ic2"}, *nb[] = {"ic3", "ic4"};
    char a[40], b[40], path[128], job[16];
    snprintf(job, sizeof(job), "%d", job_no++);
    assert_int_equal(it_register(&srv, job, "inc-later", 2, 0, NULL, a), 0);
    snprintf(job, sizeof(job), "%d", job_no++);
    assert_int_equal(it_register(&srv, job, "inc-later", 2, 0, NULL, b), 0);
    static const char ab[] = "{\"seq\": 0, \"step\": 0, \"name\": \"inc.a\", \"fp\": \"00000000000000a1\"}, "
                             "{\"seq\": 1, \"step\": 0, \"name\": \"inc.b\", \"fp\": \"00000000000000b1\"}";
    static const char abc[] = "{\"seq\": 0, \"step\": 0, \"name\": \"inc.a\", \"fp\": \"00000000000000a1\"}, "
                              "{\"seq\": 1, \"step\": 0, \"name\": \"inc.b\", \"fp\": \"00000000000000b1\"}, "
                              "{\"seq\": 2, \"step\": 1, \"name\": \"inc.c\", \"fp\": \"00000000000000c1\"}";
    static const char ac[] = "{\"seq\": 0, \"step\": 0, \"name\": \"inc.a\", \"fp\": \"00000000000000a1\"}, "
                             "{\"seq\": 1, \"step\": 1, \"name\": \"inc.c\", \"fp\": \"00000000000000c1\"}";
    for (int r = 0; r < 2; r++) {
        char body[600];
        manifest(a, r, na[r], "Ring");
        manifest(b, r, nb[r], "Ring");
        snprintf(body, sizeof(body), "{\"rank\": %d, \"batch_seq\": 0, \"records\": [%s]}", r, ab);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records", a);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
        assert_int_equal(it_end(&srv, a, r, NULL), 200);
        /* run b: rank 0 as a, then step 1 (and never ends); rank 1 lacks inc.b and goes on to step 1 */
        snprintf(body, sizeof(body), "{\"rank\": %d, \"batch_seq\": 0, \"records\": [%s]}", r, r ? ac : abc);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records", b);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
    }
    json_t *first = wait_alert("inc-later", NULL, NULL);
    long long id1 = json_integer_value(json_object_get(first, "id"));
    assert_string_equal(str(json_object_get(first, "details"), "status"), "diverged");
    assert_string_equal(str(json_object_get(first, "details"), "cause"), "missing");
    json_decref(first);

    snprintf(path, sizeof(path), "/api/v1/runs/%s/end", b);
    assert_int_equal(it_call(&srv, "POST", path, "{\"rank\": 1, \"exit_code\": 134}", NULL, NULL), 200);
    json_t *old = NULL;
    for (int i = 0; i < 300; i++) {
        json_decref(old);
        old = alert_by_id(id1);
        if (!strcmp(str(old, "state"), "resolved"))
            break;
        usleep(50000);
    }
    assert_string_equal(str(old, "state"), "resolved");
    assert_string_equal(str(old, "resolved_reason"), "superseded");
    long long id2 = json_integer_value(json_object_get(old, "superseded_by"));
    assert_true(id2 > id1);
    json_decref(old);
    json_t *nw = wait_alert_id(id2, NULL);
    json_t *d = json_object_get(nw, "details");
    assert_string_equal(str(d, "status"), "incomplete");
    assert_non_null(strstr(str(nw, "summary"), "is incomplete after all"));
    assert_non_null(strstr(str(nw, "text"), "Group status: incomplete"));
    assert_non_null(strstr(str(nw, "text"), "exit 134"));
    assert_string_equal(str(json_object_get(nw, "annotations"), "status"), "incomplete");
    assert_string_equal(str(nw, "classification"), "none"); /* incomplete groups weigh no hardware evidence */
    json_decref(nw);
    json_t *tw = get("/api/v1/twins/inc-later");
    assert_string_equal(str(tw, "status"), "incomplete");
    json_decref(tw);
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
        cmocka_unit_test(test_receiver_down_then_up),
        cmocka_unit_test(test_one_alert_then_superseded),
        cmocka_unit_test(test_alertmanager_protocol),
        cmocka_unit_test(test_mail_to_mapped_attested_users),
        cmocka_unit_test(test_fleet_pairs_name_n3),
        cmocka_unit_test(test_software_same_hardware),
        cmocka_unit_test(test_one_process_bcast_blames_no_node),
        cmocka_unit_test(test_root_input_blames_no_node),
        cmocka_unit_test(test_software_manifest),
        cmocka_unit_test(test_software_inputs_matched),
        cmocka_unit_test(test_three_runs_minority),
        cmocka_unit_test(test_noise_replicas_raise_nothing),
        cmocka_unit_test(test_pair_then_third_run),
        cmocka_unit_test(test_spread_is_software),
        cmocka_unit_test(test_admin_actions_and_ack),
        cmocka_unit_test(test_undeliverable_gives_up),
        cmocka_unit_test(test_origin_rank_only),
        cmocka_unit_test(test_every_rank_blames_no_node),
        cmocka_unit_test(test_incomplete_supersedes),
        cmocka_unit_test(test_unattested_blames_nobody),
        cmocka_unit_test(test_reported_host_disagrees),
        cmocka_unit_test(test_third_run_ranks_apart),
        cmocka_unit_test(test_trust_reported_hosts),
        cmocka_unit_test(test_hanging_sink_delays_no_other),
    };
    return cmocka_run_group_tests_name("lockstepd suspects and alerts", tests, setup, teardown);
}
