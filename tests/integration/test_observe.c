/* test_observe.c - lockstepd watched by the tools sites run: the Grafana boards' queries run by a real Prometheus that
 * scrapes a real lockstepd, `promtool check metrics`, and the example Alertmanager route
 * (deploy/examples/alertmanager.yml) in a real Alertmanager sending each user their own alerts. */
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
static char dir[] = "/tmp/lsobs.XXXXXX";
static char admin_file[300];
static const char *ADMIN = "observe-admin-token";
static int job_no = 9100;

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
    if (!mkdtemp(dir))
        return -1;
    chmod(dir, 0711);
    snprintf(admin_file, sizeof(admin_file), "%s/admin", dir);
    it_write_file(admin_file, ADMIN, 0600);
    return h_pg_start(&pg);
}

static int teardown(void **state)
{
    (void)state;
    h_pg_stop(&pg);
    char cmd[100];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* tool - the path of program `name` on PATH, or NULL (the test then fails saying how to install it). */
static const char *tool(const char *name)
{
    static char found[4][512];
    static int next;
    const char *path = getenv("PATH");
    char *copy = strdup(path ? path : "/usr/bin:/bin"), *save = NULL;
    const char *hit = NULL;
    for (char *d = strtok_r(copy, ":", &save); d && !hit; d = strtok_r(NULL, ":", &save)) {
        char *slot = found[next % 4];
        snprintf(slot, sizeof(found[0]), "%s/%s", d, name);
        if (access(slot, X_OK) == 0) {
            hit = slot;
            next++;
        }
    }
    free(copy);
    if (!hit)
        fail_msg("%s is not installed (deploy/install-deps.sh installs it)", name);
    return hit;
}

/* spawn - run argv in the background, its output to `log`; its pid. */
static pid_t spawn(char *const *argv, const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "a", stdout);
        if (!f || dup2(1, 2) < 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    assert_true(pid > 0);
    return pid;
}

static void stop(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* wait_get - poll GET `url` until it answers 200 and its body holds `needle` (NULL: any), at most `seconds`;
 * 1 when it did. */
static int wait_get(const char *url, const char *needle, int seconds)
{
    for (int i = 0; i < seconds * 10; i++) {
        char *body = NULL;
        long code = h_http("GET", url, NULL, NULL, 0, NULL, &body);
        int ok = code == 200 && (!needle || (body && strstr(body, needle)));
        free(body);
        if (ok)
            return 1;
        usleep(100000);
    }
    return 0;
}

/* diverging_pair - two runs of `group` whose owner reports `reported` and slurmstepd attests as `attested` (NULL:
 * nobody), the first on nodes[0..1], the second on nodes[2..3]; rank 0 of the first flips a record at step 3. */
static void diverging_pair(const h_srv *s, const char *group, const char *reported, const char *attested,
                           const char *const *nodes)
{
    for (int run = 0; run < 2; run++) {
        char id[40], job[16], body[600], path[128];
        snprintf(job, sizeof(job), "%d", job_no++);
        snprintf(body, sizeof(body),
                 "{\"job_id\": \"%s\", \"twin_group\": \"%s\", \"ranks\": 2, \"user\": \"%s\", \"nodes\": \"%s,%s\", "
                 "\"mode\": \"det\"}",
                 job, group, reported, nodes[2 * run], nodes[2 * run + 1]);
        json_t *o = NULL;
        assert_int_equal(it_call(s, "POST", "/api/v1/runs", body, NULL, &o), 201);
        snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(o, "run_id")));
        json_decref(o);
        for (int r = 0; r < 2; r++) {
            const char *node = nodes[2 * run + r];
            if (attested) {
                snprintf(body, sizeof(body),
                         "{\"job_id\": \"%s\", \"node\": \"%s\", \"ranks\": [%d], \"user\": \"%s\"}", job, node, r,
                         attested);
                assert_int_equal(it_call(s, "POST", "/api/v1/attest", body, ADMIN, NULL), 200);
            }
            snprintf(body, sizeof(body),
                     "{\"rank\": %d, \"host\": \"localhost\", \"slurm_node\": \"%s\", \"gpus\": [{\"index\": 0, "
                     "\"uuid\": \"GPU-%s-0\", \"name\": \"TestGPU\"}]}",
                     r, node, node);
            snprintf(path, sizeof(path), "/api/v1/runs/%s/manifest", id);
            assert_int_equal(it_call(s, "POST", path, body, NULL, NULL), 200);
            uint64_t seq = 0;
            assert_int_equal(it_post_steps(s, id, r, 0, 0, 6, 4, run == 0 && r == 0 ? 3 : -1, 0, -1, -1, &seq, NULL),
                             200);
            assert_int_equal(it_end(s, id, r, NULL), 200);
        }
    }
}

/* wait_alert_of - poll until `group` has an alert whose Alertmanager delivery is `state` (NULL: any alert). */
static void wait_alert_of(const h_srv *s, const char *group, const char *state)
{
    for (int i = 0; i < 300; i++) {
        json_t *o = NULL;
        int hit = 0;
        if (it_call(s, "GET", "/api/v1/alerts?limit=1000", NULL, NULL, &o) == 200) {
            size_t k, j;
            json_t *a, *d;
            json_array_foreach(json_object_get(o, "items"), k, a)
            {
                const char *g = json_string_value(json_object_get(a, "group"));
                if (!g || strcmp(g, group))
                    continue;
                hit |= !state;
                json_array_foreach(json_object_get(a, "deliveries"), j, d) hit |=
                    state && !strcmp(json_string_value(json_object_get(d, "sink")), "alertmanager") &&
                    !strcmp(json_string_value(json_object_get(d, "state")), state);
            }
        }
        json_decref(o);
        if (hit)
            return;
        usleep(100000);
    }
    fail_msg("no alert of group %s%s%s", group, state ? " delivered to Alertmanager: " : "", state ? state : "");
}

/* grafana_check - tests/integration/grafana_check.py on `dashboard` (under deploy/grafana/, or a path) with the
 * /metrics text in `metrics`, its queries run by the Prometheus at `prom` (NULL: not); its exit status. */
static int grafana_check(const char *dashboard, const char *metrics, const char *prom)
{
    const char *src = getenv("LOCKSTEP_SRC");
    char cmd[1600];
    snprintf(cmd, sizeof(cmd), "python3 %s/tests/integration/grafana_check.py %s%s%s %s%s%s", src ? src : ".",
             strchr(dashboard, '/') ? ""
             : src                  ? src
                                    : ".",
             strchr(dashboard, '/') ? "" : "/deploy/grafana/", dashboard, metrics, prom ? " --prometheus " : "",
             prom ? prom : "");
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Both Grafana boards (deploy/grafana/) against a real Prometheus scraping a real lockstepd: every query runs and
 * returns data, every variable has a value, every metric and exact label value is in /metrics; `promtool check
 * metrics` finds nothing. Before, the fleet board did not exist and the checker only read the /metrics text: a
 * query that returns nothing passed (the checker refuses one here). */
static void test_boards_against_prometheus(void **state)
{
    (void)state;
    const char *args[] = {"--db", pg.conninfo, "--admin-token", admin_file, NULL};
    h_srv s;
    assert_int_equal(h_srv_start(&s, args), 0);
    /* a batch before the first scrape: the records route's histogram exists from Prometheus's first sample on, so
     * the batches after it make a rate */
    char run[40];
    uint64_t seq = 0;
    assert_int_equal(it_register(&s, "9000", NULL, 1, 0, NULL, run), 0);
    assert_int_equal(it_post_steps(&s, run, 0, 0, 0, 4, 5, -1, -1, -1, -1, &seq, NULL), 200);
    int pport = free_port();
    char conf[300], text[1024], data[300], log[300], listen[64], cfg_arg[400], data_arg[400], prom[128], url[300];
    snprintf(conf, sizeof(conf), "%s/prometheus.yml", dir);
    snprintf(text, sizeof(text),
             "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: lockstep\n"
             "    static_configs:\n      - targets: ['127.0.0.1:%d']\n",
             s.port);
    it_write_file(conf, text, 0644);
    snprintf(data, sizeof(data), "%s/tsdb", dir);
    snprintf(log, sizeof(log), "%s/prometheus.log", dir);
    snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", pport);
    snprintf(cfg_arg, sizeof(cfg_arg), "--config.file=%s", conf);
    snprintf(data_arg, sizeof(data_arg), "--storage.tsdb.path=%s", data);
    char *pargv[] = {(char *)tool("prometheus"), cfg_arg, data_arg, listen, NULL};
    pid_t p = spawn(pargv, log);
    snprintf(prom, sizeof(prom), "http://127.0.0.1:%d", pport);
    snprintf(url, sizeof(url), "%s/api/v1/query?query=up", prom);
    assert_true(wait_get(url, "\"value\":[", 60)); /* scraped once: the counters' first samples */

    /* what the boards show: ingest, a divergence on attested nodes (scores, states, exposures), its alert */
    const char *nodes[] = {"g1", "g2", "g3", "g4"};
    diverging_pair(&s, "board-pair", "alice", "alice", nodes);
    wait_alert_of(&s, "board-pair", NULL);
    for (int i = 0; i < 100 && it_metric(&s, "lockstep_node_runs{node=\"g4\"}", NULL) < 1; i++)
        usleep(100000);
    assert_true(it_metric(&s, "lockstep_node_score{node=\"g1\"}", NULL) >= 0);
    assert_true(it_metric(&s, "lockstep_node_state{node=\"g1\",state=\"ok\"}", NULL) == 1);
    assert_true(it_metric(&s, "lockstep_diverged_groups{class=\"hardware\"}", NULL) == 1);
    assert_true(it_metric(&s, "lockstepd_alerts_raised_total{kind=\"divergence\"}", NULL) == 1);
    sleep(4); /* a few scrapes with it */

    char *m = NULL, mpath[300], cmd[700];
    snprintf(url, sizeof(url), "%s/metrics", s.base);
    assert_int_equal(h_http("GET", url, NULL, NULL, 0, NULL, &m), 200);
    snprintf(mpath, sizeof(mpath), "%s/metrics.txt", dir);
    it_write_file(mpath, m, 0644);
    free(m);
    snprintf(cmd, sizeof(cmd), "%s check metrics < %s", tool("promtool"), mpath);
    assert_int_equal(system(cmd), 0);

    assert_int_equal(grafana_check("lockstep.json", mpath, prom), 0);
    assert_int_equal(grafana_check("lockstep-fleet.json", mpath, prom), 0);
    /* a query that runs but returns nothing (no request failed), and a board whose uid names nothing it must chart:
     * both refused */
    char bad[300];
    snprintf(bad, sizeof(bad), "%s/bad.json", dir);
    snprintf(cmd, sizeof(cmd),
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "d[\"panels\"][1][\"targets\"][0][\"expr\"]=\"sum(rate(lockstepd_http_requests_total{code=~\\\"5xx\\\"}["
             "5m]))\"; "
             "json.dump(d, open(sys.argv[2], \"w\"))' %s/deploy/grafana/lockstep-fleet.json %s",
             getenv("LOCKSTEP_SRC") ? getenv("LOCKSTEP_SRC") : ".", bad);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(grafana_check(bad, mpath, NULL), 0); /* the /metrics text alone cannot tell */
    assert_int_equal(grafana_check(bad, mpath, prom), 1);
    /* a metric lockstepd does not have, and a label value it never uses: refused by the /metrics text already */
    static const char *const wrong[] = {
        "rate(lockstepd_records_lost_total[5m])",
        "rate(lockstepd_batches_total{result=\\\"lost\\\"}[5m])",
    };
    for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
        snprintf(cmd, sizeof(cmd),
                 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                 "d[\"panels\"][1][\"targets\"][0][\"expr\"]=sys.argv[2]; "
                 "json.dump(d, open(sys.argv[3], \"w\"))' %s/deploy/grafana/lockstep.json \"%s\" %s",
                 getenv("LOCKSTEP_SRC") ? getenv("LOCKSTEP_SRC") : ".", wrong[i], bad);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(grafana_check(bad, mpath, NULL), 1);
    }
    stop(p);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
}

/* mails_to - how many mails the sink took for `rcpt` whose text holds `needle`. */
static int mails_to(const char *out, const char *rcpt, const char *needle)
{
    FILE *f = fopen(out, "r");
    if (!f)
        return 0;
    static char line[1 << 20];
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        json_t *o = json_loads(line, 0, NULL);
        size_t i;
        json_t *to;
        int mine = 0;
        json_array_foreach(json_object_get(o, "to"), i, to) mine |= !strcmp(json_string_value(to), rcpt);
        const char *d = json_string_value(json_object_get(o, "data"));
        n += mine && d && strstr(d, needle);
        json_decref(o);
    }
    fclose(f);
    return n;
}

/* replace_in - replace `from` with `to` in the text `t` (at most `cap` bytes) once; fail when it is not there. */
static void replace_in(char *t, size_t cap, const char *from, const char *to)
{
    char *at = strstr(t, from);
    if (!at)
        fail_msg("deploy/examples/alertmanager.yml no longer has \"%s\"", from);
    size_t fl = strlen(from), tl = strlen(to), rest = strlen(at + fl);
    assert_true(strlen(t) - fl + tl < cap);
    memmove(at + tl, at + fl, rest + 1);
    memcpy(at, to, tl);
}

/* The example route (deploy/examples/alertmanager.yml) in a real Alertmanager fed by a real lockstepd: alice's
 * group's alert reaches alice only, bob's bob only, and a group whose owner only reported a name ("carol") reaches
 * the admins, never carol. Before, alerts had no user label: no route could tell whose they were. */
static void test_alertmanager_routes_to_owners(void **state)
{
    (void)state;
    const char *src = getenv("LOCKSTEP_SRC");
    char path[400], cfg[8192], conf[300], out[300], log[300], smtp[64], listen[64], cfg_arg[400], store[400];
    int sport = free_port(), aport = free_port();
    snprintf(path, sizeof(path), "%s/deploy/examples/alertmanager.yml", src ? src : ".");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(cfg, 1, sizeof(cfg) - 1024, f);
    fclose(f);
    cfg[n] = 0;
    snprintf(smtp, sizeof(smtp), "127.0.0.1:%d", sport);
    replace_in(cfg, sizeof(cfg), "smtp.example.org:25", smtp);
    replace_in(cfg, sizeof(cfg), "smtp_require_tls: true", "smtp_require_tls: false");
    replace_in(cfg, sizeof(cfg), "group_wait: 30s", "group_wait: 1s");
    replace_in(cfg, sizeof(cfg), "group_interval: 5m", "group_interval: 2s");
    snprintf(conf, sizeof(conf), "%s/alertmanager.yml", dir);
    it_write_file(conf, cfg, 0644);
    char check[700];
    snprintf(check, sizeof(check), "%s check-config %s >/dev/null", tool("amtool"), conf);
    assert_int_equal(system(check), 0);

    snprintf(out, sizeof(out), "%s/mail.jsonl", dir);
    snprintf(log, sizeof(log), "%s/smtp.log", dir);
    char sink[400], sport_s[16];
    snprintf(sink, sizeof(sink), "%s/tests/integration/smtp_sink.py", src ? src : ".");
    snprintf(sport_s, sizeof(sport_s), "%d", sport);
    char *sargv[] = {(char *)tool("python3"), sink, sport_s, out, NULL};
    pid_t sp = spawn(sargv, log);
    snprintf(log, sizeof(log), "%s/alertmanager.log", dir);
    snprintf(cfg_arg, sizeof(cfg_arg), "--config.file=%s", conf);
    snprintf(store, sizeof(store), "--storage.path=%s/am", dir);
    snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", aport);
    char *aargv[] = {
        (char *)tool("prometheus-alertmanager"), cfg_arg, store, listen, "--cluster.listen-address=", NULL};
    pid_t ap = spawn(aargv, log);
    char url[200];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/-/ready", aport);
    assert_true(wait_get(url, NULL, 60));

    char lconf[300], text[1024];
    snprintf(lconf, sizeof(lconf), "%s/lockstepd.conf", dir);
    snprintf(text, sizeof(text),
             "alert_alertmanager_url = http://127.0.0.1:%d\nalert_resend_s = 2\ncluster = obs\n"
             "public_url = https://lockstep.example/\nsuspects_interval_ms = 200\n",
             aport);
    it_write_file(lconf, text, 0644);
    const char *args[] = {"--db", pg.conninfo, "--admin-token", admin_file, "--config", lconf, NULL};
    h_srv s;
    assert_int_equal(h_srv_start(&s, args), 0);
    const char *na[] = {"a1", "a2", "a3", "a4"}, *nb[] = {"b1", "b2", "b3", "b4"}, *nc[] = {"c1", "c2", "c3", "c4"};
    diverging_pair(&s, "own-a", "alice", "alice", na);
    diverging_pair(&s, "own-b", "bob", "bob", nb);
    diverging_pair(&s, "own-c", "carol", NULL, nc); /* carol only reported her name */
    wait_alert_of(&s, "own-a", "delivered");
    wait_alert_of(&s, "own-b", "delivered");
    wait_alert_of(&s, "own-c", "delivered");
    int ok = 0;
    for (int i = 0; i < 300 && !ok; i++) {
        ok = mails_to(out, "alice@example.org", "own-a") > 0 && mails_to(out, "bob@example.org", "own-b") > 0 &&
             mails_to(out, "hpc-admins@example.org", "own-c") > 0;
        if (!ok)
            usleep(100000);
    }
    if (!ok)
        fail_msg("mail: alice %d, bob %d, admins %d (Alertmanager's log: %s)",
                 mails_to(out, "alice@example.org", "own-a"), mails_to(out, "bob@example.org", "own-b"),
                 mails_to(out, "hpc-admins@example.org", "own-c"), log);
    /* each owner got their own alerts only; the admins none of theirs; nobody mailed carol */
    assert_int_equal(mails_to(out, "alice@example.org", "own-b"), 0);
    assert_int_equal(mails_to(out, "alice@example.org", "own-c"), 0);
    assert_int_equal(mails_to(out, "bob@example.org", "own-a"), 0);
    assert_int_equal(mails_to(out, "hpc-admins@example.org", "own-a"), 0);
    assert_int_equal(mails_to(out, "hpc-admins@example.org", "own-b"), 0);
    assert_int_equal(mails_to(out, "carol@example.org", ""), 0);
    /* what the mail shows: the summary, the one-line description and the dashboard link */
    assert_true(mails_to(out, "alice@example.org", "twin group own-a diverged at step 3") > 0);
    assert_true(mails_to(out, "alice@example.org", "https://lockstep.example/#/twins/own-a") > 0);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
    stop(ap);
    stop(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boards_against_prometheus),
        cmocka_unit_test(test_alertmanager_routes_to_owners),
    };
    return cmocka_run_group_tests_name("observe", tests, setup, teardown);
}
