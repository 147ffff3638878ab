/* test_consensus_fleet.c - lockstepd integration: runs' consensus disagreements (consensus_divergences rows, written
 * here as the server writes them) become hardware evidence against the odd rank's attested node and GPU, the node
 * turns suspect and is drained, and each run's disagreement raises one alert of kind consensus to its owner and the
 * site through a real webhook and Alertmanager receiver and the mail program. */
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
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;
static char dir[256], hooklog[300], maillog[300], scontrol_log[300];
static int rport;
static pid_t receiver = -1;
static const char *ADMIN = "admin-secret-token";
static int job_no = 7000;

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
    snprintf(dir, sizeof(dir), "/tmp/ls-cons.XXXXXX");
    if (!mkdtemp(dir) || h_pg_start(&pg) < 0 || (rport = free_port()) < 0)
        return -1;
    snprintf(hooklog, sizeof(hooklog), "%s/hooks.jsonl", dir);
    snprintf(maillog, sizeof(maillog), "%s/mail.txt", dir);
    snprintf(scontrol_log, sizeof(scontrol_log), "%s/scontrol.log", dir);
    char script[300], scontrol[300], conf[300], admin_file[300], text[2048];
    snprintf(script, sizeof(script), "%s/capture-mail.sh", dir);
    snprintf(text, sizeof(text), "#!/bin/sh\n{ echo \"ARGS: $*\"; cat; echo '=== END'; } >> %s\n", maillog);
    it_write_file(script, text, 0755);
    snprintf(scontrol, sizeof(scontrol), "%s/scontrol.sh", dir);
    snprintf(text, sizeof(text), "#!/bin/sh\necho \"$*\" >> %s\n", scontrol_log);
    it_write_file(scontrol, text, 0755);
    snprintf(admin_file, sizeof(admin_file), "%s/admin", dir);
    it_write_file(admin_file, ADMIN, 0600);
    snprintf(conf, sizeof(conf), "%s/lockstepd.conf", dir);
    snprintf(text, sizeof(text),
             "alert_webhook_url = http://127.0.0.1:%d/hook\n"
             "alert_alertmanager_url = http://127.0.0.1:%d/am/\n"
             "mail_program = %s\nmail_domain = example.org\nmail_admin = hpc-admins@example.org\n"
             "public_url = https://lockstep.example/\n"
             "alert_retry_ms = 100\nalert_retry_max_s = 1\nsuspects_interval_ms = 200\n"
             "slurm_action = drain\nscontrol = %s\n",
             rport, rport, script, scontrol);
    it_write_file(conf, text, 0644);
    char port[16], recv_script[600];
    const char *src = getenv("LOCKSTEP_SRC");
    snprintf(recv_script, sizeof(recv_script), "%s/tests/integration/receiver.py", src ? src : ".");
    snprintf(port, sizeof(port), "%d", rport);
    receiver = fork();
    if (receiver == 0) {
        execlp("python3", "python3", recv_script, port, hooklog, (char *)NULL);
        _exit(127);
    }
    const char *args[] = {"--db", pg.conninfo, "--config", conf, "--admin-token", admin_file, NULL};
    return receiver > 0 ? h_srv_start(&srv, args) : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (receiver > 0) {
        kill(receiver, SIGTERM);
        waitpid(receiver, NULL, 0);
    }
    return it_stop(&srv, &pg, dir);
}

/* sql - run `q` with `n` text parameters on the test's database; the first value of its first row, copied into
 * `out` when given ("" when none). Fails the test on an error. */
static void sql(const char *q, int n, const char *const *p, char *out, size_t cap)
{
    PGconn *db = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(db), CONNECTION_OK);
    PGresult *r = PQexecParams(db, q, n, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", q, PQerrorMessage(db));
    if (out)
        snprintf(out, cap, "%s", PQntuples(r) && PQnfields(r) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    PQfinish(db);
}

/* run_on - a run of `nranks` ranks with rank r on nodes[r] and GPU GPU-<node>-<r>, its command `program`, attested
 * (as alice) when `attested`; its id into `id` (40 bytes). */
static void run_on(int nranks, const char *const *nodes, const char *program, int attested, char *id)
{
    char job[16];
    snprintf(job, sizeof(job), "%d", job_no++);
    assert_int_equal(it_register(&srv, job, NULL, nranks, 0, NULL, id), 0);
    for (int r = 0; attested && r < nranks; r++) {
        int first = 1;
        for (int q = 0; q < r; q++)
            first &= strcmp(nodes[q], nodes[r]) != 0;
        if (!first)
            continue;
        char body[512], list[128] = "";
        size_t n = 0;
        for (int q = r; q < nranks; q++)
            if (!strcmp(nodes[q], nodes[r]))
                n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", n ? "," : "", q);
        snprintf(body, sizeof(body), "{\"job_id\": \"%s\", \"node\": \"%s\", \"ranks\": [%s], \"user\": \"alice\"}",
                 job, nodes[r], list);
        assert_int_equal(it_call(&srv, "POST", "/api/v1/attest", body, ADMIN, NULL), 200);
    }
    for (int r = 0; r < nranks; r++) {
        char body[512], path[128];
        snprintf(body, sizeof(body),
                 "{\"rank\": %d, \"slurm_node\": \"%s\", \"gpu\": {\"uuid\": \"GPU-%s-%d\", \"name\": \"TestGPU\"}}", r,
                 nodes[r], nodes[r], r);
        snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", id);
        assert_int_equal(it_call(&srv, "POST", path, body, NULL, NULL), 200);
    }
    const char *p[] = {program, id};
    sql("UPDATE runs SET command = $1 WHERE run_id = $2::uuid", 2, p, NULL, 0);
}

/* disagree - the server's row for run `id`: at step 5, record `name`, communicator `comm` of `size`, odd ranks
 * `odd`, `clear` or not. */
static void disagree(const char *id, const char *name, const char *comm, const char *size, const char *odd,
                     const char *clear)
{
    const char *p[] = {id, name, comm, size, odd, clear};
    sql("INSERT INTO consensus_divergences (run_key, step, comm_key, win, name, occ, comm_ranks, comm_size, "
        "odd_ranks, clear, site, committed_at) SELECT run_key, 5, 77, 0, $2, 3, $3::int[], $4::int, $5::int[], "
        "$6::boolean, '{\"text\": \"train_step+0x1c (train+0x4a1c)\"}', now() FROM runs WHERE run_id = $1::uuid",
        6, p, NULL, 0);
}

/* evidence - the run's evaluated class/code ("" until evaluated), after waiting up to 10 s for it. */
static void evidence(const char *id, char *out, size_t cap)
{
    const char *p[] = {id};
    for (int i = 0; i < 200; i++) {
        sql("SELECT e.class || '/' || e.reason_code FROM consensus_evidence e JOIN runs r USING (run_key) WHERE "
            "r.run_id = $1::uuid AND e.signature NOT LIKE 'wait:%'",
            1, p, out, cap);
        if (*out)
            return;
        usleep(50000);
    }
}

/* weight - the consensus weight on `node` (and `gpu`, "" for the node's own row) in run `id`, or -1 when none. */
static double weight(const char *id, const char *node, const char *gpu)
{
    char out[64];
    const char *p[] = {id, node, gpu};
    sql("SELECT coalesce(max(c.weight), -1) FROM consensus_exposures c JOIN runs r USING (run_key) WHERE r.run_id = "
        "$1::uuid AND c.node = $2 AND c.gpu = $3",
        3, p, out, sizeof(out));
    return atof(out);
}

/* weight_is - weight() polled up to 10 s until it is `want` (a manifest stored after the row re-evaluates it). */
static int weight_is(const char *id, const char *node, const char *gpu, double want)
{
    for (int i = 0; i < 200; i++) {
        if (weight(id, node, gpu) == want)
            return 1;
        usleep(50000);
    }
    char rows[2048];
    const char *p[] = {id};
    sql("SELECT string_agg(c.node || '/' || c.gpu || '=' || c.weight, ' ') || ' | ' || coalesce((SELECT e.class || "
        "'/' || e.reason_code || ': ' || e.reason FROM consensus_evidence e WHERE e.run_key = r.run_key), '') FROM "
        "runs r LEFT JOIN consensus_exposures c USING (run_key) WHERE r.run_id = $1::uuid GROUP BY r.run_key",
        1, p, rows, sizeof(rows));
    print_message("run %s: %s/%s is %g, want %g; exposures %s\n", id, node, gpu, weight(id, node, gpu), want, rows);
    return 0;
}

/* hooks - webhook posts of kind consensus whose body names run `id` (the last one's body into *last). */
static int hooks(const char *id, const char *status, json_t **last)
{
    FILE *f = fopen(hooklog, "r");
    int n = 0;
    char line[65536];
    if (last)
        *last = NULL;
    while (f && fgets(line, sizeof(line), f)) {
        json_t *o = json_loads(line, 0, NULL),
               *b = json_loads(json_string_value(json_object_get(o, "body")) ?: "", 0, NULL);
        const char *path = json_string_value(json_object_get(o, "path"));
        json_t *d = json_object_get(b, "details");
        if (path && !strcmp(path, "/hook") &&
            !strcmp(json_string_value(json_object_get(b, "kind")) ?: "", "consensus") &&
            !strcmp(json_string_value(json_object_get(d, "run_id")) ?: "", id) &&
            !strcmp(json_string_value(json_object_get(b, "status")) ?: "", status)) {
            n++;
            if (last) {
                json_decref(*last);
                *last = json_incref(b);
            }
        }
        json_decref(b);
        json_decref(o);
    }
    if (f)
        fclose(f);
    return n;
}

/* wait_hooks - hooks(), polled up to 10 s until it reaches `want`. */
static int wait_hooks(const char *id, const char *status, int want, json_t **last)
{
    int n = 0;
    for (int i = 0; i < 200 && (n = hooks(id, status, NULL)) < want; i++)
        usleep(50000);
    return last ? hooks(id, status, last) : n;
}

/* am_posts - posts to the Alertmanager endpoint that carry an alert with label run_id = `id`. */
static int am_posts(const char *id, json_t **first)
{
    FILE *f = fopen(hooklog, "r");
    int n = 0;
    char line[1 << 17];
    *first = NULL;
    while (f && fgets(line, sizeof(line), f)) {
        json_t *o = json_loads(line, 0, NULL);
        const char *path = json_string_value(json_object_get(o, "path"));
        json_t *arr = path && !strcmp(path, "/am/api/v2/alerts")
                          ? json_loads(json_string_value(json_object_get(o, "body")), 0, NULL)
                          : NULL;
        size_t i;
        json_t *a;
        json_array_foreach(
            arr, i,
            a) if (!strcmp(json_string_value(json_object_get(json_object_get(a, "labels"), "run_id")) ?: "", id))
        {
            n++;
            if (!*first)
                *first = json_incref(a);
        }
        json_decref(arr);
        json_decref(o);
    }
    if (f)
        fclose(f);
    return n;
}

static const char *label(json_t *a, const char *k)
{
    return json_string_value(json_object_get(json_object_get(a, "labels"), k)) ?: "";
}

/* One odd rank of four on n3: strong evidence against n3 and its GPU, one alert to alice and the site through every
 * sink, the same alert however often the row changes; then a third run on n3 turns it suspect and drains it, and a
 * repair resolves its consensus alerts. */
static void test_odd_rank_blames_its_node(void **state)
{
    (void)state;
    const char *nodes[] = {"c1", "c2", "c4", "c3"};
    char a[40], got[128];
    run_on(4, nodes, "train-a", 1, a);
    disagree(a, "mpi.allreduce", "{0,1,2,3}", "4", "{3}", "true");
    evidence(a, got, sizeof(got));
    assert_string_equal(got, "hardware/odd_rank");
    assert_true(weight_is(a, "c3", "GPU-c3-3", 1.0));
    assert_true(weight_is(a, "c1", "GPU-c1-0", 0.0)); /* exposed, agreed */
    json_t *hook;
    assert_int_equal(wait_hooks(a, "firing", 1, &hook), 1);
    json_t *d = json_object_get(hook, "details");
    assert_string_equal(json_string_value(json_object_get(hook, "node")), "c3");
    assert_string_equal(json_string_value(json_object_get(hook, "severity")), "critical");
    assert_string_equal(json_string_value(json_object_get(d, "gpu")), "GPU-c3-3");
    assert_int_equal(json_integer_value(json_object_get(d, "step")), 5);
    assert_string_equal(json_string_value(json_object_get(d, "name")), "mpi.allreduce");
    assert_int_equal(json_array_size(json_object_get(d, "comm_ranks")), 4);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(d, "odd_ranks"), 0)), 3);
    char url[200];
    snprintf(url, sizeof(url), "https://lockstep.example/#/runs/%s", a);
    assert_string_equal(json_string_value(json_object_get(hook, "url")), url);
    assert_non_null(strstr(json_string_value(json_object_get(hook, "text")), "train_step+0x1c"));
    json_decref(hook);
    /* Alertmanager: its labels, the run's attested user */
    json_t *am = NULL;
    for (int i = 0; i < 200 && am_posts(a, &am) < 1; i++) {
        json_decref(am);
        usleep(50000);
    }
    assert_non_null(am);
    assert_string_equal(label(am, "alertname"), "LockstepConsensusDisagreement");
    assert_string_equal(label(am, "kind"), "consensus");
    assert_string_equal(label(am, "user"), "alice");
    assert_string_equal(label(am, "node"), "c3");
    json_decref(am);
    /* mail: the owner and the site */
    char *mail = NULL;
    for (int i = 0; i < 200; i++) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "%s", maillog);
        FILE *f = fopen(cmd, "r");
        if (f) {
            static char buf[1 << 16];
            size_t n = fread(buf, 1, sizeof(buf) - 1, f);
            buf[n] = 0;
            fclose(f);
            if (strstr(buf, a)) {
                mail = buf;
                break;
            }
        }
        usleep(50000);
    }
    assert_non_null(mail);
    assert_non_null(strstr(mail, "alice@example.org"));
    assert_non_null(strstr(mail, "hpc-admins@example.org"));

    /* the row changes (its site, then the record's occurrence): evaluated again, no second alert */
    const char *p[] = {a};
    sql("UPDATE consensus_divergences SET occ = 4, site = '{\"text\": \"x+0x1\"}' WHERE run_key = (SELECT run_key "
        "FROM runs WHERE run_id = $1::uuid)",
        1, p, NULL, 0);
    char sig_before[200], sig_after[200];
    sql("SELECT lockstep_consensus_signature(run_key) FROM runs WHERE run_id = $1::uuid", 1, p, sig_before,
        sizeof(sig_before));
    for (int i = 0; i < 200; i++) {
        sql("SELECT e.signature FROM consensus_evidence e JOIN runs r USING (run_key) WHERE r.run_id = $1::uuid", 1, p,
            sig_after, sizeof(sig_after));
        if (!strcmp(sig_before, sig_after))
            break;
        usleep(50000);
    }
    assert_string_equal(sig_before, sig_after);
    usleep(500000);
    assert_int_equal(hooks(a, "firing", NULL), 1);
    char count[32];
    sql("SELECT count(*) FROM alerts WHERE kind = 'consensus' AND details->>'run_id' = $1", 1, p, count, sizeof(count));
    assert_string_equal(count, "1");

    /* two more runs whose rank 1 on c3 disagrees: c3 turns suspect and is drained */
    const char *nodes2[] = {"c1", "c3", "c2", "c4"};
    char b[40], c[40];
    run_on(4, nodes2, "train-a", 1, b);
    disagree(b, "mpi.allreduce", "{0,1,2,3}", "4", "{1}", "true");
    run_on(4, nodes2, "train-a", 1, c);
    disagree(c, "mpi.allreduce", "{0,1,2,3}", "4", "{1}", "true");
    evidence(c, got, sizeof(got));
    assert_string_equal(got, "hardware/odd_rank"); /* the same record, always on c3: that node, not software */
    json_t *n = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(n);
        assert_int_equal(it_call(&srv, "GET", "/api/v1/nodes/c3", NULL, NULL, &n), 200);
        if (!strcmp(json_string_value(json_object_get(json_object_get(n, "node"), "state")) ?: "", "suspect"))
            break;
        usleep(50000);
    }
    json_t *node = json_object_get(n, "node");
    assert_string_equal(json_string_value(json_object_get(node, "state")), "suspect");
    assert_true(json_real_value(json_object_get(node, "involvements")) >= 2.99);
    json_decref(n);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/nodes/c1", NULL, NULL, &n), 200);
    assert_string_equal(json_string_value(json_object_get(json_object_get(n, "node"), "state")), "ok");
    json_decref(n);
    char out[4096] = "";
    for (int i = 0; i < 200 && !strstr(out, "nodename=c3 state=drain"); i++) {
        FILE *f = fopen(scontrol_log, "r");
        if (f) {
            out[fread(out, 1, sizeof(out) - 1, f)] = 0;
            fclose(f);
        }
        usleep(50000);
    }
    assert_non_null(strstr(out, "nodename=c3 state=drain"));
    /* the node's history shows the consensus involvement */
    assert_int_equal(it_call(&srv, "GET", "/api/v1/nodes/c3/history?limit=200", NULL, NULL, &n), 200);
    int involved = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(n, "items"), i, ev) involved +=
        !strcmp(json_string_value(json_object_get(ev, "kind")), "involvement") &&
        strstr(json_string_value(json_object_get(ev, "detail")), "consensus: strong evidence against c3") != NULL;
    assert_true(involved >= 3);
    json_decref(n);
    /* a repair resolves the consensus alerts that blame c3: one resolution each */
    assert_int_equal(it_call(&srv, "POST", "/api/v1/nodes/c3/actions",
                             "{\"action\": \"repair\", \"reason\": \"replaced\", \"actor\": \"ops\"}", ADMIN, NULL),
                     200);
    assert_int_equal(wait_hooks(a, "resolved", 1, &hook), 1);
    assert_string_equal(json_string_value(json_object_get(hook, "resolved_reason")), "repaired");
    json_decref(hook);
    double raised = it_metric(&srv, "lockstepd_alerts_raised_total{kind=\"consensus\"}", NULL);
    assert_true(raised >= 3);
    assert_true(it_metric(&srv, "lockstep_consensus_disagreements{class=\"hardware\"}", NULL) >= 3);
}

/* No evidence from a row without a clear odd rank, nor from hardware nobody attested; a pair is weak evidence on
 * both; the same record in every run of a program on other nodes is software. */
static void test_no_evidence_without_a_clear_attested_rank(void **state)
{
    (void)state;
    const char *nodes[] = {"d1", "d2", "d3", "d4"};
    char u[40], m[40], q[40], got[128];
    run_on(4, nodes, "train-b", 0, u); /* no attestation: the manifests' own hosts do not count */
    disagree(u, "mpi.bcast", "{0,1,2,3}", "4", "{2}", "true");
    evidence(u, got, sizeof(got));
    assert_string_equal(got, "software/no_hardware");
    assert_true(weight(u, "d3", "GPU-d3-2") < 0); /* no hardware at all */
    run_on(4, nodes, "train-b", 1, m);
    disagree(m, "mpi.bcast", "{0,1,2,3}", "4", "{0,1,2,3}", "false"); /* two against two */
    evidence(m, got, sizeof(got));
    assert_string_equal(got, "inconclusive/no_majority");
    for (int r = 0; r < 4; r++) {
        char gpu[32];
        snprintf(gpu, sizeof(gpu), "GPU-%s-%d", nodes[r], r);
        assert_true(weight_is(m, nodes[r], gpu, 0.0));
    }
    const char *pair[] = {"d5", "d6"};
    run_on(2, pair, "train-c", 1, q);
    disagree(q, "mpi.allgather", "{0,1}", "2", "{0,1}", "false");
    evidence(q, got, sizeof(got));
    assert_string_equal(got, "hardware/pair");
    assert_true(weight_is(q, "d5", "GPU-d5-0", 0.5) && weight_is(q, "d6", "GPU-d6-1", 0.5));
    /* the unclear rows raise an alert (the run's results are suspect) that blames no node */
    json_t *hook;
    assert_int_equal(wait_hooks(m, "firing", 1, &hook), 1);
    assert_true(json_is_null(json_object_get(hook, "node")));
    assert_string_equal(json_string_value(json_object_get(hook, "severity")), "warning");
    json_decref(hook);

    /* program train-d: its only two runs disagree at one record, on different nodes: software, withdrawn from both */
    const char *e1[] = {"e1", "e2", "e3"}, *e2[] = {"e4", "e5", "e6"};
    char r1[40], r2[40];
    run_on(3, e1, "train-d", 1, r1);
    disagree(r1, "loss.sync", "{0,1,2}", "3", "{0}", "true");
    evidence(r1, got, sizeof(got));
    assert_string_equal(got, "hardware/odd_rank");
    assert_true(weight_is(r1, "e1", "GPU-e1-0", 1.0));
    run_on(3, e2, "train-d", 1, r2);
    disagree(r2, "loss.sync", "{0,1,2}", "3", "{0}", "true");
    evidence(r2, got, sizeof(got));
    assert_string_equal(got, "software/repeats");
    assert_true(weight_is(r1, "e1", "GPU-e1-0", 0.0)); /* the first run's evidence withdrawn */
    evidence(r1, got, sizeof(got));
    assert_string_equal(got, "software/repeats");
}

/* A row whose record name is still awaited: evidence at once, the alert when the name arrives, only one. */
static void test_alert_waits_for_the_record(void **state)
{
    (void)state;
    const char *nodes[] = {"f1", "f2", "f3"};
    char a[40], got[128];
    run_on(3, nodes, "train-e", 1, a);
    disagree(a, "", "{0,1,2}", "3", "{2}", "true");
    const char *p[] = {a};
    assert_true(weight_is(a, "f3", "GPU-f3-2", 1.0));
    usleep(600000);
    assert_int_equal(hooks(a, "firing", NULL), 0);
    sql("UPDATE consensus_divergences SET name = 'optimizer.param' WHERE run_key = (SELECT run_key FROM runs WHERE "
        "run_id = $1::uuid)",
        1, p, NULL, 0);
    evidence(a, got, sizeof(got));
    assert_string_equal(got, "hardware/odd_rank");
    json_t *hook;
    assert_int_equal(wait_hooks(a, "firing", 1, &hook), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(hook, "details"), "name")),
                        "optimizer.param");
    json_decref(hook);
    usleep(600000);
    assert_int_equal(hooks(a, "firing", NULL), 1);
}

/* checked - run `id` checked `n` consensus windows (no consensus_runs row when n < 0), its status set to `status`. */
static void checked(const char *id, const char *n, const char *status)
{
    const char *p[] = {id, n}, *ps[] = {id, status};
    if (atoi(n) >= 0)
        sql("INSERT INTO consensus_runs (run_key, checked) SELECT run_key, $2::bigint FROM runs WHERE run_id = "
            "$1::uuid",
            2, p, NULL, 0);
    sql("UPDATE runs SET status = $2 WHERE run_id = $1::uuid", 2, ps, NULL, 0);
}

/* exposures - the fleet's exposures of node (or GPU, `gpu` set) `id` once they reached `want` (polled up to 10 s),
 * else what they are then; its involvements into *k when given. */
static int exposures(const char *id, int gpu, int want, double *k)
{
    char out[64] = "";
    const char *p[] = {id};
    for (int i = 0; i < 200; i++) {
        sql(gpu ? "SELECT exposures || ' ' || involvements FROM hw_gpus WHERE uuid = $1"
                : "SELECT exposures || ' ' || involvements FROM hw_nodes WHERE name = $1",
            1, p, out, sizeof(out));
        if (atoi(out) >= want)
            break;
        usleep(50000);
    }
    if (k)
        *k = strchr(out, ' ') ? atof(strchr(out, ' ') + 1) : 0;
    return atoi(out);
}

/* rows - how many consensus_exposures rows run `id` has. */
static int rows(const char *id)
{
    char out[32];
    const char *p[] = {id};
    sql("SELECT count(*) FROM consensus_exposures c JOIN runs r USING (run_key) WHERE r.run_id = $1::uuid", 1, p, out,
        sizeof(out));
    return atoi(out);
}

/* A run that was consensus-checked and ended is an exposure of each attested node and GPU it ran on, once, an
 * agreeing run too: clean runs lower the rate of a node whose one run disagreed; a run not checked, or still running,
 * adds nothing; a run that is also in a twin group's exposures counts once. */
static void test_checked_runs_are_exposures(void **state)
{
    (void)state;
    const char *nodes[] = {"h1", "h2", "h3"};
    char a[40], got[128];
    double k;
    run_on(3, nodes, "train-f", 1, a);
    disagree(a, "mpi.allreduce", "{0,1,2}", "3", "{2}", "true");
    checked(a, "4", "ended");
    evidence(a, got, sizeof(got));
    assert_string_equal(got, "hardware/odd_rank");
    assert_int_equal(exposures("h3", 0, 1, &k), 1); /* the disagreeing run's exposure, not a second one */
    assert_true(k > 0.99);
    /* four clean checked runs: h3's rate goes from 1 in 1 to 1 in 5, on its GPU too */
    for (int i = 0; i < 4; i++) {
        char c[40];
        run_on(3, nodes, "train-f", 1, c);
        checked(c, "5", "ended");
    }
    assert_int_equal(exposures("h3", 0, 5, &k), 5);
    assert_true(k > 0.99 && k < 1.01);
    assert_int_equal(exposures("GPU-h3-2", 1, 5, NULL), 5);
    assert_int_equal(exposures("h1", 0, 5, NULL), 5);
    json_t *n;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/nodes/h3", NULL, NULL, &n), 200);
    assert_true(json_real_value(json_object_get(json_object_get(n, "node"), "rate")) < 0.21);
    json_decref(n);
    /* not checked (no windows, or no row), and checked but still running: nothing; a later run shows the pass ran */
    char none[40], zero[40], running[40], later[40];
    run_on(3, nodes, "train-f", 1, none);
    checked(none, "-1", "ended");
    run_on(3, nodes, "train-f", 1, zero);
    checked(zero, "0", "ended");
    run_on(3, nodes, "train-f", 1, running);
    checked(running, "3", "running");
    run_on(3, nodes, "train-f", 1, later);
    checked(later, "2", "failed");
    assert_int_equal(exposures("h3", 0, 6, NULL), 6);
    assert_int_equal(rows(none) + rows(zero) + rows(running), 0);
    assert_int_equal(rows(later), 3);
    checked(running, "-1", "ended"); /* it ends: its checked windows count now */
    assert_int_equal(exposures("h3", 0, 7, NULL), 7);
    /* a run in a twin group's exposures and consensus-checked: one exposure */
    char t[40], s2[40];
    run_on(3, nodes, "train-f", 1, t);
    checked(t, "1", "ended");
    assert_int_equal(exposures("h3", 0, 8, NULL), 8);
    assert_int_equal(rows(t), 3);
    const char *p[] = {t};
    sql("INSERT INTO hw_exposures (twin_group, run_key, node, gpu) SELECT 'tw-h', run_key, c.node, c.gpu FROM "
        "consensus_exposures c JOIN runs r USING (run_key) WHERE r.run_id = $1::uuid",
        1, p, NULL, 0);
    run_on(3, nodes, "train-f", 1, s2); /* the next checked run: the score read again with the twin rows */
    checked(s2, "1", "ended");
    assert_int_equal(exposures("h3", 0, 9, NULL), 9);
    usleep(600000);
    assert_int_equal(exposures("h3", 0, 9, NULL), 9);
    assert_int_equal(exposures("GPU-h3-2", 1, 9, NULL), 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_odd_rank_blames_its_node),
        cmocka_unit_test(test_no_evidence_without_a_clear_attested_rank),
        cmocka_unit_test(test_alert_waits_for_the_record),
        cmocka_unit_test(test_checked_runs_are_exposures),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
