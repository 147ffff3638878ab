/* test_spank_callbacks.c - spank_lockstep's callbacks in each SPANK context, against a fake SPANK API (one process per
 * case). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <slurm/spank.h>
#include <sys/socket.h>

#include "common/crypto/token.h"

/* ---- the fake SPANK API: what slurmstepd, srun, sbatch and slurmd provide */

struct spank_handle {
    int unused;
};

static struct {
    spank_context_t ctx;
    int in_init;
    struct spank_option *opts[8];
    int n_opts;
    const char *given[8][2]; /* option name, value ("" for a bare flag) the user typed */
    int n_given;
    char *env[256];
    uint32_t job_id, step_id, ntasks, node_id, global_id, nlocal;
    uint16_t cpt;
    int task_id, exit_status;
    char log[16384];
} F;

static struct spank_handle handle;
static spank_t sp = &handle;

static void flog(const char *kind, const char *fmt, va_list ap)
{
    size_t n = strlen(F.log);
    n += (size_t)snprintf(F.log + n, sizeof(F.log) - n, "%s: ", kind);
    if (n < sizeof(F.log))
        n += (size_t)vsnprintf(F.log + n, sizeof(F.log) - n, fmt, ap);
    if (n + 1 < sizeof(F.log))
        strcat(F.log, "\n");
}

void slurm_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    flog("info", fmt, ap);
    va_end(ap);
}

void slurm_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    flog("error", fmt, ap);
    va_end(ap);
}

void slurm_spank_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    flog("user", fmt, ap);
    va_end(ap);
}

spank_context_t spank_context(void)
{
    return F.ctx;
}

const char *spank_strerror(spank_err_t err)
{
    return err == ESPANK_SUCCESS ? "success" : "error";
}

spank_err_t spank_option_register(spank_t s, struct spank_option *opt)
{
    if (s != sp || !F.in_init || F.n_opts >= 8)
        return ESPANK_BAD_ARG;
    F.opts[F.n_opts++] = opt;
    return ESPANK_SUCCESS;
}

spank_err_t spank_option_getopt(spank_t s, struct spank_option *opt, char **optarg)
{
    (void)s;
    if (F.ctx == S_CTX_REMOTE && F.in_init)
        return ESPANK_NOT_AVAIL;
    for (int i = 0; i < F.n_given; i++)
        if (!strcmp(F.given[i][0], opt->name)) {
            *optarg = *F.given[i][1] ? (char *)F.given[i][1] : NULL;
            return ESPANK_SUCCESS;
        }
    return ESPANK_ERROR;
}

spank_err_t spank_get_item(spank_t s, spank_item_t item, ...)
{
    (void)s;
    if (F.ctx != S_CTX_REMOTE)
        return ESPANK_NOT_REMOTE;
    va_list ap;
    va_start(ap, item);
    spank_err_t rc = ESPANK_SUCCESS;
    switch (item) {
    case S_JOB_ID: *va_arg(ap, uint32_t *) = F.job_id; break;
    case S_JOB_STEPID: *va_arg(ap, uint32_t *) = F.step_id; break;
    case S_JOB_TOTAL_TASK_COUNT: *va_arg(ap, uint32_t *) = F.ntasks; break;
    case S_JOB_NODEID: *va_arg(ap, uint32_t *) = F.node_id; break;
    case S_JOB_LOCAL_TASK_COUNT: *va_arg(ap, uint32_t *) = F.nlocal; break;
    case S_JOB_LOCAL_TO_GLOBAL_ID: { /* node k runs ranks 2k, 2k+1 */
        uint32_t local = va_arg(ap, uint32_t);
        *va_arg(ap, uint32_t *) = F.node_id * F.nlocal + local;
        break;
    }
    case S_STEP_CPUS_PER_TASK: *va_arg(ap, uint16_t *) = F.cpt; break;
    case S_JOB_UID: *va_arg(ap, uid_t *) = 0; break;
    case S_JOB_ARGV: {
        static char *argv[] = {"python", "train.py", "--tag", "a b; touch x #", NULL};
        *va_arg(ap, int *) = 4;
        *va_arg(ap, char ***) = argv;
        break;
    }
    case S_TASK_ID: *va_arg(ap, int *) = F.task_id; break;
    case S_TASK_GLOBAL_ID: *va_arg(ap, uint32_t *) = F.global_id; break;
    case S_TASK_EXIT_STATUS: *va_arg(ap, int *) = F.exit_status; break;
    default: rc = ESPANK_BAD_ARG;
    }
    va_end(ap);
    return rc;
}

static int env_find(const char *var)
{
    size_t n = strlen(var);
    for (int i = 0; F.env[i]; i++)
        if (!strncmp(F.env[i], var, n) && F.env[i][n] == '=')
            return i;
    return -1;
}

spank_err_t spank_getenv(spank_t s, const char *var, char *buf, int len)
{
    (void)s;
    if (F.ctx != S_CTX_REMOTE)
        return ESPANK_NOT_REMOTE;
    int i = env_find(var);
    if (i < 0)
        return ESPANK_ENV_NOEXIST;
    const char *v = strchr(F.env[i], '=') + 1;
    if ((int)strlen(v) >= len)
        return ESPANK_NOSPACE;
    memcpy(buf, v, strlen(v) + 1);
    return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t s, const char *var, const char *val, int overwrite)
{
    (void)s;
    if (F.ctx != S_CTX_REMOTE)
        return ESPANK_NOT_REMOTE;
    int i = env_find(var);
    if (i >= 0 && !overwrite)
        return ESPANK_ENV_EXISTS;
    char *kv = malloc(strlen(var) + strlen(val) + 2);
    sprintf(kv, "%s=%s", var, val);
    if (i >= 0) {
        free(F.env[i]);
        F.env[i] = kv;
    } else {
        int n = 0;
        while (F.env[n])
            n++;
        F.env[n] = kv;
    }
    return ESPANK_SUCCESS;
}

spank_err_t spank_unsetenv(spank_t s, const char *var)
{
    (void)s;
    if (F.ctx != S_CTX_REMOTE)
        return ESPANK_NOT_REMOTE;
    int i = env_find(var);
    if (i < 0)
        return ESPANK_SUCCESS;
    free(F.env[i]);
    while (F.env[i]) {
        F.env[i] = F.env[i + 1];
        i++;
    }
    return ESPANK_SUCCESS;
}

/* ---- helpers for one simulated process */

#define CHECK(c)                                                                                                       \
    do {                                                                                                               \
        if (!(c)) {                                                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\nlog:\n%s", __FILE__, __LINE__, #c, F.log);                       \
            _exit(1);                                                                                                  \
        }                                                                                                              \
    } while (0)

static char tmpdir[64];
static char secret_path[128];
static char agent_path[128];

static void fake_reset(spank_context_t ctx)
{
    memset(&F, 0, sizeof(F));
    F.ctx = ctx;
    F.job_id = 77;
    F.step_id = 0;
    F.ntasks = 4;
    F.nlocal = 2;
    F.cpt = 2;
}

/* ---- a tiny lockstepd stand-in: answers every request 200 "{}" and keeps what it was sent */

static struct {
    int fd, port;
    char seen[16384];
    int refuse_attest; /* answer this many attestations 503 first */
    pthread_mutex_t lock;
} H = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *http_main(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(H.fd, NULL, NULL);
        if (c < 0)
            return NULL;
        char buf[8192];
        size_t n = 0;
        char *body = NULL;
        long want = -1;
        while (n + 1 < sizeof(buf)) {
            ssize_t r = recv(c, buf + n, sizeof(buf) - 1 - n, 0);
            if (r <= 0)
                break;
            n += (size_t)r;
            buf[n] = 0;
            body = strstr(buf, "\r\n\r\n");
            if (body && want < 0) {
                char *cl = strcasestr(buf, "Content-Length:");
                want = cl ? strtol(cl + 15, NULL, 10) : 0;
            }
            if (body && (long)(n - (size_t)(body + 4 - buf)) >= want)
                break;
        }
        pthread_mutex_lock(&H.lock);
        size_t l = strlen(H.seen);
        snprintf(H.seen + l, sizeof(H.seen) - l, "%s\n====\n", buf);
        int refuse = H.refuse_attest > 0 && strstr(buf, "POST /api/v1/attest");
        if (refuse)
            H.refuse_attest--;
        pthread_mutex_unlock(&H.lock);
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                                 "Connection: close\r\n\r\n{}";
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                   "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
        if (refuse ? send(c, busy, sizeof(busy) - 1, MSG_NOSIGNAL) < 0 : send(c, ok, sizeof(ok) - 1, MSG_NOSIGNAL) < 0)
            fprintf(stderr, "stand-in: send failed\n");
        close(c);
    }
}

/* http_start - the stand-in on a free loopback port (in this process: call it inside in_child's case). */
static void http_start(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    H.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (H.fd < 0 || bind(H.fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(H.fd, 8) < 0 ||
        getsockname(H.fd, (struct sockaddr *)&a, &l) < 0)
        _exit(2);
    H.port = ntohs(a.sin_port);
    pthread_t t;
    pthread_create(&t, NULL, http_main, NULL);
    pthread_detach(t);
}

static void env_put(const char *kv)
{
    char name[128];
    snprintf(name, sizeof(name), "%.*s", (int)(strchr(kv, '=') - kv), kv);
    spank_err_t rc = spank_setenv(sp, name, strchr(kv, '=') + 1, 1);
    CHECK(rc == ESPANK_SUCCESS);
}

static const char *env_get(const char *var)
{
    int i = env_find(var);
    return i < 0 ? NULL : strchr(F.env[i], '=') + 1;
}

static void user_gives(const char *name, const char *value)
{
    F.given[F.n_given][0] = name;
    F.given[F.n_given][1] = value;
    F.n_given++;
}

/* init_and_options - what Slurm does first: slurm_spank_init, then each
 * option the user gave through its callback. Returns -1 when a callback
 * refused a value. */
static int init_and_options(int ac, char **av)
{
    F.in_init = 1;
    CHECK(slurm_spank_init(sp, ac, av) == 0);
    F.in_init = 0;
    for (int i = 0; i < F.n_given; i++)
        for (int j = 0; j < F.n_opts; j++)
            if (!strcmp(F.opts[j]->name, F.given[i][0]) &&
                F.opts[j]->cb(F.opts[j]->val, *F.given[i][1] ? F.given[i][1] : NULL, F.ctx == S_CTX_REMOTE))
                return -1;
    return 0;
}

/* task_init_in_child - run slurm_spank_task_init in a forked task with its
 * stderr in a file; returns its exit status (0 when it returned 0) and the
 * stderr text in `err`. */
static int task_init_in_child(int task_id, char *err, size_t cap)
{
    char path[160];
    snprintf(path, sizeof(path), "%s/task.err", tmpdir);
    F.task_id = task_id;
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(path, "w", stderr);
        (void)f;
        int rc = slurm_spank_task_init(sp, 0, NULL);
        fflush(stderr);
        _exit(rc == 0 ? 0 : 99);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(err, 1, cap - 1, f) : 0;
    err[n] = 0;
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* in_child - run `fn` as its own process (the plugin keeps per-process state,
 * as in slurmstepd) and require that it exits 0. */
static void in_child(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fn();
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static char *remote_args[8];
static int n_remote_args;

static void args_base(void)
{
    static char a1[200], a2[200];
    snprintf(a1, sizeof(a1), "agent=%s", agent_path);
    snprintf(a2, sizeof(a2), "secret=%s", secret_path);
    remote_args[0] = a1;
    remote_args[1] = a2;
    remote_args[2] = "server=http://127.0.0.1:1";
    remote_args[3] = "timeout_ms=200";
    n_remote_args = 4;
}

/* ---- the cases */

static void case_local(void)
{
    fake_reset(S_CTX_LOCAL);
    user_gives("lockstep", "det");
    CHECK(init_and_options(0, NULL) == 0);
    CHECK(F.n_opts == 5);
    CHECK(!strcmp(F.opts[0]->name, "lockstep") && F.opts[0]->has_arg == 2);
    CHECK(!strcmp(F.opts[1]->name, "lockstep-twin") && !strcmp(F.opts[2]->name, "lockstep-trace"));
    CHECK(!strcmp(F.opts[3]->name, "lockstep-ignore") && F.opts[3]->has_arg == 1);
    CHECK(!strcmp(F.opts[4]->name, "lockstep-resume") && F.opts[4]->has_arg == 1);
    CHECK(slurm_spank_init_post_opt(sp, 0, NULL) == 0);
    CHECK(slurm_spank_task_exit(sp, 0, NULL) == 0);
    CHECK(slurm_spank_exit(sp, 0, NULL) == 0);
    CHECK(F.env[0] == NULL); /* srun's context changes no job environment */
    /* A typo fails where the user typed it. */
    fake_reset(S_CTX_LOCAL);
    user_gives("lockstep", "dett");
    CHECK(init_and_options(0, NULL) == -1);
    CHECK(strstr(F.log, "--lockstep=dett is not a mode"));
    fake_reset(S_CTX_LOCAL);
    user_gives("lockstep-trace", "ops:steps=x");
    CHECK(init_and_options(0, NULL) == -1);
    /* An ignore pattern that cannot be one fails at submission too, never silently. */
    fake_reset(S_CTX_LOCAL);
    user_gives("lockstep-ignore", "report_timings,[x");
    CHECK(init_and_options(0, NULL) == -1);
    CHECK(strstr(F.log, "--lockstep-ignore=report_timings,[x is not a list of patterns"));
    /* So does a resume template that names no checkpoint. */
    fake_reset(S_CTX_LOCAL);
    user_gives("lockstep-resume", "train --resume /ck/latest");
    CHECK(init_and_options(0, NULL) == -1);
    CHECK(strstr(F.log, "--lockstep-resume=train --resume /ck/latest is not a resume template"));
}

static void case_allocator(void)
{
    fake_reset(S_CTX_ALLOCATOR);
    user_gives("lockstep", "det");
    user_gives("lockstep-twin", "grp");
    CHECK(init_and_options(0, NULL) == 0);
    CHECK(F.n_opts == 5);
    CHECK(slurm_spank_init_post_opt(sp, 0, NULL) == 0);
    CHECK(slurm_spank_exit(sp, 0, NULL) == 0);
    CHECK(F.log[0] == 0);
}

/* At submission (sbatch, salloc, srun), before anything is allocated: a twin group without --lockstep, where the
 * site's default is off, would do nothing (a warning, the submission goes on); a SLURM_LOCKSTEP* variable with a
 * bad value fails it, naming the variable. (The submitting shell's environment: the real one, in this process.) */
static void submit_case(spank_context_t ctx, char **av, int ac, const char *opt, const char *value, const char *env,
                        int want_rc, const char *want_log)
{
    fflush(NULL);
    pid_t pid = fork(); /* one srun a case: the plugin keeps what its option callbacks saw */
    if (pid > 0) {
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        return;
    }
    fake_reset(ctx);
    unsetenv("SLURM_LOCKSTEP");
    unsetenv("SLURM_LOCKSTEP_TWIN");
    unsetenv("SLURM_LOCKSTEP_TRACE");
    if (opt)
        user_gives(opt, value);
    if (env)
        putenv((char *)env);
    CHECK(init_and_options(ac, av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, ac, av) == want_rc);
    if (want_log)
        CHECK(strstr(F.log, want_log));
    else
        CHECK(F.log[0] == 0);
    CHECK(F.env[0] == NULL); /* nothing of the job's environment is touched at submission */
    _exit(0);
}

static void case_submit(void)
{
    char *fp[] = {"default=fp"}, *enforced[] = {"enforce=fp"}, *off[] = {"default=off"};
    submit_case(S_CTX_ALLOCATOR, NULL, 0, "lockstep-twin", "grp", NULL, 0,
                "user: lockstep: --lockstep-twin does nothing without --lockstep: this site fingerprints only the "
                "jobs that ask");
    submit_case(S_CTX_LOCAL, off, 1, "lockstep-trace", "metrics", "SLURM_LOCKSTEP_TWIN=g", 0,
                "user: lockstep: SLURM_LOCKSTEP_TWIN and --lockstep-trace do nothing without --lockstep");
    submit_case(S_CTX_LOCAL, NULL, 0, "lockstep-twin", "grp", "SLURM_LOCKSTEP=off", 0,
                "--lockstep-twin does nothing with SLURM_LOCKSTEP=off");
    submit_case(S_CTX_ALLOCATOR, fp, 1, "lockstep-twin", "grp", NULL, 0, NULL);       /* the site fingerprints */
    submit_case(S_CTX_ALLOCATOR, enforced, 1, "lockstep-twin", "grp", NULL, 0, NULL); /* ... every job */
    submit_case(S_CTX_LOCAL, NULL, 0, "lockstep-twin", "grp", "SLURM_LOCKSTEP=det", 0, NULL);
    submit_case(S_CTX_LOCAL, NULL, 0, NULL, NULL, NULL, 0, NULL); /* a job that asks for nothing hears nothing */
    /* a bad variable fails the submission, in the user's words */
    submit_case(S_CTX_ALLOCATOR, NULL, 0, "lockstep", "fp", "SLURM_LOCKSTEP_TWIN=a b", -1,
                "error: lockstep: SLURM_LOCKSTEP_TWIN=a b is not a twin group name; use");
    submit_case(S_CTX_LOCAL, NULL, 0, NULL, NULL, "SLURM_LOCKSTEP=maybe", -1,
                "error: lockstep: SLURM_LOCKSTEP=maybe is not a mode; use SLURM_LOCKSTEP=off, consensus, fp or det");
}

static void case_slurmd(void)
{
    char *av[] = {"server=http://127.0.0.1:9", "colour=blue"};
    fake_reset(S_CTX_SLURMD);
    F.in_init = 1;
    CHECK(slurm_spank_init(sp, 2, av) == 0);
    CHECK(F.n_opts == 0);
    CHECK(strstr(F.log, "error: lockstep: unknown plugstack argument 'colour=blue'"));
    CHECK(slurm_spank_exit(sp, 2, av) == 0);
}

static void case_job_script(void)
{
    /* Prolog and epilog: slurm_spank_init is not called; nothing else may act. */
    fake_reset(S_CTX_JOB_SCRIPT);
    CHECK(slurm_spank_init_post_opt(sp, 0, NULL) == 0);
    CHECK(slurm_spank_task_exit(sp, 0, NULL) == 0);
    CHECK(slurm_spank_exit(sp, 0, NULL) == 0);
    CHECK(F.log[0] == 0);
}

static void case_remote_det(void)
{
    char err[4096], want[TOKEN_HEX_LEN + 1];
    fake_reset(S_CTX_REMOTE);
    args_base();
    env_put("LD_PRELOAD=/usr/lib/user.so");
    env_put("SLURM_STEP_NODELIST=n[1-2]");
    env_put("SLURM_JOB_PARTITION=gpu");
    env_put("LOCKSTEP_RUN_ID=someone-elses-run");
    env_put("SLURM_CPUS_PER_TASK=2"); /* the job asked for 2 (-c 2), as Slurm's step says (F.cpt) */
    user_gives("lockstep", "det");
    user_gives("lockstep-twin", "g1");
    user_gives("lockstep-trace", "metrics");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    char pre[300];
    snprintf(pre, sizeof(pre), "/usr/lib/user.so:%s", agent_path);
    CHECK(!strcmp(env_get("LD_PRELOAD"), pre));
    CHECK(!strcmp(env_get("LOCKSTEP_MODE"), "det"));
    CHECK(!strcmp(env_get("LOCKSTEP_JOB_ID"), "77"));
    CHECK(!strcmp(env_get("LOCKSTEP_STEP_ID"), "0"));
    CHECK(!strcmp(env_get("LOCKSTEP_RANKS"), "4"));
    CHECK(!strcmp(env_get("LOCKSTEP_TWIN_GROUP"), "g1"));
    CHECK(!strcmp(env_get("LOCKSTEP_TRACE"), "metrics"));
    CHECK(!strcmp(env_get("LOCKSTEP_NODES"), "n[1-2]"));
    CHECK(!strcmp(env_get("LOCKSTEP_PARTITION"), "gpu"));
    CHECK(!strcmp(env_get("LOCKSTEP_SERVER"), "http://127.0.0.1:1"));
    CHECK(!strcmp(env_get("NCCL_ALGO"), "Ring"));
    CHECK(!strcmp(env_get("OMP_NUM_THREADS"), "2")); /* the cpus per task asked for */
    CHECK(!strcmp(env_get("NCCL_GRAPH_DUMP_FILE"), "/tmp/nccl-graph.77.0.xml"));
    CHECK(env_get("LOCKSTEP_CONFLICTS") == NULL);
    CHECK(env_get("LOCKSTEP_RUN_ID") == NULL); /* lockstepd is down */
    CHECK(strstr(F.log, "not registered now"));
    CHECK(token_compute("s3cret", 6, "77", want) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_TOKEN"), want));
    for (int i = 0; F.env[i]; i++)
        CHECK(!strstr(F.env[i], "s3cret") && !strstr(F.env[i], secret_path));
    CHECK(task_init_in_child(0, err, sizeof(err)) == 0 && err[0] == 0);
    F.global_id = 3;
    F.exit_status = 2 << 8;
    CHECK(slurm_spank_task_exit(sp, 0, NULL) == 0); /* not registered: nothing to report, no error */
    CHECK(slurm_spank_exit(sp, 0, NULL) == 0);
}

/* Every node attests, from slurmstepd, which global ranks run on it (its name from the step's node list at
 * slurmstepd's index), with the attestation token, which never enters the job's environment; the first node
 * registers the run with that token too. */
static void attests_on_node(uint32_t node, const char *want_node, const char *want_ranks)
{
    char want[TOKEN_HEX_LEN + 1], auth[128], server[64];
    fake_reset(S_CTX_REMOTE);
    http_start();
    H.seen[0] = 0;
    F.node_id = node;
    static char *args[8];
    args_base();
    for (int i = 0; i < n_remote_args; i++)
        args[i] = remote_args[i];
    snprintf(server, sizeof(server), "server=http://127.0.0.1:%d", H.port);
    args[2] = server;
    env_put("SLURM_STEP_NODELIST=n[1-2]");
    env_put("SLURM_STEP_GPUS=0,1");
    user_gives("lockstep", "fp");
    user_gives("lockstep-twin", "g1");
    CHECK(init_and_options(n_remote_args, args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, args) == 0);
    CHECK(token_compute_attest("s3cret", 6, "77", want) == 0);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", want);
    pthread_mutex_lock(&H.lock);
    CHECK(strstr(H.seen, "POST /api/v1/attest"));
    const char *at = strstr(H.seen, "POST /api/v1/attest");
    CHECK(strstr(at, auth));
    char node_field[64];
    snprintf(node_field, sizeof(node_field), "\"node\":\"%s\"", want_node);
    CHECK(strstr(at, node_field));
    CHECK(strstr(at, want_ranks));
    CHECK(strstr(at, "\"gpus\":\"0,1\"") && strstr(at, "\"user\":\"root\"") && strstr(at, "\"nodes\":\"n[1-2]\""));
    /* the first node registers, with the attestation token; the others do not */
    const char *reg = strstr(H.seen, "POST /api/v1/runs ");
    CHECK(node == 0 ? reg && strstr(reg, auth) : reg == NULL);
    /* with slurmstepd's argv as words (a replay runs exactly these), beside the command line for people */
    CHECK(node != 0 || strstr(reg, "\"argv\":[\"python\",\"train.py\",\"--tag\",\"a b; touch x #\"]"));
    CHECK(node != 0 || strstr(reg, "\"command\":\"python train.py --tag a b; touch x #\""));
    pthread_mutex_unlock(&H.lock);
    CHECK(strstr(F.log, "attested on"));
    /* the job sees its own token only */
    for (int i = 0; F.env[i]; i++)
        CHECK(!strstr(F.env[i], want));
}

static void case_remote_attests(void)
{
    attests_on_node(1, "n2", "\"ranks\":[2,3]");
}

static void case_remote_attests_first(void)
{
    attests_on_node(0, "n1", "\"ranks\":[0,1]");
}

/* An attestation lockstepd did not take when the step started is tried once more at the first task exit
 * (slurmstepd, still root, still holding the token). */
static void case_remote_attest_again(void)
{
    char server[64];
    fake_reset(S_CTX_REMOTE);
    http_start();
    H.seen[0] = 0;
    H.refuse_attest = 1;
    F.node_id = 1;
    static char *args[8];
    args_base();
    for (int i = 0; i < n_remote_args; i++)
        args[i] = remote_args[i];
    snprintf(server, sizeof(server), "server=http://127.0.0.1:%d", H.port);
    args[2] = server;
    env_put("SLURM_STEP_NODELIST=n[1-2]");
    user_gives("lockstep", "fp");
    CHECK(init_and_options(n_remote_args, args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, args) == 0);
    CHECK(strstr(F.log, "not attested on n2"));
    F.global_id = 2;
    CHECK(slurm_spank_task_exit(sp, 0, NULL) == 0);
    CHECK(strstr(F.log, "attested on n2 (2 ranks)"));
    pthread_mutex_lock(&H.lock);
    const char *first = strstr(H.seen, "POST /api/v1/attest");
    CHECK(first && strstr(first + 1, "POST /api/v1/attest"));
    pthread_mutex_unlock(&H.lock);
    F.global_id = 3;
    CHECK(slurm_spank_task_exit(sp, 0, NULL) == 0); /* once only */
    pthread_mutex_lock(&H.lock);
    const char *second = strstr(strstr(H.seen, "POST /api/v1/attest") + 1, "POST /api/v1/attest");
    CHECK(!strstr(second + 1, "POST /api/v1/attest"));
    pthread_mutex_unlock(&H.lock);
    CHECK(slurm_spank_exit(sp, 0, NULL) == 0);
}

/* A step that asked for no CPUs per task, whose srun derived 3 from how the job's CPUs fell on its nodes (sbatch
 * -n 4 -N 2 placed 3,1): det pins OMP_NUM_THREADS to 1, as for the same job placed 1,3. */
static void case_remote_det_derived_cpus(void)
{
    fake_reset(S_CTX_REMOTE);
    F.cpt = 3;
    args_base();
    user_gives("lockstep", "det");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("OMP_NUM_THREADS"), "1"));
}

static void case_remote_det_conflict(void)
{
    char err[4096];
    fake_reset(S_CTX_REMOTE);
    args_base();
    env_put("NCCL_ALGO=Tree");
    env_put("MKL_CBWR=AUTO");
    user_gives("lockstep", "det");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(strstr(F.log, "NCCL_ALGO=Tree breaks --lockstep=det"));
    /* Every task is stopped before the program, with the reason on its stderr. */
    for (int t = 0; t < 2; t++) {
        CHECK(task_init_in_child(t, err, sizeof(err)) == 1);
        CHECK(strstr(err, "lockstep: NCCL_ALGO=Tree breaks --lockstep=det") && strstr(err, "set NCCL_ALGO=Ring"));
        CHECK(strstr(err, "MKL_CBWR=AUTO"));
    }
    CHECK(env_get("LD_PRELOAD") == NULL); /* nothing injected into a refused step */
}

static void case_remote_fp_conflict(void)
{
    fake_reset(S_CTX_REMOTE);
    args_base();
    env_put("NCCL_ALGO=Tree");
    user_gives("lockstep", ""); /* bare --lockstep */
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_MODE"), "fp"));
    CHECK(!strcmp(env_get("NCCL_ALGO"), "Tree"));
    CHECK(!strcmp(env_get("LOCKSTEP_CONFLICTS"), "NCCL_ALGO=Tree"));
    CHECK(env_get("CUBLAS_WORKSPACE_CONFIG") == NULL);
}

/* case_remote_stream - the site's stream=digests reaches a job that chose nothing; a job's own choice stays. */
static void case_remote_stream(void)
{
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "stream=digests";
    user_gives("lockstep", "fp");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(env_get("LOCKSTEP_STREAM") && !strcmp(env_get("LOCKSTEP_STREAM"), "digests"));
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "stream=digests";
    env_put("LOCKSTEP_STREAM=records");
    user_gives("lockstep", "fp");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_STREAM"), "records"));
}

/* case_remote_relay - the site's relay=DIR gives each job step a node relay directory of its own under DIR; a job's
 * own LOCKSTEP_RELAY stays. */
static void case_remote_relay(void)
{
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "relay=/dev/shm";
    user_gives("lockstep", "fp");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    const char *v = env_get("LOCKSTEP_RELAY");
    CHECK(v && !strncmp(v, "/dev/shm/lockstep-relay.", 24) && strlen(v) < 100);
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "relay=/dev/shm";
    env_put("LOCKSTEP_RELAY=/mine");
    user_gives("lockstep", "fp");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_RELAY"), "/mine"));
    fake_reset(S_CTX_REMOTE);
    args_base();
    user_gives("lockstep", "fp");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(env_get("LOCKSTEP_RELAY") == NULL); /* no relay= */
}

/* case_remote_consensus - --lockstep=consensus: the agent with LOCKSTEP_MODE=consensus and digest streaming (over
 * the site's records), none of the deterministic runtime and no conflicts; a job's own stream stays; the site's
 * consensus_every reaches a consensus job that chose no rate (not an fp job, not one that chose its own);
 * enforce=consensus lifts an opted-out job to it, and a job's fp stays fp. */
static void case_remote_consensus(void)
{
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "stream=records";
    env_put("NCCL_ALGO=Tree");
    user_gives("lockstep", "consensus");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_MODE"), "consensus"));
    CHECK(env_get("LOCKSTEP_STREAM") && !strcmp(env_get("LOCKSTEP_STREAM"), "digests"));
    CHECK(env_get("LOCKSTEP_CONFLICTS") == NULL);
    CHECK(env_get("CUBLAS_WORKSPACE_CONFIG") == NULL);
    CHECK(env_get("LD_PRELOAD") != NULL);
    CHECK(env_get("LOCKSTEP_CONSENSUS_EVERY") == NULL);
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "consensus_every=16";
    user_gives("lockstep", "consensus");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(env_get("LOCKSTEP_CONSENSUS_EVERY") && !strcmp(env_get("LOCKSTEP_CONSENSUS_EVERY"), "16"));
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "consensus_every=16";
    env_put("LOCKSTEP_CONSENSUS_EVERY=1");
    user_gives("lockstep", "consensus");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_CONSENSUS_EVERY"), "1"));
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "consensus_every=16";
    user_gives("lockstep", "fp");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(env_get("LOCKSTEP_CONSENSUS_EVERY") == NULL);
    fake_reset(S_CTX_REMOTE);
    args_base();
    env_put("LOCKSTEP_STREAM=records");
    user_gives("lockstep", "consensus");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_STREAM"), "records"));
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "enforce=consensus";
    user_gives("lockstep", "off");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_MODE"), "consensus"));
    fake_reset(S_CTX_REMOTE);
    args_base();
    remote_args[n_remote_args++] = "enforce=consensus";
    user_gives("lockstep", "fp");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_MODE"), "fp"));
}

static void case_remote_untouched(void)
{
    fake_reset(S_CTX_REMOTE);
    args_base();
    env_put("LD_PRELOAD=/u.so");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(F.env[1] == NULL && !strcmp(F.env[0], "LD_PRELOAD=/u.so"));
    fake_reset(S_CTX_REMOTE);
    user_gives("lockstep", "off");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(F.env[0] == NULL);
}

static void case_remote_batch_step(void)
{
    fake_reset(S_CTX_REMOTE);
    args_base();
    F.step_id = 0xfffffffbu;
    user_gives("lockstep", "det");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_MODE"), "det") && !strcmp(env_get("NCCL_ALGO"), "Ring"));
    CHECK(env_get("LD_PRELOAD") == NULL && env_get("LOCKSTEP_TOKEN") == NULL);
    /* The extern step is left alone entirely. */
    fake_reset(S_CTX_REMOTE);
    F.step_id = 0xfffffffcu;
    user_gives("lockstep", "det");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(F.env[0] == NULL);
}

/* The operator's admin token, passed on by sbatch and srun from the submitting shell, reaches no task of any
 * step: under lockstep or not, the batch shell, the extern step. */
static void admin_token_removed(const char *mode, uint32_t step_id, int with_args)
{
    fake_reset(S_CTX_REMOTE);
    args_base();
    F.step_id = step_id;
    env_put("LOCKSTEP_ADMIN_TOKEN=adm1n-t0ken");
    env_put("LD_PRELOAD=/u.so");
    if (mode)
        user_gives("lockstep", mode);
    CHECK(init_and_options(with_args ? n_remote_args : 0, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, with_args ? n_remote_args : 0, remote_args) == 0);
    CHECK(env_get("LOCKSTEP_ADMIN_TOKEN") == NULL);
    CHECK(!strncmp(env_get("LD_PRELOAD"), "/u.so", 5)); /* nothing else of the user's is taken away */
    for (int i = 0; F.env[i]; i++)
        CHECK(!strstr(F.env[i], "adm1n-t0ken"));
}

static void case_remote_admin_token(void)
{
    admin_token_removed("det", 0, 1);
    admin_token_removed("fp", 0, 1);
    admin_token_removed("off", 0, 1);
    admin_token_removed(NULL, 0, 1);            /* a job that asks for nothing */
    admin_token_removed(NULL, 0, 0);            /* a plugin with no configuration */
    admin_token_removed("det", 0xfffffffbu, 1); /* the batch shell */
    admin_token_removed("det", 0xfffffffcu, 1); /* the extern step */
}

/* The user's digest key for the manifest's secret-named variables: from the site secret, the same for every job of
 * the user; the site's secret_vars= go ahead of the job's own LOCKSTEP_SECRET_VARS. */
static void case_remote_digest_key(void)
{
    char want[TOKEN_HEX_LEN + 1];
    static char *args[8];
    fake_reset(S_CTX_REMOTE);
    args_base();
    for (int i = 0; i < n_remote_args; i++)
        args[i] = remote_args[i];
    args[n_remote_args] = "secret_vars=SITE_*,NCCL_IB_PKEY";
    env_put("LOCKSTEP_SECRET_VARS=MY_LICENSE");
    user_gives("lockstep", "fp");
    CHECK(init_and_options(n_remote_args + 1, args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args + 1, args) == 0);
    CHECK(token_compute_env_key("s3cret", 6, "root", want) == 0);
    CHECK(env_get("LOCKSTEP_DIGEST_KEY") && !strcmp(env_get("LOCKSTEP_DIGEST_KEY"), want));
    CHECK(!strcmp(env_get("LOCKSTEP_SECRET_VARS"), "SITE_*,NCCL_IB_PKEY,MY_LICENSE"));
    /* the job's own list alone when the site has none; no key without a secret */
    fake_reset(S_CTX_REMOTE);
    args_base();
    args[0] = remote_args[0];
    args[1] = "server=http://127.0.0.1:1";
    env_put("LOCKSTEP_SECRET_VARS=MY_LICENSE");
    user_gives("lockstep", "fp");
    CHECK(init_and_options(2, args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, 2, args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_MODE"), "fp"));
    CHECK(env_get("LOCKSTEP_DIGEST_KEY") == NULL);
    CHECK(!strcmp(env_get("LOCKSTEP_SECRET_VARS"), "MY_LICENSE"));
    /* a bad secret_vars= is logged, and the step runs */
    fake_reset(S_CTX_REMOTE);
    args_base();
    args[0] = remote_args[0];
    args[1] = "secret_vars=[x";
    user_gives("lockstep", "fp");
    CHECK(init_and_options(2, args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, 2, args) == 0);
    CHECK(strstr(F.log, "invalid plugstack argument 'secret_vars=[x'"));
    CHECK(!strcmp(env_get("LOCKSTEP_MODE"), "fp") && env_get("LOCKSTEP_SECRET_VARS") == NULL);
}

/* A requeued job (SLURM_RESTART_COUNT) keeps its job id and numbers its steps again: the step key carries the
 * attempt, so the agent and lockstepd never mix it up with the previous attempt's run. */
static void step_with_restarts(const char *restarts, const char *want_step)
{
    char var[64];
    fake_reset(S_CTX_REMOTE);
    args_base();
    snprintf(var, sizeof(var), "SLURM_RESTART_COUNT=%s", restarts);
    env_put(var);
    user_gives("lockstep", "det");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_JOB_ID"), "77"));
    CHECK(!strcmp(env_get("LOCKSTEP_STEP_ID"), want_step));
}

static void case_remote_requeued(void)
{
    step_with_restarts("2", "0.r2");
    step_with_restarts("0", "0");
}

static void case_remote_env_fallback(void)
{
    fake_reset(S_CTX_REMOTE);
    args_base();
    env_put("SLURM_LOCKSTEP=det");
    env_put("SLURM_LOCKSTEP_TWIN=tw");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_MODE"), "det") && !strcmp(env_get("LOCKSTEP_TWIN_GROUP"), "tw"));
    /* A bad fallback value refuses the step, as a bad option would. */
    char err[2048];
    fake_reset(S_CTX_REMOTE);
    env_put("SLURM_LOCKSTEP=always");
    CHECK(init_and_options(n_remote_args, remote_args) == 0);
    CHECK(slurm_spank_init_post_opt(sp, n_remote_args, remote_args) == 0);
    CHECK(task_init_in_child(0, err, sizeof(err)) == 1 && strstr(err, "SLURM_LOCKSTEP=always is not a mode"));
}

/* Ignore patterns: the option, else SLURM_LOCKSTEP_IGNORE, else the job's own LOCKSTEP_IGNORE, else the site's
 * ignore= default; "" drops the default; a bad value refuses the step. (One slurmstepd a case: the plugin keeps
 * what its option callbacks saw.) */
static char *ignore_av[6];
static int ignore_ac;

static void ignore_step(void)
{
    fake_reset(S_CTX_REMOTE);
    args_base();
    memcpy(ignore_av, remote_args, sizeof(char *) * (size_t)n_remote_args);
    ignore_av[n_remote_args] = "ignore=MPI_Wtime*";
    ignore_ac = n_remote_args + 1;
}

static void case_ignore_default(void)
{
    ignore_step();
    user_gives("lockstep", "fp");
    CHECK(init_and_options(ignore_ac, ignore_av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, ignore_ac, ignore_av) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_IGNORE"), "MPI_Wtime*"));
}

static void case_ignore_option(void)
{
    ignore_step();
    user_gives("lockstep", "fp");
    user_gives("lockstep-ignore", "report_timings,Solver::finish");
    CHECK(init_and_options(ignore_ac, ignore_av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, ignore_ac, ignore_av) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_IGNORE"), "report_timings,Solver::finish"));
}

/* --lockstep-resume reaches the tasks (LOCKSTEP_RESUME: the agent registers with it when the plugin could not);
 * the environment twin works too. */
static void case_resume_option(void)
{
    ignore_step();
    user_gives("lockstep", "fp");
    user_gives("lockstep-resume", "train --resume {path} --steps {stop}");
    CHECK(init_and_options(ignore_ac, ignore_av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, ignore_ac, ignore_av) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_RESUME"), "train --resume {path} --steps {stop}"));
}

static void case_resume_env(void)
{
    ignore_step();
    env_put("SLURM_LOCKSTEP=fp");
    env_put("SLURM_LOCKSTEP_RESUME=train --resume-step {step}");
    CHECK(init_and_options(ignore_ac, ignore_av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, ignore_ac, ignore_av) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_RESUME"), "train --resume-step {step}"));
}

static void case_ignore_env_empty(void)
{
    ignore_step();
    env_put("SLURM_LOCKSTEP=fp");
    env_put("SLURM_LOCKSTEP_IGNORE=");
    env_put("LOCKSTEP_IGNORE=stale");
    CHECK(init_and_options(ignore_ac, ignore_av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, ignore_ac, ignore_av) == 0);
    CHECK(env_get("LOCKSTEP_IGNORE") == NULL);
}

static void case_ignore_job_env(void)
{
    ignore_step();
    env_put("SLURM_LOCKSTEP=fp");
    env_put("LOCKSTEP_IGNORE=checksum");
    CHECK(init_and_options(ignore_ac, ignore_av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, ignore_ac, ignore_av) == 0);
    CHECK(!strcmp(env_get("LOCKSTEP_IGNORE"), "checksum"));
}

static void case_ignore_bad_env(void)
{
    char err[2048];
    ignore_step();
    env_put("SLURM_LOCKSTEP=fp");
    env_put("SLURM_LOCKSTEP_IGNORE=**");
    CHECK(init_and_options(ignore_ac, ignore_av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, ignore_ac, ignore_av) == 0);
    CHECK(task_init_in_child(0, err, sizeof(err)) == 1 && strstr(err, "matches every record"));
}

static void case_remote_agent_missing(void)
{
    char err[2048];
    char *av[] = {"agent=/nonexistent/liblockstep.so", "timeout_ms=100"};
    fake_reset(S_CTX_REMOTE);
    user_gives("lockstep", "fp");
    CHECK(init_and_options(2, av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, 2, av) == 0);
    CHECK(env_get("LD_PRELOAD") == NULL);
    /* Warned once per step (first task of the first node), never fatal. */
    CHECK(task_init_in_child(0, err, sizeof(err)) == 0 && strstr(err, "runs without fingerprinting"));
    CHECK(task_init_in_child(1, err, sizeof(err)) == 0 && err[0] == 0);
    /* Under enforce the same trouble stops the step. */
    char *av2[] = {"agent=/nonexistent/liblockstep.so", "enforce=fp"};
    fake_reset(S_CTX_REMOTE);
    CHECK(init_and_options(2, av2) == 0);
    CHECK(slurm_spank_init_post_opt(sp, 2, av2) == 0);
    CHECK(task_init_in_child(0, err, sizeof(err)) == 1 && strstr(err, "enforces --lockstep=fp"));
}

static void case_remote_secret_unreadable(void)
{
    char err[2048];
    static char a1[200];
    snprintf(a1, sizeof(a1), "agent=%s", agent_path);
    char *av[] = {a1, "secret=/nonexistent/secret"};
    fake_reset(S_CTX_REMOTE);
    user_gives("lockstep", "fp");
    CHECK(init_and_options(2, av) == 0);
    CHECK(slurm_spank_init_post_opt(sp, 2, av) == 0);
    CHECK(env_get("LOCKSTEP_TOKEN") == NULL);
    CHECK(task_init_in_child(0, err, sizeof(err)) == 0 && strstr(err, "cannot read the site secret"));
}

static void test_local(void **s)
{
    (void)s;
    in_child(case_local);
}
static void test_allocator(void **s)
{
    (void)s;
    in_child(case_allocator);
}
static void test_submit(void **s)
{
    (void)s;
    in_child(case_submit);
}
static void test_slurmd(void **s)
{
    (void)s;
    in_child(case_slurmd);
}
static void test_job_script(void **s)
{
    (void)s;
    in_child(case_job_script);
}
static void test_remote_det(void **s)
{
    (void)s;
    in_child(case_remote_det);
}
static void test_remote_det_derived_cpus(void **s)
{
    (void)s;
    in_child(case_remote_det_derived_cpus);
}
static void test_remote_det_conflict(void **s)
{
    (void)s;
    in_child(case_remote_det_conflict);
}
static void test_remote_attests(void **s)
{
    (void)s;
    in_child(case_remote_attests);
}
static void test_remote_attests_first(void **s)
{
    (void)s;
    in_child(case_remote_attests_first);
}
static void test_remote_attest_again(void **s)
{
    (void)s;
    in_child(case_remote_attest_again);
}
static void test_remote_fp_conflict(void **s)
{
    (void)s;
    in_child(case_remote_fp_conflict);
}
static void test_remote_consensus(void **s)
{
    (void)s;
    in_child(case_remote_consensus);
}
static void test_remote_untouched(void **s)
{
    (void)s;
    in_child(case_remote_untouched);
}
static void test_remote_stream(void **s)
{
    (void)s;
    in_child(case_remote_stream);
    in_child(case_remote_relay);
}
static void test_remote_batch_step(void **s)
{
    (void)s;
    in_child(case_remote_batch_step);
}
static void test_remote_requeued(void **s)
{
    (void)s;
    in_child(case_remote_requeued);
}
static void test_remote_env_fallback(void **s)
{
    (void)s;
    in_child(case_remote_env_fallback);
}
static void test_remote_agent_missing(void **s)
{
    (void)s;
    in_child(case_remote_agent_missing);
}
static void test_remote_ignore(void **s)
{
    (void)s;
    in_child(case_ignore_default);
    in_child(case_ignore_option);
    in_child(case_ignore_env_empty);
    in_child(case_ignore_job_env);
    in_child(case_ignore_bad_env);
    in_child(case_resume_option);
    in_child(case_resume_env);
}
static void test_remote_secret_unreadable(void **s)
{
    (void)s;
    in_child(case_remote_secret_unreadable);
}
static void test_remote_admin_token(void **s)
{
    (void)s;
    in_child(case_remote_admin_token);
}
static void test_remote_digest_key(void **s)
{
    (void)s;
    in_child(case_remote_digest_key);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/ls-test-spank-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(secret_path, sizeof(secret_path), "%s/secret", tmpdir);
    snprintf(agent_path, sizeof(agent_path), "%s/liblockstep.so", tmpdir);
    FILE *f = fopen(secret_path, "w");
    if (!f)
        return -1;
    fputs("s3cret\n\n", f); /* trailing newlines are not part of the key */
    fclose(f);
    chmod(secret_path, 0600);
    f = fopen(agent_path, "w");
    if (!f)
        return -1;
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local),
        cmocka_unit_test(test_remote_requeued),
        cmocka_unit_test(test_allocator),
        cmocka_unit_test(test_submit),
        cmocka_unit_test(test_slurmd),
        cmocka_unit_test(test_job_script),
        cmocka_unit_test(test_remote_det),
        cmocka_unit_test(test_remote_det_derived_cpus),
        cmocka_unit_test(test_remote_det_conflict),
        cmocka_unit_test(test_remote_attests),
        cmocka_unit_test(test_remote_attests_first),
        cmocka_unit_test(test_remote_attest_again),
        cmocka_unit_test(test_remote_fp_conflict),
        cmocka_unit_test(test_remote_untouched),
        cmocka_unit_test(test_remote_consensus),
        cmocka_unit_test(test_remote_stream),
        cmocka_unit_test(test_remote_batch_step),
        cmocka_unit_test(test_remote_env_fallback),
        cmocka_unit_test(test_remote_agent_missing),
        cmocka_unit_test(test_remote_ignore),
        cmocka_unit_test(test_remote_secret_unreadable),
        cmocka_unit_test(test_remote_admin_token),
        cmocka_unit_test(test_remote_digest_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
