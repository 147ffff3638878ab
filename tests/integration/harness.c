/* harness.c - what lockstepd's integration tests and bench/ingest share: a private PostgreSQL, lockstepd processes,
 * HTTP calls, batches. */
#include "tests/integration/harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#define PG_BIN "/usr/lib/postgresql/15/bin"

double h_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(fd, (struct sockaddr *)&a, &l) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* run_as_pg - run argv as postgres when we are root, output to `log`. */
static int run_as_pg(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0666);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        if (geteuid() == 0) {
            struct passwd *pw = getpwnam("postgres");
            if (!pw || setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
                _exit(126);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void chown_pg(const char *path)
{
    struct passwd *pw = getpwnam("postgres");
    if (geteuid() == 0 && pw && chown(path, pw->pw_uid, pw->pw_gid) < 0)
        perror(path);
}

int h_pg_ctl(h_pg *pg, const char *action)
{
    char data[300], log[300], opts[200];
    snprintf(data, sizeof(data), "--pgdata=%s/data", pg->dir);
    snprintf(log, sizeof(log), "--log=%s/server.log", pg->dir);
    snprintf(opts, sizeof(opts), "-o -p %d", pg->port);
    char *argv[] = {PG_BIN "/pg_ctl", (char *)action, data, log, opts, "--wait", "--mode=fast", NULL};
    char out[300];
    snprintf(out, sizeof(out), "%s/pg_ctl.log", pg->dir);
    return run_as_pg(argv, out);
}

/* Clusters started and not yet stopped: stopped at exit (a failed group
 * setup skips its teardown). The h_pg structs must outlive main. */
static h_pg *live_pg[8];

static void live_pg_stop_all(void)
{
    for (int i = 0; i < 8; i++)
        if (live_pg[i] && live_pg[i]->dir[0])
            h_pg_stop(live_pg[i]);
}

/* pg_new - `pg` as a cluster to be: remembered to stop at exit, a new temp dir postgres owns, a free port. 0 or -1. */
static int pg_new(h_pg *pg)
{
    static int registered;
    if (!registered) {
        atexit(live_pg_stop_all);
        registered = 1;
    }
    memset(pg, 0, sizeof(*pg));
    for (int i = 0; i < 8; i++)
        if (!live_pg[i] || live_pg[i] == pg) {
            live_pg[i] = pg;
            break;
        }
    snprintf(pg->dir, sizeof(pg->dir), "/tmp/lspg.XXXXXX");
    if (!mkdtemp(pg->dir))
        return -1;
    chmod(pg->dir, 0711);
    chown_pg(pg->dir);
    pg->port = free_port();
    return 0;
}

int h_pg_start(h_pg *pg)
{
    if (pg_new(pg) < 0)
        return -1;
    char data[300], initlog[300];
    snprintf(data, sizeof(data), "--pgdata=%s/data", pg->dir);
    snprintf(initlog, sizeof(initlog), "%s/initdb.log", pg->dir);
    char *argv[] = {PG_BIN "/initdb",  data,         "--username=lockstep", "--auth=trust",
                    "--encoding=UTF8", "--locale=C", "--no-sync",           NULL};
    if (run_as_pg(argv, initlog) != 0) {
        fprintf(stderr, "harness: initdb failed, see %s\n", initlog);
        return -1;
    }
    char conf[300];
    snprintf(conf, sizeof(conf), "%s/data/postgresql.conf", pg->dir);
    FILE *f = fopen(conf, "a");
    if (!f)
        return -1;
    fprintf(f,
            "listen_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nfsync = off\n"
            "max_connections = 200\nshared_buffers = 128MB\n",
            pg->dir);
    fclose(f);
    if (h_pg_ctl(pg, "start") != 0) {
        fprintf(stderr, "harness: pg_ctl start failed, see %s/server.log\n", pg->dir);
        return -1;
    }
    snprintf(pg->conninfo, sizeof(pg->conninfo), "host=127.0.0.1 port=%d dbname=postgres user=lockstep", pg->port);
    return 0;
}

int h_pg_standby(const h_pg *primary, h_pg *standby, const char *name)
{
    if (pg_new(standby) < 0)
        return -1;
    char data[300], port[16], log[300];
    snprintf(data, sizeof(data), "--pgdata=%s/data", standby->dir);
    snprintf(port, sizeof(port), "--port=%d", primary->port);
    snprintf(log, sizeof(log), "%s/basebackup.log", standby->dir);
    char *argv[] = {PG_BIN "/pg_basebackup",
                    data,
                    "--host=127.0.0.1",
                    port,
                    "--username=lockstep",
                    "--wal-method=stream",
                    "--checkpoint=fast",
                    "--no-sync",
                    NULL};
    if (run_as_pg(argv, log) != 0) {
        fprintf(stderr, "harness: pg_basebackup failed, see %s\n", log);
        return -1;
    }
    char path[300];
    snprintf(path, sizeof(path), "%s/data/standby.signal", standby->dir);
    FILE *f = fopen(path, "w");
    if (!f || fclose(f) != 0)
        return -1;
    chown_pg(path);
    snprintf(path, sizeof(path), "%s/data/postgresql.conf", standby->dir);
    f = fopen(path, "a");
    if (!f)
        return -1;
    fprintf(f,
            "unix_socket_directories = '%s'\nhot_standby = on\n"
            "primary_conninfo = 'host=127.0.0.1 port=%d user=lockstep application_name=%s'\n",
            standby->dir, primary->port, name);
    fclose(f);
    if (h_pg_ctl(standby, "start") != 0) {
        fprintf(stderr, "harness: the standby did not start, see %s/server.log\n", standby->dir);
        return -1;
    }
    snprintf(standby->conninfo, sizeof(standby->conninfo), "host=127.0.0.1 port=%d dbname=postgres user=lockstep",
             standby->port);
    return 0;
}

/* pid_gone - 1 once process `pid` is gone or a zombie. */
static int pid_gone(pid_t pid)
{
    char path[64], st[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    int zombie = fgets(st, sizeof(st), f) && strstr(st, ") Z ");
    fclose(f);
    return zombie;
}

int h_pg_crash(h_pg *pg)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/data/postmaster.pid", pg->dir);
    FILE *f = fopen(path, "r");
    int pm = 0;
    if (!f || fscanf(f, "%d", &pm) != 1 || pm <= 0) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    pid_t kids[256];
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < 256) {
        char stat[300], line[512];
        snprintf(stat, sizeof(stat), "/proc/%s/stat", e->d_name);
        FILE *s = atoi(e->d_name) > 0 ? fopen(stat, "r") : NULL;
        if (!s)
            continue;
        const char *rp = fgets(line, sizeof(line), s) ? strrchr(line, ')') : NULL;
        int ppid = 0;
        if (rp && sscanf(rp, ") %*c %d", &ppid) == 1 && ppid == pm)
            kids[n++] = atoi(e->d_name);
        fclose(s);
    }
    if (d)
        closedir(d);
    kill(pm, SIGKILL);
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    for (int t = 0; t < 500 && !pid_gone(pm); t++)
        usleep(10000);
    for (int i = 0; i < n; i++)
        for (int t = 0; t < 500 && !pid_gone(kids[i]); t++)
            usleep(10000);
    return 0;
}

static void rm_rf(const char *dir)
{
    if (!dir[0] || strncmp(dir, "/tmp/", 5) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/rm", "rm", "-rf", dir, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

void h_pg_stop(h_pg *pg)
{
    if (!pg->dir[0])
        return;
    h_pg_ctl(pg, "stop");
    if (!getenv("LOCKSTEP_KEEP"))
        rm_rf(pg->dir);
    pg->dir[0] = 0;
}

static char lockstepd_path[PATH_MAX];

/* find_lockstepd - lockstepd_path, once: threads that start servers together (test_resilience's two servers on one
 * database) exec the path while another would have been writing it. */
static void find_lockstepd(void)
{
    const char *b = getenv("LOCKSTEP_BUILD");
    if (b) {
        snprintf(lockstepd_path, sizeof(lockstepd_path), "%s/bin/lockstepd", b);
        if (access(lockstepd_path, X_OK) == 0)
            return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = 0;
        char *d = dirname(exe); /* B/tests/integration or B/bench/ingest */
        snprintf(lockstepd_path, sizeof(lockstepd_path), "%s/../../bin/lockstepd", d);
        if (access(lockstepd_path, X_OK) == 0)
            return;
    }
    snprintf(lockstepd_path, sizeof(lockstepd_path), "build/bin/lockstepd");
}

const char *h_lockstepd_path(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, find_lockstepd);
    return lockstepd_path;
}

/* Every lockstepd this process started and has not reaped: stopped at exit,
 * so that a failed assertion leaves no server behind. */
#define MAX_LIVE 64
static pid_t live[MAX_LIVE];

static void live_add(pid_t pid)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (!live[i]) {
            live[i] = pid;
            return;
        }
}

static void live_del(pid_t pid)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] == pid)
            live[i] = 0;
}

static void live_stop_all(void)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        if (!live[i])
            continue;
        kill(live[i], SIGTERM); /* lets an embedded PostgreSQL stop with it */
        for (int t = 0; t < 100 && waitpid(live[i], NULL, WNOHANG) == 0; t++)
            usleep(50000);
        if (waitpid(live[i], NULL, WNOHANG) == 0) {
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
        }
        live[i] = 0;
    }
}

/* print_tail - the last `lines` lines of the file at `path` to stderr, so that a CI log shows why a
 * lockstepd stopped without anyone having to reach the temporary directory it wrote in. */
static void print_tail(const char *path, int lines)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char ring[16][512];
    int n = 0;
    if (lines > 16)
        lines = 16;
    while (fgets(ring[n % lines], sizeof(ring[0]), f))
        n++;
    fclose(f);
    for (int i = n > lines ? n - lines : 0; i < n; i++)
        fprintf(stderr, "  | %s", ring[i % lines]);
}

static int spawn(h_srv *s, const char *const *args)
{
    static int registered;
    if (!registered) {
        atexit(live_stop_all);
        registered = 1;
    }
    char listen[64], portfile[300];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", s->port);
    snprintf(portfile, sizeof(portfile), "%s/port", s->dir);
    unlink(portfile);
    const char *argv[64];
    int n = 0;
    argv[n++] = h_lockstepd_path();
    argv[n++] = "--listen";
    argv[n++] = listen;
    argv[n++] = "--port-file";
    argv[n++] = portfile;
    for (int i = 0; args && args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    s->pid = fork();
    if (s->pid < 0)
        return -1;
    if (s->pid == 0) {
        int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], (char *const *)argv);
        dprintf(2, "harness: cannot run %s: %s\n", argv[0], strerror(errno)); /* the log says why, not nothing */
        _exit(127);
    }
    live_add(s->pid);
    char url[200];
    snprintf(url, sizeof(url), "%s/api/v1/health", s->base);
    for (int i = 0; i < 600; i++) {
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            fprintf(stderr, "harness: lockstepd exited at start (%s %d); its log %s ends:\n",
                    WIFSIGNALED(st) ? "signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), s->log);
            print_tail(s->log, 12);
            live_del(s->pid);
            s->pid = 0;
            return -1;
        }
        if (access(portfile, F_OK) == 0 && h_http("GET", url, NULL, NULL, 0, NULL, NULL) == 200)
            return 0;
        usleep(50000);
    }
    fprintf(stderr, "harness: lockstepd did not answer; see %s\n", s->log);
    return -1;
}

/* lost_port - whether lockstepd's log says it could not listen: the free port found for it was taken by
 * another process (anything else on the machine binding port 0) before it bound it. */
static int lost_port(const char *log)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    char line[1024];
    int lost = 0;
    while (fgets(line, sizeof(line), f))
        lost |= strstr(line, "cannot listen on") != NULL;
    fclose(f);
    return lost;
}

int h_srv_start(h_srv *s, const char *const *args)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/lsd.XXXXXX");
    if (!mkdtemp(s->dir))
        return -1;
    chmod(s->dir, 0711);
    snprintf(s->log, sizeof(s->log), "%s/log", s->dir);
    int tls = 0;
    for (int i = 0; args && args[i]; i++)
        tls |= !strcmp(args[i], "--tls-cert");
    for (int attempt = 0;; attempt++) {
        s->port = free_port();
        snprintf(s->base, sizeof(s->base), "%s://127.0.0.1:%d", tls ? "https" : "http", s->port);
        if (spawn(s, args) == 0)
            return 0;
        if (attempt == 4 || !lost_port(s->log))
            return -1;
        fprintf(stderr, "harness: port %d was taken before lockstepd bound it; another port\n", s->port);
        unlink(s->log);
    }
}

int h_srv_restart(h_srv *s, const char *const *args)
{
    return spawn(s, args);
}

int h_srv_kill(h_srv *s, int sig)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, sig);
    int st = 0;
    while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
        ;
    live_del(s->pid);
    s->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void h_srv_cleanup(h_srv *s)
{
    if (s->pid > 0)
        h_srv_kill(s, SIGTERM);
    if (!getenv("LOCKSTEP_KEEP"))
        rm_rf(s->dir);
}

typedef struct rbuf {
    char *p;
    size_t len;
} rbuf;

static size_t on_data(char *ptr, size_t size, size_t n, void *ud)
{
    rbuf *b = ud;
    char *q = realloc(b->p, b->len + size * n + 1);
    if (!q)
        return 0;
    b->p = q;
    memcpy(b->p + b->len, ptr, size * n);
    b->len += size * n;
    b->p[b->len] = 0;
    return size * n;
}

static char cainfo[512];

int h_metric_each(const char *base, const char *prefix, const char *token,
                  void (*fn)(const char *rest, double value, void *arg), void *arg)
{
    char url[256], *text = NULL;
    snprintf(url, sizeof(url), "%s/metrics", base);
    size_t l = strlen(prefix);
    if (h_http("GET", url, NULL, NULL, 0, token, &text) != 200) {
        free(text);
        return -1;
    }
    int n = 0;
    for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *sp = strrchr(line, ' '); /* a sample: NAME{LABELS} VALUE */
        if (*line == '#' || !sp || sp < line + l || strncmp(line, prefix, l))
            continue;
        *sp = 0;
        fn(line + l, strtod(sp + 1, NULL), arg);
        n++;
    }
    free(text);
    return n;
}

/* sample_value - h_metric's callback: the sample whose whole name is the prefix. */
static void sample_value(const char *rest, double value, void *arg)
{
    if (!*rest)
        *(double *)arg = value;
}

double h_metric(const char *base, const char *sample, const char *token)
{
    double v = -1;
    h_metric_each(base, sample, token, sample_value, &v);
    return v;
}

void h_http_cainfo(const char *path)
{
    snprintf(cainfo, sizeof(cainfo), "%s", path ? path : "");
}

static pthread_key_t curl_key;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_free_handle(void *h)
{
    curl_easy_cleanup(h);
}

static void curl_setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_key_create(&curl_key, curl_free_handle);
}

long h_http(const char *method, const char *url, const char *ctype, const void *body, size_t len, const char *token,
            char **resp)
{
    pthread_once(&curl_once, curl_setup);
    CURL *curl = pthread_getspecific(curl_key); /* one keep-alive handle per thread, freed at its exit */
    if (!curl) {
        curl = curl_easy_init();
        pthread_setspecific(curl_key, curl);
    }
    rbuf b = {NULL, 0};
    struct curl_slist *h = NULL;
    char ct[128], auth[400];
    snprintf(ct, sizeof(ct), "Content-Type: %s", ctype ? ctype : "application/json");
    h = curl_slist_append(h, ct);
    h = curl_slist_append(h, "Expect:");
    if (token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (cainfo[0])
        curl_easy_setopt(curl, CURLOPT_CAINFO, cainfo);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else if (!strcmp(method, "POST")) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
    }
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    long code = 0;
    if (curl_easy_perform(curl) == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    if (resp)
        *resp = b.p ? b.p : strdup("");
    else
        free(b.p);
    return code;
}

int h_json_str(const char *doc, const char *key, char *out, size_t cap)
{
    json_t *o = json_loads(doc, 0, NULL);
    const char *s = o ? json_string_value(json_object_get(o, key)) : NULL;
    int rc = -1;
    if (s) {
        snprintf(out, cap, "%s", s);
        rc = 0;
    }
    json_decref(o);
    return rc;
}

static unsigned char *room(h_batch *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + n)
            cap *= 2;
        b->buf = realloc(b->buf, cap);
        if (!b->buf)
            abort();
        b->cap = cap;
    }
    unsigned char *p = b->buf + b->len;
    b->len += n;
    return p;
}

void h_batch_begin(h_batch *b, const char *run_id, uint32_t rank, uint64_t batch_seq)
{
    rec_header h;
    memset(&h, 0, sizeof(h));
    h.kind = REC_KIND_BATCH;
    h.rank = rank;
    h.batch_seq = batch_seq;
    if (run_id)
        snprintf(h.run_id, sizeof(h.run_id), "%s", run_id);
    snprintf(h.algo, sizeof(h.algo), "lsfp1");
    b->len = 0;
    size_t n = rec_header_size(&h);
    rec_header_encode(&h, room(b, n));
}

void h_batch_add(h_batch *b, const rec_record *r)
{
    size_t n = rec_encoded_size(r);
    unsigned char *p = room(b, n);
    if (rec_encode(r, p) != n)
        abort();
}

void h_batch_free(h_batch *b)
{
    free(b->buf);
    memset(b, 0, sizeof(*b));
}
