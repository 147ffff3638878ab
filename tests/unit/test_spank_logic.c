/* test_spank_logic.c - the SPANK plugin's pure parts: plugstack arguments, modes, det rules, env helpers, lockstepd
 * calls. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "spank/spank_conf.h"
#include "spank/spank_det.h"
#include "spank/spank_env.h"
#include "spank/spank_glue.h"
#include "spank/spank_reg.h"
#include "spank/spank_request.h"

/* --- plugstack.conf arguments, data-driven */

typedef struct arg_case {
    const char *arg;
    int ok;
    const char *why; /* a substring of the reason when not ok */
} arg_case;

static const arg_case arg_cases[] = {
    {"server=http://127.0.0.1:8080", 1, NULL},
    {"server=https://lockstep.example:443/", 1, NULL},
    {"server=ftp://x", 0, "invalid plugstack argument 'server=ftp://x'"},
    {"server=", 0, "invalid"},
    {"secret=/etc/lockstep/secret", 1, NULL},
    {"secret=relative/path", 0, "absolute path"},
    {"agent=/opt/lockstep/lib/liblockstep.so", 1, NULL},
    {"agent=liblockstep.so", 0, "absolute path"},
    {"spool=/var/spool/lockstep", 1, NULL},
    {"stream=digests", 1, NULL},
    {"stream=records", 1, NULL},
    {"stream=all", 0, "records|digests"},
    {"relay=/dev/shm", 1, NULL},
    {"relay=shm", 0, "relay an absolute path"},
    {"relay=/a-node-local-directory-whose-name-is-too-long-for-a-socket", 0, "at most 48 bytes"},
    {"consensus_every=16", 1, NULL},
    {"consensus_every=1", 1, NULL},
    {"consensus_every=0", 0, "consensus_every 1-1000000"},
    {"consensus_every=16x", 0, "consensus_every 1-1000000"},
    {"consensus_every=", 0, "consensus_every 1-1000000"},
    {"default=det", 1, NULL},
    {"default=fp", 1, NULL},
    {"default=OFF", 1, NULL},
    {"default=", 0, "off|consensus|fp|det"},
    {"default=sometimes", 0, "off|consensus|fp|det"},
    {"default=consensus", 1, NULL},
    {"enforce=consensus", 1, NULL},
    {"enforce=fp", 1, NULL},
    {"enforce=strict", 0, "invalid plugstack argument 'enforce=strict'"},
    {"timeout_ms=250", 1, NULL},
    {"timeout_ms=0", 0, "1-60000"},
    {"timeout_ms=9x", 0, "1-60000"},
    {"ignore=report_timings,MPI_Wtime*", 1, NULL},
    {"ignore=", 1, NULL},
    {"ignore=a,,b", 0, "empty pattern"},
    {"ignore=*", 0, "matches every record"},
    {"ignore=[abc", 0, "without its ']'"},
    {"colour=blue", 0, "unknown plugstack argument 'colour=blue'"},
    {"verbose", 0, "has no value"},
};

static void test_conf_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(arg_cases) / sizeof(arg_cases[0]); i++) {
        lsp_conf c;
        char why[512] = "";
        char *av[] = {(char *)arg_cases[i].arg};
        lsp_conf_defaults(&c);
        int rc = lsp_conf_parse(&c, 1, av, why, sizeof(why));
        if (arg_cases[i].ok && rc != 0)
            fail_msg("'%s' should be accepted: %s", arg_cases[i].arg, why);
        if (!arg_cases[i].ok && (rc != -1 || !strstr(why, arg_cases[i].why)))
            fail_msg("'%s' should be refused with '%s', got rc %d '%s'", arg_cases[i].arg, arg_cases[i].why, rc, why);
    }
}

static void test_conf_values(void **state)
{
    (void)state;
    lsp_conf c;
    char why[512] = "";
    char *av[] = {"server=http://h:1/", "secret=/s", "agent=/a.so",    "default=fp",    "enforce=det",
                  "spool=/sp",          "bogus=1",   "timeout_ms=700", "stream=digests"};
    lsp_conf_defaults(&c);
    assert_string_equal(c.agent, LSP_DEFAULT_AGENT);
    assert_int_equal(c.dflt, LSP_MODE_OFF);
    /* One bad argument does not stop the others from applying. */
    assert_int_equal(lsp_conf_parse(&c, 9, av, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "bogus=1"));
    assert_string_equal(c.server, "http://h:1");
    assert_string_equal(c.secret, "/s");
    assert_string_equal(c.agent, "/a.so");
    assert_string_equal(c.spool, "/sp");
    assert_int_equal(c.dflt, LSP_MODE_FP);
    assert_int_equal(c.enforce, LSP_MODE_DET);
    assert_int_equal(c.timeout_ms, 700);
    assert_string_equal(c.stream, "digests");
}

/* The example for sites parses cleanly. */
static void test_conf_example(void **state)
{
    (void)state;
    const char *src = getenv("LOCKSTEP_SRC");
    char path[1024], line[4096];
    snprintf(path, sizeof(path), "%s/deploy/examples/plugstack.conf.d/lockstep.conf", src ? src : ".");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int found = 0;
    while (fgets(line, sizeof(line), f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *av[16], *save = NULL;
        int ac = 0;
        for (char *t = strtok_r(line, " \t\n", &save); t && ac < 16; t = strtok_r(NULL, " \t\n", &save))
            av[ac++] = t;
        assert_true(ac > 2);
        assert_string_equal(av[0], "required");
        lsp_conf c;
        char why[512] = "";
        lsp_conf_defaults(&c);
        if (lsp_conf_parse(&c, ac - 2, av + 2, why, sizeof(why)))
            fail_msg("%s: %s", path, why);
        assert_string_equal(c.secret, "/etc/lockstep/secret");
        found++;
    }
    fclose(f);
    assert_int_equal(found, 1);
}

static void test_modes(void **state)
{
    (void)state;
    lsp_mode m;
    assert_int_equal(lsp_mode_parse(NULL, &m), 0);
    assert_int_equal(m, LSP_MODE_FP);
    assert_int_equal(lsp_mode_parse("", &m), 0);
    assert_int_equal(m, LSP_MODE_FP);
    assert_int_equal(lsp_mode_parse("DET", &m), 0);
    assert_int_equal(m, LSP_MODE_DET);
    assert_int_equal(lsp_mode_parse("off", &m), 0);
    assert_int_equal(m, LSP_MODE_OFF);
    assert_int_equal(lsp_mode_parse("on", &m), -1);
    assert_string_equal(lsp_mode_name(LSP_MODE_DET), "det");
    assert_int_equal(lsp_mode_parse("Consensus", &m), 0);
    assert_int_equal(m, LSP_MODE_CONSENSUS);
    assert_string_equal(lsp_mode_name(LSP_MODE_CONSENSUS), "consensus");

    lsp_conf c;
    lsp_conf_defaults(&c);
    lsp_request r = {0};
    assert_int_equal(lsp_effective_mode(&c, &r), LSP_MODE_OFF);
    c.dflt = LSP_MODE_FP;
    assert_int_equal(lsp_effective_mode(&c, &r), LSP_MODE_FP);
    r.mode_set = 1;
    r.mode = LSP_MODE_OFF; /* the user may opt out of a default... */
    assert_int_equal(lsp_effective_mode(&c, &r), LSP_MODE_OFF);
    c.enforce = LSP_MODE_FP; /* ...but not out of what the site enforces */
    assert_int_equal(lsp_effective_mode(&c, &r), LSP_MODE_FP);
    r.mode = LSP_MODE_DET;
    assert_int_equal(lsp_effective_mode(&c, &r), LSP_MODE_DET);
    r.mode = LSP_MODE_CONSENSUS; /* consensus records less than fp: an enforced fp wins */
    assert_int_equal(lsp_effective_mode(&c, &r), LSP_MODE_FP);
    c.enforce = LSP_MODE_CONSENSUS; /* and an enforced consensus lifts an opt-out, not a job's fp */
    assert_int_equal(lsp_effective_mode(&c, &r), LSP_MODE_CONSENSUS);
    r.mode = LSP_MODE_OFF;
    assert_int_equal(lsp_effective_mode(&c, &r), LSP_MODE_CONSENSUS);
    r.mode = LSP_MODE_FP;
    assert_int_equal(lsp_effective_mode(&c, &r), LSP_MODE_FP);

    assert_int_equal(lsp_twin_valid("exp-42/a.b_c:d@e+f"), 0);
    assert_int_equal(lsp_twin_valid(""), -1);
    assert_int_equal(lsp_twin_valid("a b"), -1);
    assert_int_equal(lsp_twin_valid("a;rm"), -1);
}

/* --- the det rules, against a fake environment */

typedef struct fake_env {
    const char *kv[32];
} fake_env;

static const char *fake_get(void *ctx, const char *name)
{
    fake_env *e = ctx;
    size_t n = strlen(name);
    for (int i = 0; e->kv[i]; i++)
        if (!strncmp(e->kv[i], name, n) && e->kv[i][n] == '=')
            return e->kv[i] + n + 1;
    return NULL;
}

static const char *plan_value(const lsp_setting *list, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i].name, name))
            return list[i].value;
    return NULL;
}

static void test_det_empty_env(void **state)
{
    (void)state;
    fake_env e = {{NULL}};
    lsp_det_plan p;
    lsp_det_plan_make(fake_get, &e, 4, &p);
    assert_int_equal(p.n_conflict, 0);
    assert_string_equal(plan_value(p.set, p.n_set, "NCCL_ALGO"), "Ring");
    assert_string_equal(plan_value(p.set, p.n_set, "NCCL_PROTO"), "Simple");
    assert_string_equal(plan_value(p.set, p.n_set, "CUBLAS_WORKSPACE_CONFIG"), ":4096:8");
    assert_string_equal(plan_value(p.set, p.n_set, "NCCL_NVLS_ENABLE"), "0");
    assert_string_equal(plan_value(p.set, p.n_set, "NCCL_COLLNET_ENABLE"), "0");
    assert_string_equal(plan_value(p.set, p.n_set, "NVTE_ALLOW_NONDETERMINISTIC_ALGO"), "0");
    assert_string_equal(plan_value(p.set, p.n_set, "MKL_CBWR"), "COMPATIBLE");
    assert_string_equal(plan_value(p.set, p.n_set, "PYTHONHASHSEED"), "0");
    assert_string_equal(plan_value(p.set, p.n_set, "OMP_NUM_THREADS"), "4");
    assert_string_equal(plan_value(p.set, p.n_set, "NCCL_MIN_NCHANNELS"), LSP_DET_NCHANNELS);
    assert_string_equal(plan_value(p.set, p.n_set, "NCCL_MAX_NCHANNELS"), LSP_DET_NCHANNELS);
    assert_string_equal(plan_value(p.set, p.n_set, "OMPI_MCA_coll_tuned_use_dynamic_rules"), "1");
    assert_string_equal(plan_value(p.set, p.n_set, "OMPI_MCA_coll_tuned_allreduce_algorithm"), "4");
    char buf[64];
    assert_int_equal(lsp_det_message(&p, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");
}

/* Each case: one user setting, and whether det accepts it. */
typedef struct det_case {
    const char *kv;
    int ok;
} det_case;

static const det_case det_cases[] = {
    {"NCCL_ALGO=Ring", 1},
    {"NCCL_ALGO=ring", 1},
    {"NCCL_ALGO=allreduce:ring", 1},
    {"NCCL_ALGO=Tree", 0},
    {"NCCL_ALGO=NVLS", 0},
    {"NCCL_ALGO=Ring,Tree", 0},
    {"NCCL_ALGO=^Tree", 0},
    {"NCCL_ALGO=CollnetDirect", 0},
    {"NCCL_PROTO=Simple", 1},
    {"NCCL_PROTO=LL128", 0},
    {"NCCL_NVLS_ENABLE=1", 0},
    {"NCCL_COLLNET_ENABLE=1", 0},
    {"CUBLAS_WORKSPACE_CONFIG=:16:8", 1},
    {"CUBLAS_WORKSPACE_CONFIG=:4096:2", 0},
    {"PYTHONHASHSEED=123", 1},
    {"PYTHONHASHSEED=random", 0},
    {"OMP_NUM_THREADS=8", 1},
    {"OMP_NUM_THREADS=0", 0},
    {"OMP_NUM_THREADS=4,2", 0},
    {"MKL_CBWR=AVX2", 1},
    {"MKL_CBWR=AUTO", 0},
    {"NVTE_ALLOW_NONDETERMINISTIC_ALGO=1", 0},
    {"OMPI_MCA_coll_tuned_use_dynamic_rules=0", 0},
    {"OMPI_MCA_coll_tuned_allreduce_algorithm=0", 0},
    {"OMPI_MCA_coll_tuned_allreduce_algorithm=6", 1},
    {"NCCL_MIN_NCHANNELS=4", 1},
    {"NCCL_MAX_NCHANNELS=x", 0},
};

static void test_det_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(det_cases) / sizeof(det_cases[0]); i++) {
        fake_env e = {{det_cases[i].kv, NULL}};
        lsp_det_plan p;
        lsp_det_plan_make(fake_get, &e, 1, &p);
        if (det_cases[i].ok != (p.n_conflict == 0))
            fail_msg("%s: det should %s it", det_cases[i].kv, det_cases[i].ok ? "accept" : "refuse");
        if (!det_cases[i].ok) {
            char msg[1024];
            lsp_det_message(&p, msg, sizeof(msg));
            if (!strstr(msg, det_cases[i].kv) || !strstr(msg, "breaks --lockstep=det") || !strstr(msg, "--lockstep=fp"))
                fail_msg("%s: the message does not name it, the mode and the way out: %s", det_cases[i].kv, msg);
        }
    }
}

static void test_det_channels(void **state)
{
    (void)state;
    lsp_det_plan p;
    fake_env lo = {{"NCCL_MIN_NCHANNELS=4", NULL}};
    lsp_det_plan_make(fake_get, &lo, 1, &p);
    assert_string_equal(plan_value(p.set, p.n_set, "NCCL_MAX_NCHANNELS"), "4");
    assert_null(plan_value(p.set, p.n_set, "NCCL_MIN_NCHANNELS"));
    fake_env hi = {{"NCCL_MAX_NCHANNELS=2", NULL}};
    lsp_det_plan_make(fake_get, &hi, 1, &p);
    assert_string_equal(plan_value(p.set, p.n_set, "NCCL_MIN_NCHANNELS"), "2");
    fake_env both = {{"NCCL_MIN_NCHANNELS=2", "NCCL_MAX_NCHANNELS=16", NULL}};
    lsp_det_plan_make(fake_get, &both, 1, &p);
    assert_int_equal(p.n_conflict, 1);
    assert_string_equal(p.conflict[0].name, "NCCL_MIN_NCHANNELS");
    fake_env same = {{"NCCL_MIN_NCHANNELS=16", "NCCL_MAX_NCHANNELS=16", NULL}};
    lsp_det_plan_make(fake_get, &same, 1, &p);
    assert_int_equal(p.n_conflict, 0);
    assert_null(plan_value(p.set, p.n_set, "NCCL_MIN_NCHANNELS"));
}

static void test_det_conflict_list(void **state)
{
    (void)state;
    fake_env e = {{"NCCL_ALGO=Tree", "PYTHONHASHSEED=random", "OMP_NUM_THREADS=2", NULL}};
    lsp_det_plan p;
    lsp_det_plan_make(fake_get, &e, 1, &p);
    assert_int_equal(p.n_conflict, 2);
    char buf[256];
    lsp_det_conflicts(&p, buf, sizeof(buf));
    assert_string_equal(buf, "NCCL_ALGO=Tree;PYTHONHASHSEED=random");
    /* The user's OMP_NUM_THREADS is kept: not in the list of things to set. */
    assert_null(plan_value(p.set, p.n_set, "OMP_NUM_THREADS"));
    /* Truncation keeps the string terminated. */
    assert_true(lsp_det_conflicts(&p, buf, 10) <= 9);
    assert_int_equal(strlen(buf), 9);
}

/* --- environment helpers */

static void test_preload(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(lsp_preload_join(NULL, "/a/ls.so", out, sizeof(out)), 0);
    assert_string_equal(out, "/a/ls.so");
    assert_int_equal(lsp_preload_join("", "/a/ls.so", out, sizeof(out)), 0);
    assert_string_equal(out, "/a/ls.so");
    assert_int_equal(lsp_preload_join("/u/x.so /u/y.so", "/a/ls.so", out, sizeof(out)), 0);
    assert_string_equal(out, "/u/x.so /u/y.so:/a/ls.so");
    assert_int_equal(lsp_preload_join("/a/ls.so:/u/x.so", "/a/ls.so", out, sizeof(out)), 0);
    assert_string_equal(out, "/a/ls.so:/u/x.so");
    assert_int_equal(lsp_preload_join("/a/ls.so.1", "/a/ls.so", out, sizeof(out)), 0);
    assert_string_equal(out, "/a/ls.so.1:/a/ls.so");
    assert_int_equal(lsp_preload_join("/u/x.so", "/a/ls.so", out, 10), -1);
    /* Several agent libraries: each appended once, in order. */
    assert_int_equal(lsp_preload_join("/u/x.so", "/a/ls.so:/a/ls_mpi.so", out, sizeof(out)), 0);
    assert_string_equal(out, "/u/x.so:/a/ls.so:/a/ls_mpi.so");
    assert_int_equal(lsp_preload_join("/a/ls_mpi.so", "/a/ls.so:/a/ls_mpi.so", out, sizeof(out)), 0);
    assert_string_equal(out, "/a/ls_mpi.so:/a/ls.so");
}

static void test_exit_code_and_argv(void **state)
{
    (void)state;
    assert_int_equal(lsp_exit_code(0), 0);
    assert_int_equal(lsp_exit_code(3 << 8), 3);
    assert_int_equal(lsp_exit_code(9), 137); /* killed by SIGKILL */
    char *argv[] = {"python", "train.py", "--lr", "0.1"};
    char out[64];
    assert_int_equal(lsp_argv_join(4, argv, out, sizeof(out)), 24);
    assert_string_equal(out, "python train.py --lr 0.1");
    assert_int_equal(lsp_argv_join(4, argv, out, 8), 7);
    assert_string_equal(out, "python ");
    assert_int_equal(lsp_argv_join(0, NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "");
}

static void test_request_check(void **state)
{
    (void)state;
    char why[256];
    assert_int_equal(lsp_request_check(LSP_OPT_MODE, "det", NULL, why, sizeof(why)), 0);
    assert_int_equal(lsp_request_check(LSP_OPT_MODE, NULL, NULL, why, sizeof(why)), 0);
    assert_int_equal(lsp_request_check(LSP_OPT_MODE, "yes", NULL, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "--lockstep=yes is not a mode"));
    assert_int_equal(lsp_request_check(LSP_OPT_TRACE, "metrics;ops:steps=1-2:ranks=0,3", NULL, why, sizeof(why)), 0);
    assert_int_equal(lsp_request_check(LSP_OPT_TRACE, "everything", NULL, why, sizeof(why)), -1);
    assert_int_equal(lsp_request_check(LSP_OPT_TRACE, "", NULL, why, sizeof(why)), -1);
    assert_int_equal(lsp_request_check(LSP_OPT_TWIN, "g1", NULL, why, sizeof(why)), 0);
    assert_int_equal(lsp_request_check(LSP_OPT_TWIN, NULL, NULL, why, sizeof(why)), -1);
    /* a value from a variable is named as the variable the user set, never as the option */
    assert_int_equal(lsp_request_check(LSP_OPT_TWIN, "a b", "SLURM_LOCKSTEP_TWIN", why, sizeof(why)), -1);
    assert_non_null(strstr(why, "SLURM_LOCKSTEP_TWIN=a b is not a twin group name"));
    assert_null(strstr(why, "--lockstep"));
    assert_int_equal(lsp_request_check(LSP_OPT_MODE, "yes", "SLURM_LOCKSTEP", why, sizeof(why)), -1);
    assert_non_null(strstr(why, "SLURM_LOCKSTEP=yes is not a mode; use SLURM_LOCKSTEP=off, consensus, fp or det"));
    /* --lockstep-ignore: glob patterns, checked where the user typed them; "" drops the site's default */
    char long_why[1024];
    assert_int_equal(
        lsp_request_check(LSP_OPT_IGNORE, "report_timings,Solver::finish*", NULL, long_why, sizeof(long_why)), 0);
    assert_int_equal(lsp_request_check(LSP_OPT_IGNORE, "", NULL, long_why, sizeof(long_why)), 0);
    assert_int_equal(lsp_request_check(LSP_OPT_IGNORE, "report_timings,", NULL, long_why, sizeof(long_why)), -1);
    assert_non_null(strstr(long_why, "--lockstep-ignore=report_timings, is not a list of patterns (an empty pattern"));
    assert_int_equal(lsp_request_check(LSP_OPT_IGNORE, "f(int, double)", NULL, long_why, sizeof(long_why)), -1);
    assert_int_equal(lsp_request_check(LSP_OPT_IGNORE, NULL, NULL, long_why, sizeof(long_why)), -1);
    /* --lockstep-resume: a command that names the checkpoint ({step} or {path}) */
    assert_int_equal(lsp_request_check(LSP_OPT_RESUME, "train --resume /ck/step-{step} --steps {stop}", NULL, long_why,
                                       sizeof(long_why)),
                     0);
    assert_int_equal(lsp_request_check(LSP_OPT_RESUME, "train --resume /ck/latest", NULL, long_why, sizeof(long_why)),
                     -1);
    assert_non_null(strstr(long_why, "--lockstep-resume=train --resume /ck/latest is not a resume template (the resume "
                                     "template names no checkpoint"));
    assert_int_equal(lsp_request_check(LSP_OPT_RESUME, "train {ckpt}", NULL, long_why, sizeof(long_why)), -1);
    assert_non_null(strstr(long_why, "names {ckpt}"));
    assert_int_equal(lsp_request_check(LSP_OPT_RESUME, NULL, NULL, long_why, sizeof(long_why)), -1);
}

/* --- lockstepd calls: the body, and time limits against real sockets */

static void test_reg_body(void **state)
{
    (void)state;
    wire_run info = {"42", "0", "g", 8, 0, "alice", "gpu", "n[1-2]", "python \"t.py\"", "det", "slurm:42.0"};
    char *body = wire_run_body(&info);
    assert_non_null(body);
    json_error_t err;
    json_t *o = json_loads(body, 0, &err);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "job_id")), "42");
    assert_string_equal(json_string_value(json_object_get(o, "step_id")), "0");
    assert_string_equal(json_string_value(json_object_get(o, "twin_group")), "g");
    assert_int_equal(json_integer_value(json_object_get(o, "ranks")), 8);
    assert_int_equal(json_integer_value(json_object_get(o, "start_step")), 0);
    assert_string_equal(json_string_value(json_object_get(o, "user")), "alice");
    assert_string_equal(json_string_value(json_object_get(o, "nodes")), "n[1-2]");
    assert_string_equal(json_string_value(json_object_get(o, "command")), "python \"t.py\"");
    assert_string_equal(json_string_value(json_object_get(o, "mode")), "det");
    assert_string_equal(json_string_value(json_object_get(o, "partition")), "gpu");
    assert_string_equal(json_string_value(json_object_get(o, "client_id")), "slurm:42.0");
    json_decref(o);
    free(body);
    /* No twin group: the key is left out. */
    info.twin_group = "";
    body = wire_run_body(&info);
    assert_null(strstr(body, "twin_group"));
    free(body);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* listener - a loopback socket that listens and never answers; its port in *port. */
static int listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 8) ||
        getsockname(fd, (struct sockaddr *)&a, &len))
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

static void test_reg_server_down(void **state)
{
    (void)state;
    int port;
    int fd = listener(&port);
    assert_true(fd >= 0);
    close(fd); /* now nothing listens there */
    char url[64], id[64], why[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    wire_run info = {"1", "0", NULL, 1, 0, "u", NULL, NULL, "true", "fp", NULL};
    double t = now_ms();
    assert_int_equal(lsp_reg_register(url, "tok", &info, 2000, id, sizeof(id), why, sizeof(why)), -1);
    assert_true(now_ms() - t < 1000);
    assert_non_null(strstr(why, url));
    assert_int_equal(lsp_reg_end(url, "tok", "run", 0, 0, 2000, why, sizeof(why)), -1);
    assert_int_equal(lsp_reg_lookup(url, "tok", "1", "0", 2000, id, sizeof(id), why, sizeof(why)), -1);
}

static void test_reg_server_hangs(void **state)
{
    (void)state;
    int port;
    int fd = listener(&port); /* accepts connections (backlog), never answers */
    assert_true(fd >= 0);
    char url[64], id[64], why[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    wire_run info = {"1", "0", NULL, 1, 0, "u", NULL, NULL, "true", "fp", NULL};
    double t = now_ms();
    assert_int_equal(lsp_reg_register(url, NULL, &info, 300, id, sizeof(id), why, sizeof(why)), -1);
    double took = now_ms() - t;
    assert_true(took >= 250 && took < 1500);
    assert_non_null(strstr(why, "imeout"));
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conf_cases),      cmocka_unit_test(test_conf_values),
        cmocka_unit_test(test_conf_example),    cmocka_unit_test(test_modes),
        cmocka_unit_test(test_det_empty_env),   cmocka_unit_test(test_det_cases),
        cmocka_unit_test(test_det_channels),    cmocka_unit_test(test_det_conflict_list),
        cmocka_unit_test(test_preload),         cmocka_unit_test(test_exit_code_and_argv),
        cmocka_unit_test(test_request_check),   cmocka_unit_test(test_reg_body),
        cmocka_unit_test(test_reg_server_down), cmocka_unit_test(test_reg_server_hangs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
