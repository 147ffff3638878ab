/* main.c - lockstepd: wires the parts together (settings, PostgreSQL, migrations, the route table, threads) and stops
 * them in order.
 *
 * Layers, lowest first (a folder includes only its own and lower ones; tests/layout checks it):
 *   core/ (settings, state, log, metrics, threads, memory) -> rules/ and compare/ (pure rules) -> store/ and http/
 *   -> twins/ (twin comparison), consensus/ (a run against itself) and alerts/ -> replay/ (replay experiments) ->
 * fleet/ (suspects) -> api/ -> main.c docs/design.md walks a record from ls_metric to the dashboard through these
 * folders.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crypto/token.h"
#include "server/api/admin.h"
#include "server/api/effect.h"
#include "server/api/attest.h"
#include "server/api/alerts.h"
#include "server/api/consensus.h"
#include "server/api/health.h"
#include "server/api/ingest.h"
#include "server/api/narrows.h"
#include "server/api/nodes.h"
#include "server/api/runs.h"
#include "server/api/series.h"
#include "server/api/timeline.h"
#include "server/api/twin_records.h"
#include "server/api/twin_steps.h"
#include "server/api/twins.h"
#include "server/peers/forward.h"
#include "server/peers/lease.h"
#include "server/twins/compare.h"
#include "server/replay/replay_cmp.h"
#include "server/twins/absorbed.h"
#include "server/twins/cmp_mem.h"
#include "server/replay/narrow.h"
#include "server/replay/narrow_eval.h"
#include "server/replay/narrow_read.h"
#include "server/replay/verdict_alert.h"
#include "server/twins/findings.h"
#include "server/twins/step_read.h"
#include "server/twins/twin_read.h"
#include "server/consensus/cons_check.h"
#include "server/consensus/cons_read.h"
#include "server/core/config.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/alerts/alerts.h"
#include "server/alerts/alert_read.h"
#include "server/effect/effect_data.h"
#include "server/fleet/exposures.h"
#include "server/fleet/suspects.h"
#include "server/fleet/fleet_thread.h"
#include "server/fleet/set_aside.h"
#include "server/fleet/timeline.h"
#include "server/fleet/consensus.h"
#include "server/fleet/consensus_alert.h"
#include "server/fleet/divergence_alert.h"
#include "server/fleet/node_read.h"
#include "server/fleet/rescore.h"
#include "server/fleet/slurm_action.h"
#include "server/http/route.h"
#include "server/http/server.h"
#include "server/http/static.h"
#include "server/store/attest.h"
#include "server/store/convert.h"
#include "server/store/db.h"
#include "server/store/frames.h"
#include "server/store/held.h"
#include "server/store/groups.h"
#include "server/store/migrate.h"
#include "server/store/pgembed.h"
#include "server/store/retention.h"
#include "server/store/group_read.h"
#include "server/store/run_read.h"
#include "server/store/runs.h"
#include "server/store/sql.h"
#include "server/store/write.h"

#ifndef LOCKSTEP_SHARE
#define LOCKSTEP_SHARE "/usr/local/share/lockstep"
#endif

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* find_web_dir - the configured web directory, else the repo's web/ when
 * running from the build tree, else the installed share directory. */
static void find_web_dir(const srv_config *c, char *out, size_t cap)
{
    char cand[PATH_MAX], real[PATH_MAX];
    out[0] = 0;
    if (c->web_dir[0]) {
        if (!realpath(c->web_dir, real) || !is_dir(real)) {
            log_warn("web directory %s is missing; the dashboard is not served (hint: check --web-dir)", c->web_dir);
            return;
        }
        snprintf(out, cap, "%s", real);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = 0;
        char *dir = dirname(exe); /* .../build/bin or .../build/san/bin */
        static const char *const ups[] = {"/../../web", "/../../../web"};
        for (size_t i = 0; i < 2; i++) {
            snprintf(cand, sizeof(cand), "%s%s", dir, ups[i]);
            char mk[PATH_MAX + 16];
            snprintf(mk, sizeof(mk), "%s/../Makefile", cand);
            if (is_dir(cand) && access(mk, F_OK) == 0 && realpath(cand, real)) {
                snprintf(out, cap, "%s", real);
                return;
            }
        }
    }
    snprintf(cand, sizeof(cand), "%s/web", LOCKSTEP_SHARE);
    if (is_dir(cand) && realpath(cand, real))
        snprintf(out, cap, "%s", real);
}

static int load_admin_token(const char *path, char *out, size_t cap)
{
    size_t len;
    unsigned char *t = token_load_secret(path, &len);
    if (!t) {
        log_error("cannot read the admin token file %s: %s", path, strerror(errno));
        return -1;
    }
    while (len && (t[len - 1] == ' ' || t[len - 1] == '\t'))
        len--;
    if (len == 0 || len >= cap) {
        free(t);
        log_error("the admin token in %s must be 1..%zu bytes", path, cap - 1);
        return -1;
    }
    memcpy(out, t, len);
    out[len] = 0;
    free(t);
    return 0;
}

static int write_port_file(const char *path, int port)
{
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

/* configure - the settings from the command line, the log, the site secret, the admin token and the dashboard's
 * directory into g_srv. 0 to start; else 1 with the exit status in *status (0 after --help or --version, 2 on a
 * bad setting, said on stderr or in the log). */
static int configure(int argc, char **argv, int *status)
{
    char err[1024];
    cfg_defaults(&g_srv.cfg);
    int got = cfg_parse_args(&g_srv.cfg, argc, argv, err, sizeof(err));
    *status = 2;
    if (got == 1) {
        *status = 0;
        return 1;
    }
    if (got < 0) {
        fprintf(stderr, "lockstepd: bad configuration\n  detail: %s\n  hint: see lockstepd --help\n", err);
        return 1;
    }
    srv_config *c = &g_srv.cfg;
    log_set_level(c->log_level);
    if (c->log_file[0] && log_open_file(c->log_file) < 0) {
        fprintf(stderr, "lockstepd: cannot open log file %s: %s\n", c->log_file, strerror(errno));
        return 1;
    }

    if (c->secret_file[0]) {
        g_srv.secret = token_load_secret(c->secret_file, &g_srv.secret_len);
        if (!g_srv.secret) {
            log_error("cannot read the site secret %s: %s (hint: check --secret)", c->secret_file, strerror(errno));
            return 1;
        }
    } else {
        log_warn("no --secret: ingest is OPEN, any client may write any run");
    }
    if (c->admin_token_file[0] &&
        load_admin_token(c->admin_token_file, g_srv.admin_token, sizeof(g_srv.admin_token)) < 0)
        return 1;
    find_web_dir(c, g_srv.web_dir, sizeof(g_srv.web_dir));
    if (g_srv.web_dir[0])
        log_info("serving the dashboard from %s", g_srv.web_dir);
    return 0;
}

/* instance_name - this lockstepd's name in the comparison leases: its host and address when its port is fixed (a
 * restart takes its leases back at once), else its host and pid. The embedded cluster is this instance's alone. */
static const char *instance_name(const srv_config *c)
{
    static char name[128];
    char host[64] = "";
    if (gethostname(host, sizeof(host)) < 0)
        snprintf(host, sizeof(host), "lockstepd");
    host[sizeof(host) - 1] = 0;
    if (c->listen_port > 0)
        snprintf(name, sizeof(name), "%s %.48s:%d", host, c->listen_host, c->listen_port);
    else
        snprintf(name, sizeof(name), "%s pid %ld", host, (long)getpid());
    return name;
}

/* register_all - every module's prepared statements, routes and hooks. Statements and routes first: a program
 * that registers too many fails here, before it starts PostgreSQL. */
static void register_all(void)
{
    lease_register();
    fwd_register();
    store_runs_register();
    store_write_register();
    store_held_register();
    store_attest_register();
    run_read_register();
    group_read_register();
    frames_register();
    retention_register();
    cmp_register();
    cons_register();
    cons_read_register();
    findings_register();
    absorbed_register();
    step_read_register();
    twin_read_register();
    rc_register();
    exposures_register();
    suspects_register();
    divergence_alert_register();
    consensus_register();
    consensus_alert_register();
    narrow_register();
    narrow_eval_register();
    narrow_read_register();
    verdict_alert_register();
    node_read_register();
    rescore_register();
    set_aside_register();
    fleet_thread_register();
    slurm_action_register();
    alerts_register();
    alert_read_register();
    timeline_register();
    effect_data_register();
    cmp_on_divergence(fleet_notify);            /* evidence, suspects and the group's alert */
    cons_on_divergence(fleet_kick);             /* a run's consensus disagreement: evidence and alert */
    store_groups_on_set_aside(fleet_set_aside); /* a claim's runs set aside: their evidence taken back */
    api_health_register();
    api_ingest_register();
    api_runs_register();
    api_series_register();
    api_consensus_register();
    api_twins_register();
    api_twin_records_register();
    api_effect_register();
    api_twin_steps_register();
    api_nodes_register();
    api_timeline_register();
    api_alerts_register();
    api_narrows_register();
    api_admin_register();
    api_attest_register();
    route_set_fallback(web_serve, MR_STATIC);
    static const route_reads_hooks reads = {db_reads_begin, db_reads_end, db_reads_on_replica, db_read_lag};
    route_set_reads(&reads);
}

/* open_database - the database's conninfo into `conninfo`: --db's, or the embedded PostgreSQL's, started (and
 * watched, to start it again when it dies). 0, or -1 after logging (nothing left running). */
static int open_database(const srv_config *c, pg_embed *pe, char *conninfo, size_t cap)
{
    if (c->db_url[0]) {
        snprintf(conninfo, cap, "%s", c->db_url);
    } else if (pg_embed_start(pe, c, conninfo, cap) < 0) {
        return -1;
    } else if (pg_embed_watch_start(pe, c->pg_restart_max) < 0) { /* a dead cluster is started again */
        pg_embed_stop(pe);
        return -1;
    }
    db_init(conninfo);
    db_init_reads(c->read_db_url);
    return 0;
}

/* prepare_database - the schema migrated (waiting up to a minute for PostgreSQL), every statement checked
 * against it, record frames configured, the records of the row layout converted, the partitions made. 0, or -1
 * after logging when lockstepd cannot start on it. */
static int prepare_database(const char *conninfo)
{
    char err[1024];
    int migrated = -1;
    for (int i = 0; i < 60 && migrated < 0; i++) {
        migrated = db_migrate(conninfo);
        if (migrated < 0)
            sleep(1);
    }
    if (migrated < 0) {
        log_error("cannot prepare the database schema (hint: check --db and that PostgreSQL runs)");
        return -1;
    }
    /* every statement fits the schema, or lockstepd does not start; a deadlock with another lockstepd's start
     * (its partitions, its migration) is tried again */
    int prepared;
    for (int attempt = 0; (prepared = db_prepare_all(err, sizeof(err))) < 0 && sql_retry(attempt); attempt++)
        log_warn("%s; trying again", err);
    if (prepared < 0) {
        log_error("%s (hint: this lockstepd and the database's schema do not match)", err);
        return -1;
    }
    int lz4 = frames_configure();
    if (lz4 < 0)
        log_warn("cannot read how record_frames stores frames; segments are cut uncompressed");
    else
        log_info("record frames %s", lz4 ? "compressed by PostgreSQL (lz4)" : "stored uncompressed (no lz4)");
    if (store_convert_rows(conninfo) < 0) { /* records of the row layout, before migration 010 */
        log_error("cannot convert the stored records to frames (hint: see the error above; lockstepd tries again "
                  "at its next start and goes on where it stopped)");
        return -1;
    }
    if (retention_ensure_partitions(err, sizeof(err)) < 0)
        log_warn("cannot create records partitions: %s", err);
    return 0;
}

/* wait_for_stop - wait for SIGTERM or SIGINT (blocked in `set`); SIGHUP reopens the log meanwhile. */
static void wait_for_stop(const sigset_t *set)
{
    for (;;) {
        int sig = 0;
        if (sigwait(set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            if (log_reopen() < 0)
                log_error("cannot reopen the log file: %s", strerror(errno));
            else
                log_info("SIGHUP: log reopened");
            continue;
        }
        log_info("%s: finishing in-flight requests", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        return;
    }
}

int main(int argc, char **argv)
{
    char conninfo[2048];
    pg_embed pe = {0};
    int rc = 1, port = 0, status;

    xalloc_init();
    if (configure(argc, argv, &status))
        return status;
    srv_config *c = &g_srv.cfg;

    /* Signals go to the main thread only (sigwait below); every thread inherits this mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    register_all();
    if (open_database(c, &pe, conninfo, sizeof(conninfo)) < 0)
        return 1;
    if (prepare_database(conninfo) < 0)
        goto out_pg;
    lease_configure(instance_name(c), c->lease_s);
    cmp_mem_configure(c->memory_idle_s);
    if (retention_start(c->retain_days) < 0 || lease_start() < 0 || fwd_start() < 0 || cmp_start() < 0 ||
        cons_start() < 0) {
        log_error("cannot start background threads");
        goto out_threads;
    }
    if (http_start(&port) < 0)
        goto out_http;
    g_srv.port = port;
    if (fleet_start() < 0 || alert_start() < 0) { /* suspects and alert delivery (docs/suspects.md) */
        log_error("cannot start the suspects and alert threads");
        goto out_http;
    }
    log_info("listening on %s:%d (%s, %d threads, %d database workers)%s", c->listen_host, port,
             c->tls_cert[0] ? "https" : "http", c->threads, c->db_workers, c->db_url[0] ? "" : ", embedded PostgreSQL");
    if (c->port_file[0] && write_port_file(c->port_file, port) < 0)
        log_warn("cannot write port file %s: %s", c->port_file, strerror(errno));

    wait_for_stop(&set);
    rc = 0;
    /* In order: no new requests, then the database workers finish theirs (inside http_stop), then the
     * threads that read what requests wrote, then the database. */
out_http:
    http_stop(30);
    fleet_stop();
    alert_stop();
out_threads:
    cons_stop();
    cmp_stop();
    fwd_stop();
    lease_stop(); /* the leases given back: another instance compares their groups and runs at once */
    retention_stop();
out_pg:
    pg_embed_watch_stop();
    pg_embed_stop(&pe);
    free(g_srv.secret);
    if (rc == 0)
        log_info("stopped");
    return rc;
}
