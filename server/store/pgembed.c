/* pgembed.c - the embedded PostgreSQL cluster: initdb + pg_ctl under the state directory, unix socket only. */
#include "server/store/pgembed.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <libpq-fe.h>

#include "common/fsutil.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/worker.h"

#define PG_START_RETRY_S 60 /* a cluster not ready at start is tried again this long (docs/server.md) */

/* run_tool - run argv as pe's user with stdout and stderr appended to the
 * cluster log; returns the exit status, or -1 when it could not run. */
static int run_tool(const pg_embed *pe, char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(pe->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            if (pe->uid != (uid_t)-1 && fchown(fd, pe->uid, pe->gid) < 0) {
                /* the log stays ours; PostgreSQL's own log goes elsewhere */
            }
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            dup2(devnull, 0);
            close(devnull);
        }
        if (pe->uid != (uid_t)-1) {
            if (setgroups(0, NULL) < 0 || setgid(pe->gid) < 0 || setuid(pe->uid) < 0)
                _exit(126);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int own_dir(const pg_embed *pe, const char *dir, mode_t mode)
{
    if (fs_mkdir_p(dir) < 0)
        return -1;
    if (pe->uid != (uid_t)-1 && chown(dir, pe->uid, pe->gid) < 0)
        return -1;
    return chmod(dir, mode);
}

static int append_conf(const pg_embed *pe)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/postgresql.conf", pe->data_dir);
    FILE *f = fopen(path, "a");
    if (!f)
        return -1;
    fprintf(f,
            "\n# lockstepd: embedded cluster, unix socket only\n"
            "listen_addresses = ''\n"
            "unix_socket_directories = '%s'\n"
            "max_connections = 200\n"
            "shared_buffers = 256MB\n"
            "max_wal_size = 4GB\n"
            "checkpoint_timeout = 15min\n"
            "wal_buffers = 16MB\n"
            "track_commit_timestamp = on\n" /* the detection latency counts from a batch's real commit */
            "logging_collector = off\n",
            pe->sock_dir);
    return fclose(f);
}

/* create_database - the lockstep database, unless it exists. Returns 0, or -1 (logged when `loud`: the first
 * try; the caller tries again). */
static int create_database(const char *sock_dir, int loud)
{
    char ci[1300];
    snprintf(ci, sizeof(ci), "host=%s dbname=postgres user=lockstep", sock_dir);
    PGconn *c = PQconnectdb(ci);
    int rc = -1;
    if (PQstatus(c) != CONNECTION_OK) {
        if (loud)
            log_warn("cannot connect to the embedded PostgreSQL: %s", PQerrorMessage(c));
        goto out_finish;
    }
    PGresult *r = PQexec(c, "select 1 from pg_database where datname = 'lockstep'");
    int exists = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    if (!exists) {
        r = PQexec(c, "create database lockstep");
        if (PQresultStatus(r) != PGRES_COMMAND_OK && !strstr(PQresultErrorMessage(r), "already exists")) {
            log_error("cannot create the lockstep database: %s", PQresultErrorMessage(r));
            PQclear(r);
            goto out_finish;
        }
        PQclear(r);
    }
    rc = 0;
out_finish:
    PQfinish(c);
    return rc;
}

/* ---- is the cluster alive: its postmaster, and any process still working in its data directory */

/* works_in - whether live process `pid` works in directory `dir` (its cwd is `dir`, as every PostgreSQL process
 * of a cluster has its data directory): 1 yes, 0 no, -1 when it cannot be told (no /proc, not ours to read). */
static int works_in(long pid, const char *dir)
{
    char path[64], cwd[1200];
    snprintf(path, sizeof(path), "/proc/%ld/cwd", pid);
    ssize_t n = readlink(path, cwd, sizeof(cwd) - 1);
    if (n < 0)
        return errno == ENOENT ? 0 : -1;
    cwd[n] = 0;
    return !strcmp(cwd, dir);
}

/* zombie - whether process `pid` is dead and not yet reaped (left to a parent that does not reap). */
static int zombie(long pid)
{
    char path[64], stat[256];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(stat, sizeof(stat), f) != NULL;
    fclose(f);
    const char *close_paren = ok ? strrchr(stat, ')') : NULL;
    return close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

/* postmaster_pid - the pid postmaster.pid names, or 0 when there is none. */
static long postmaster_pid(const pg_embed *pe)
{
    char path[1200], line[64];
    snprintf(path, sizeof(path), "%s/postmaster.pid", pe->data_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    long pid = ok ? strtol(line, NULL, 10) : 0;
    return pid > 0 ? pid : 0;
}

/* postmaster_alive - whether the postmaster named in the cluster's postmaster.pid runs: a process of that pid
 * that is not a zombie (a postmaster killed with lockstepd, left to a PID 1 that does not reap, still answers
 * kill(pid, 0)) and that works in the data directory (the pid was not taken by another program since). */
static int postmaster_alive(const pg_embed *pe)
{
    long pid = postmaster_pid(pe);
    if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH) || zombie(pid))
        return 0;
    char real[PATH_MAX];
    return !realpath(pe->data_dir, real) || works_in(pid, real) != 0;
}

/* cluster_busy - whether a live process still works in the data directory (a backend of a dead postmaster on
 * its way out): PostgreSQL must not start over it. 0 when /proc cannot tell. */
static int cluster_busy(const pg_embed *pe)
{
    char real[PATH_MAX];
    DIR *d = realpath(pe->data_dir, real) ? opendir("/proc") : NULL;
    if (!d)
        return 0;
    int busy = 0;
    for (struct dirent *e = readdir(d); e && !busy; e = readdir(d)) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        busy = pid > 0 && !*end && pid != (long)getpid() && works_in(pid, real) == 1 && !zombie(pid);
    }
    closedir(d);
    return busy;
}

/* remove_socket_locks - the socket lock files (.s.PGSQL.PORT.lock) in `dir`: a dead postmaster's, which
 * PostgreSQL would take for a live one's as it does its postmaster.pid. */
static void remove_socket_locks(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, ".s.PGSQL.", 9) || n < 5 || strcmp(e->d_name + n - 5, ".lock"))
            continue;
        char path[1400];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* start_cluster - pg_ctl start, waiting up to `timeout_s`. A postmaster.pid left by a postmaster that is gone (no
 * process works in the data directory any more) is removed first: PostgreSQL takes a zombie's pid for a live
 * postmaster and refuses to start. Returns 0 when it runs, -1 when it did not start (or the dead cluster's
 * processes are still on their way out: try again). */
static int start_cluster(const pg_embed *pe, int timeout_s)
{
    long stale = postmaster_pid(pe);
    if (stale) {
        if (cluster_busy(pe))
            return -1;
        char path[1200];
        snprintf(path, sizeof(path), "%s/postmaster.pid", pe->data_dir);
        if (unlink(path) == 0)
            log_warn("removed %s: postmaster %ld is gone (killed with lockstepd?) and nothing works in the data "
                     "directory any more",
                     path, stale);
        remove_socket_locks(pe->sock_dir); /* they name the dead postmaster too */
    }
    char dflag[1200], lflag[1200], tflag[32];
    snprintf(dflag, sizeof(dflag), "--pgdata=%s", pe->data_dir);
    snprintf(lflag, sizeof(lflag), "--log=%s/server.log", pe->data_dir);
    snprintf(tflag, sizeof(tflag), "--timeout=%d", timeout_s);
    char *argv[] = {(char *)pe->pg_ctl, "start", dflag, lflag, "--wait", tflag, NULL};
    return run_tool(pe, argv) == 0 ? 0 : -1;
}

/* unreachable_parent - -1 (logged) when user `uid` cannot search some
 * directory above `dir`, which PostgreSQL needs to reach its data. */
static int unreachable_parent(const char *dir, uid_t uid, gid_t gid)
{
    char path[PATH_MAX];
    if (!realpath(dir, path))
        return 0;
    for (char *slash = strrchr(path, '/'); slash && slash != path; slash = strrchr(path, '/')) {
        *slash = 0;
        struct stat st;
        if (stat(path, &st) < 0)
            continue;
        int ok = st.st_uid == uid   ? (st.st_mode & S_IXUSR)
                 : st.st_gid == gid ? (st.st_mode & S_IXGRP)
                                    : (st.st_mode & S_IXOTH);
        if (!ok) {
            log_error("the embedded PostgreSQL runs as uid %u, which cannot enter %s (hint: chmod o+x %s, or "
                      "choose another --state-dir)",
                      (unsigned)uid, path, path);
            return -1;
        }
    }
    return 0;
}

/* bring_up - adopt the cluster when its postmaster lives, else start it, and create the lockstep database; a
 * cluster that is not ready (a dead one's processes on their way out, crash recovery, a refused connection) is
 * tried again every second for PG_START_RETRY_S, as a database that is not reachable at start is. Returns 0, or
 * -1 after logging (a cluster it started is stopped again). */
static int bring_up(pg_embed *pe)
{
    double deadline = clock_mono_s() + PG_START_RETRY_S;
    for (int attempt = 1;; attempt++) {
        int up;
        if (postmaster_alive(pe)) {
            if (!pe->started)
                log_info("adopting the embedded PostgreSQL already running in %s", pe->data_dir);
            up = 1;
        } else {
            up = start_cluster(pe, 120) == 0;
            if (up)
                log_info("embedded PostgreSQL started (socket in %s)", pe->sock_dir);
        }
        pe->started |= up;
        if (up && create_database(pe->sock_dir, attempt == 1) == 0)
            return 0;
        if (clock_mono_s() >= deadline) {
            log_error("the embedded PostgreSQL in %s is not ready after %d s (hint: see %s/server.log and %s)",
                      pe->data_dir, PG_START_RETRY_S, pe->data_dir, pe->log_path);
            pg_embed_stop(pe);
            return -1;
        }
        if (attempt == 1)
            log_warn("the embedded PostgreSQL in %s is not ready; trying again every second for %d s", pe->data_dir,
                     PG_START_RETRY_S);
        sleep(1);
    }
}

int pg_embed_start(pg_embed *pe, const srv_config *c, char *conninfo, size_t cap)
{
    memset(pe, 0, sizeof(*pe));
    pe->uid = (uid_t)-1;
    pe->gid = (gid_t)-1;
    /* The cluster's paths are absolute: pg_ctl and PostgreSQL run from their own directories, where a relative
     * --state-dir would name something else. */
    char dir[1024], cwd[1024];
    if (c->state_dir[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
        log_error("cannot resolve the state directory %s: %s (hint: give --state-dir an absolute path)", c->state_dir,
                  strerror(errno));
        return -1;
    }
    int dn = c->state_dir[0] == '/' ? snprintf(dir, sizeof(dir), "%s", c->state_dir)
                                    : snprintf(dir, sizeof(dir), "%s/%s", cwd, c->state_dir);
    if (dn < 0 || (size_t)dn >= sizeof(dir)) {
        log_error("state directory path is too long: %s (hint: use a shorter --state-dir)", c->state_dir);
        return -1;
    }
    snprintf(pe->data_dir, sizeof(pe->data_dir), "%s/pgdata", dir);
    snprintf(pe->sock_dir, sizeof(pe->sock_dir), "%s/pgsock", dir);
    snprintf(pe->log_path, sizeof(pe->log_path), "%s/postgresql.log", dir);
    snprintf(pe->pg_ctl, sizeof(pe->pg_ctl), "%s/pg_ctl", c->pg_bin);
    if (strlen(pe->sock_dir) + sizeof("/.s.PGSQL.5432") > 107) {
        log_error("state directory path is too long for a unix socket: %s (hint: use a shorter --state-dir)",
                  pe->sock_dir);
        return -1;
    }
    if (access(pe->pg_ctl, X_OK) < 0) {
        log_error("PostgreSQL server binaries not found: %s (hint: install postgresql-15, set pg_bin, or pass --db)",
                  pe->pg_ctl);
        return -1;
    }
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam(c->pg_user);
        if (!pw) {
            log_error("PostgreSQL refuses to run as root and user \"%s\" does not exist (hint: set pg_user)",
                      c->pg_user);
            return -1;
        }
        pe->uid = pw->pw_uid;
        pe->gid = pw->pw_gid;
    }
    if (fs_mkdir_p(dir) < 0) {
        log_error("cannot create state directory %s: %s", dir, strerror(errno));
        return -1;
    }
    struct stat st;
    if (pe->uid != (uid_t)-1 && stat(dir, &st) == 0 && !(st.st_mode & S_IXOTH))
        chmod(dir, st.st_mode | S_IXOTH); /* let the cluster's user reach its directories */
    if (pe->uid != (uid_t)-1 && unreachable_parent(dir, pe->uid, pe->gid) < 0)
        return -1;
    int fd = open(pe->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        if (pe->uid != (uid_t)-1 && fchown(fd, pe->uid, pe->gid) < 0)
            log_warn("cannot hand %s to the cluster's user: %s", pe->log_path, strerror(errno));
        close(fd);
    }
    if (own_dir(pe, pe->sock_dir, 0700) < 0) {
        log_error("cannot prepare %s: %s", pe->sock_dir, strerror(errno));
        return -1;
    }

    char version[1200];
    snprintf(version, sizeof(version), "%s/PG_VERSION", pe->data_dir);
    if (access(version, F_OK) < 0) {
        if (own_dir(pe, pe->data_dir, 0700) < 0) {
            log_error("cannot prepare %s: %s", pe->data_dir, strerror(errno));
            return -1;
        }
        char initdb[1100], dflag[1200];
        snprintf(initdb, sizeof(initdb), "%s/initdb", c->pg_bin);
        snprintf(dflag, sizeof(dflag), "--pgdata=%s", pe->data_dir);
        char *argv[] = {initdb, dflag, "--username=lockstep", "--auth=trust", "--encoding=UTF8", "--locale=C", NULL};
        log_info("initializing the embedded PostgreSQL cluster in %s", pe->data_dir);
        if (run_tool(pe, argv) != 0) {
            log_error("initdb failed (see %s)", pe->log_path);
            return -1;
        }
        if (append_conf(pe) < 0) {
            log_error("cannot write %s/postgresql.conf: %s", pe->data_dir, strerror(errno));
            return -1;
        }
    }

    if (bring_up(pe) < 0)
        return -1;
    snprintf(conninfo, cap, "host=%s dbname=lockstep user=lockstep", pe->sock_dir);
    return 0;
}

void pg_embed_stop(pg_embed *pe)
{
    if (!pe->started)
        return;
    char dflag[1200];
    snprintf(dflag, sizeof(dflag), "--pgdata=%s", pe->data_dir);
    char *argv[] = {pe->pg_ctl, "stop", dflag, "--mode=fast", "--wait", "--timeout=60", NULL};
    if (run_tool(pe, argv) != 0)
        log_warn("pg_ctl stop failed (see %s)", pe->log_path);
    else
        log_info("embedded PostgreSQL stopped");
    pe->started = 0;
}

/* ---- the watch: bring a dead embedded PostgreSQL back */

static void watch_loop(worker *w);
static worker watch = WORKER_INIT("embedded PostgreSQL watch", watch_loop);
static pg_embed *watched;
static int watch_max;
static pg_embed_status status = {0, "up", 0, 0, 0}; /* under watch.lock */

/* restart - pg_ctl start once (a postmaster.pid left by a dead postmaster removed first); 0 when it runs again. */
static int restart(const pg_embed *pe)
{
    return start_cluster(pe, 60);
}

static void watch_loop(worker *w)
{
    int tries = 0;
    double backoff = 1, next_try = 0;
    for (;;) {
        worker_lock(w);
        int stop = worker_wait_locked(w, 1.0);
        worker_unlock(w);
        if (stop)
            return;
        if (postmaster_alive(watched)) {
            if (tries) {
                tries = 0;
                backoff = 1;
            }
            continue;
        }
        worker_lock(w);
        int gave_up = !strcmp(status.state, "failed");
        if (!gave_up && strcmp(status.state, "restarting")) {
            status.state = "restarting";
            metrics_pg_up(0);
            log_error("the embedded PostgreSQL in %s is not running; starting it again", watched->data_dir);
        }
        worker_unlock(w);
        if (gave_up || clock_mono_s() < next_try)
            continue;
        int ok = restart(watched) == 0;
        worker_lock(w);
        if (ok) {
            status.state = "up";
            status.restarts++;
            status.last_restart = clock_wall_s();
            metrics_pg_restart();
            metrics_pg_up(1);
            log_info("the embedded PostgreSQL runs again (restart %ld)", status.restarts);
            tries = 0;
            backoff = 1;
        } else {
            status.failures++;
            tries++;
            if (watch_max > 0 && tries >= watch_max) {
                status.state = "failed";
                log_error("the embedded PostgreSQL did not start in %d tries; giving up (hint: see %s and "
                          "%s/server.log, then restart lockstepd)",
                          tries, watched->log_path, watched->data_dir);
            } else {
                log_warn("the embedded PostgreSQL did not start (try %d); trying again in %.0f s", tries, backoff);
                next_try = clock_mono_s() + backoff;
                backoff = backoff * 2 > 30 ? 30 : backoff * 2;
            }
        }
        worker_unlock(w);
    }
}

int pg_embed_watch_start(pg_embed *pe, int max_tries)
{
    watched = pe;
    watch_max = max_tries;
    worker_lock(&watch);
    status.watched = 1;
    status.state = "up";
    worker_unlock(&watch);
    metrics_pg_up(1);
    return worker_start(&watch, 1);
}

void pg_embed_watch_stop(void)
{
    worker_stop(&watch);
}

void pg_embed_status_get(pg_embed_status *out)
{
    worker_lock(&watch);
    *out = status;
    worker_unlock(&watch);
}
