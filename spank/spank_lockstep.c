/* spank_lockstep.c - the SPANK plugin: --lockstep options, and in slurmstepd the agent, det runtime and token. */
#include <errno.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/crypto/token.h"
#include "common/tracespec.h"
#include "spank/spank_conf.h"
#include "spank/spank_det.h"
#include "spank/spank_env.h"
#include "spank/spank_glue.h"
#include "spank/spank_reg.h"
#include "spank/spank_request.h"

#pragma GCC visibility push(default)
#include <slurm/spank.h>
SPANK_PLUGIN(lockstep, 1);
#pragma GCC visibility pop

/* Step ids Slurm uses for steps that are not srun steps (slurm.h). */
#define STEP_BATCH 0xfffffffbu
#define STEP_SPECIAL_MIN 0xfffffff0u

static int opt_check(int val, const char *optarg, int remote);

static struct spank_option opt_table[] = {
    {"lockstep", "[off|consensus|fp|det]",
     "Fingerprint this job with Lockstep (fp, the default), also under a deterministic runtime (det), only the "
     "copies every rank must hold alike, checked within the run (consensus), or not (off)",
     2, LSP_OPT_MODE, opt_check},
    {"lockstep-twin", "NAME", "Lockstep twin group: runs that must be bitwise identical", 1, LSP_OPT_TWIN, opt_check},
    {"lockstep-trace", "SPEC", "What Lockstep records, e.g. 'metrics;ops:steps=120-125:ranks=0,4-7'", 1, LSP_OPT_TRACE,
     opt_check},
    {"lockstep-ignore", "GLOB[,GLOB...]",
     "Records Lockstep does not make: patterns matched against record names and the functions of their call sites, "
     "e.g. report_timings for a closing reduction of timings",
     1, LSP_OPT_IGNORE, opt_check},
    {"lockstep-resume", "'CMD TEMPLATE'",
     "How this job resumes from a checkpoint, for replays of a late step by lockstep narrow: the command with {step} "
     "(the checkpoint's last step) or {path}, and optionally {stop} (the last step the replay needs)",
     1, LSP_OPT_RESUME, opt_check},
};
#define N_OPTS (sizeof(opt_table) / sizeof(opt_table[0]))

/* State kept in one slurmstepd between callbacks (one step per process). */
static struct {
    int active;       /* this step is under lockstep and tasks get the agent */
    int refused;      /* init_post_opt refused the step: task_init fails its tasks */
    char note[4096];  /* what the user must be told: printed on the tasks' stderr */
    uint32_t node_id; /* this node's index in the step */
    char job_id[16], step_id[32];
    int looked_up; /* task_exit asked lockstepd for the run id once */
    lsp_conf conf;
    char token[TOKEN_HEX_LEN + 1];
    char run_id[128];
    int attest_again; /* the attestation did not get through at the start: try once more at a task exit */
    lsp_job_facts facts;
    lsp_step_result res; /* its attestation token stays in slurmstepd, wiped at exit */
} step;

/* Option values seen by opt_check in this process. In slurmstepd the
 * callbacks run before init_post_opt, where spank_option_getopt is not
 * available. */
static struct {
    int given;
    char value[4096];
    int bare;
} seen[6];

/* opt_check - validate an option value where the user typed it, so that a
 * typo fails at submission with a clear message; remember it for later. */
static int opt_check(int val, const char *optarg, int remote)
{
    char why[256];
    (void)remote;
    if (lsp_request_check(val, optarg, NULL, why, sizeof(why))) {
        slurm_error("lockstep: %s", why);
        return -1;
    }
    if (val >= 1 && val <= 5) {
        seen[val].given = 1;
        seen[val].bare = optarg == NULL;
        snprintf(seen[val].value, sizeof(seen[val].value), "%s", optarg ? optarg : "");
    }
    return 0;
}

/* conf_load - the plugstack.conf arguments, parsed again in every callback
 * (prolog and epilog processes never see slurm_spank_init). Each bad
 * argument is logged, the others apply. */
static void conf_load(lsp_conf *c, int ac, char **av)
{
    char why[512];
    lsp_conf_defaults(c);
    if (lsp_conf_parse(c, ac, av, why, sizeof(why)))
        slurm_error("lockstep: %s", why);
}

/* slurm_spank_init - register the --lockstep* options (srun, sbatch, salloc,
 * slurmstepd); in slurmd, check the plugstack arguments once and log the bad
 * ones. Always returns 0: a plugin problem never stops slurmd or a job. */
int slurm_spank_init(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_SLURMD) { /* report bad arguments once, in slurmd's log, at start */
        lsp_conf c;
        conf_load(&c, ac, av);
        return 0;
    }
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
        return 0;
    for (size_t i = 0; i < N_OPTS; i++) {
        spank_err_t rc = spank_option_register(sp, &opt_table[i]);
        if (rc != ESPANK_SUCCESS)
            slurm_error("lockstep: cannot register option --%s: %s", opt_table[i].name, spank_strerror(rc));
    }
    return 0;
}

/* Lookups through the SPANK API for the glue (spank_glue.h). */
static int sp_getenv(void *ctx, const char *name, char *buf, size_t cap)
{
    spank_err_t rc = spank_getenv((spank_t)ctx, name, buf, (int)cap);
    if (rc == ESPANK_SUCCESS)
        return 1;
    return rc == ESPANK_ENV_NOEXIST ? 0 : -1;
}

static int sp_setenv(void *ctx, const char *name, const char *value)
{
    return spank_setenv((spank_t)ctx, name, value, 1) == ESPANK_SUCCESS ? 0 : -1;
}

static int sp_unsetenv(void *ctx, const char *name)
{
    return spank_unsetenv((spank_t)ctx, name) == ESPANK_SUCCESS ? 0 : -1;
}

static int sp_option(void *ctx, int which, const char **value)
{
    if (which >= 1 && which <= 5 && seen[which].given) {
        *value = seen[which].bare ? NULL : seen[which].value;
        return 1;
    }
    for (size_t i = 0; i < N_OPTS; i++) {
        if (opt_table[i].val != which)
            continue;
        char *arg = NULL;
        if (spank_option_getopt((spank_t)ctx, &opt_table[i], &arg) != ESPANK_SUCCESS)
            return 0;
        *value = arg;
        return 1;
    }
    return 0;
}

static void sp_user_msg(void *ctx, const char *msg)
{
    (void)ctx;
    size_t n = strlen(step.note);
    if (n + 12 < sizeof(step.note))
        snprintf(step.note + n, sizeof(step.note) - n, "%s%s", n ? "\nlockstep: " : "", msg);
    slurm_error("lockstep: %s", msg);
    slurm_spank_log("lockstep: %s", msg);
}

static void sp_log(void *ctx, const char *msg)
{
    (void)ctx;
    slurm_info("lockstep: %s", msg);
}

/* job_facts - the step's identity and shape from the SPANK items. */
static int job_facts(spank_t sp, lsp_job_facts *f)
{
    uint32_t job = 0, stepid = 0, ntasks = 0, nodeid = 0;
    uint16_t cpt = 0;
    uid_t uid = 0;
    int argc = 0;
    char **argv = NULL;
    memset(f, 0, sizeof(*f));
    if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS)
        return -1;
    f->job_id = job;
    f->step_id = stepid;
    f->is_batch = stepid == STEP_BATCH;
    f->is_special = stepid >= STEP_SPECIAL_MIN && stepid != STEP_BATCH;
    if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) == ESPANK_SUCCESS)
        f->ntasks = ntasks;
    if (spank_get_item(sp, S_JOB_NODEID, &nodeid) == ESPANK_SUCCESS)
        f->node_id = nodeid;
    /* The CPUs a task asked for (-c, --cpus-per-task: SLURM_CPUS_PER_TASK in its environment), 1 when it asked for
     * none; det pins OMP_NUM_THREADS to it (spank_det.c). Not S_STEP_CPUS_PER_TASK alone: for a step that asked for
     * none, srun inside a batch job derives it from how the job's CPUs fell on its nodes (3 for tasks placed 3,1, 1
     * for 1,3), so two submissions of one job were pinned differently, and their twins differed by it. */
    f->cpus_per_task = 1;
    char want_cpt[16];
    if (spank_getenv(sp, "SLURM_CPUS_PER_TASK", want_cpt, sizeof(want_cpt)) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_STEP_CPUS_PER_TASK, &cpt) == ESPANK_SUCCESS && cpt > 0)
        f->cpus_per_task = cpt;
    if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS) {
        struct passwd pw, *res = NULL;
        char pwbuf[1024];
        if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res)
            snprintf(f->user, sizeof(f->user), "%s", res->pw_name);
        else
            snprintf(f->user, sizeof(f->user), "%u", (unsigned)uid);
    }
    if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) == ESPANK_SUCCESS) {
        lsp_argv_join(argc, argv, f->command, sizeof(f->command));
        f->argv = argv; /* registered as words: a replay runs exactly these (common/wire.h) */
        f->argc = argc;
    }
    /* The global ranks that run on this node, from slurmstepd's own task table (what it attests). */
    uint32_t nlocal = 0;
    if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &nlocal) == ESPANK_SUCCESS && nlocal <= LSP_MAX_LOCAL_TASKS) {
        uint32_t i;
        for (i = 0; i < nlocal; i++)
            if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, i, &f->local_ranks[i]) != ESPANK_SUCCESS)
                break;
        f->nlocal = i == nlocal ? nlocal : 0;
    }
    /* The requeue count: slurmstepd's own, or the environment's if that says more. (With the environment
     * alone, a requeued step on a loaded machine was once keyed as its first attempt.) */
    uint32_t restarts = 0;
    char env_restarts[16];
    if (spank_get_item(sp, S_SLURM_RESTART_COUNT, &restarts) == ESPANK_SUCCESS)
        f->restarts = restarts;
    if (spank_getenv(sp, "SLURM_RESTART_COUNT", env_restarts, sizeof(env_restarts)) == ESPANK_SUCCESS &&
        strtoul(env_restarts, NULL, 10) > f->restarts)
        f->restarts = (uint32_t)strtoul(env_restarts, NULL, 10);
    return 0;
}

/* Lookups at submission (srun, sbatch, salloc): the submitting shell's own environment, which the job takes
 * along; nothing there is set or unset. */
static int submit_getenv(void *ctx, const char *name, char *buf, size_t cap)
{
    (void)ctx;
    const char *v = getenv(name);
    if (!v)
        return 0;
    if (strlen(v) >= cap)
        return -1;
    memcpy(buf, v, strlen(v) + 1);
    return 1;
}

static int submit_setenv(void *ctx, const char *name, const char *value)
{
    (void)ctx;
    (void)name;
    (void)value;
    return -1;
}

static int submit_unsetenv(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return -1;
}

/* submit_check - before anything is allocated: a SLURM_LOCKSTEP* variable with a bad value fails the submission
 * with the reason, and requests that would do nothing without --lockstep are worth a warning (spank_request.h).
 * The plugstack arguments are read quietly: slurmd reports a bad one to the site, not to every user. */
static int submit_check(spank_t sp, int ac, char **av)
{
    lsp_conf c;
    char why[1024];
    lsp_conf_defaults(&c);
    lsp_conf_parse(&c, ac, av, why, sizeof(why));
    lsp_glue_ops ops = {sp, submit_getenv, submit_setenv, submit_unsetenv, sp_option, sp_user_msg, sp_log};
    int rc = lsp_submit_check(&ops, &c, why, sizeof(why));
    if (rc < 0) {
        slurm_error("lockstep: %s", why);
        return -1;
    }
    if (rc > 0)
        slurm_spank_log("lockstep: %s", why);
    return 0;
}

/* slurm_spank_init_post_opt - in srun, sbatch and salloc: check the request before anything is allocated. In
 * slurmstepd, still as root: decide the mode, validate and set the runtime, mint the token, register the step. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
        return submit_check(sp, ac, av);
    if (ctx != S_CTX_REMOTE)
        return 0;
    conf_load(&step.conf, ac, av);
    lsp_glue_ops ops = {sp, sp_getenv, sp_setenv, sp_unsetenv, sp_option, sp_user_msg, sp_log};
    lsp_job_facts f;
    if (job_facts(sp, &f)) {
        lsp_step_scrub(&ops);
        slurm_error("lockstep: cannot read the job and step id; this step runs without lockstep");
        if (step.conf.enforce > LSP_MODE_OFF) {
            step.refused = 1;
            snprintf(step.note, sizeof(step.note), "cannot read the job and step id, and the site enforces lockstep");
        }
        return 0;
    }
    step.node_id = f.node_id;
    snprintf(step.job_id, sizeof(step.job_id), "%u", f.job_id);
    lsp_step_key(&f, step.step_id, sizeof(step.step_id));
    lsp_step_result res;
    int rc = lsp_step_prepare(&ops, &step.conf, &f, &res);
    step.active = res.active;
    memcpy(step.token, res.token, sizeof(step.token));
    memcpy(step.run_id, res.run_id, sizeof(step.run_id));
    if (res.active && res.attest[0] && !res.attested && step.conf.server[0]) {
        step.attest_again = 1;
        step.facts = f;
        step.res = res;
    }
    explicit_bzero(res.token, sizeof(res.token));
    explicit_bzero(res.attest, sizeof(res.attest));
    /* Under `optional` slurmstepd ignores what init_post_opt returns, under
     * `required` it fails the launch without telling the user why: the
     * refusal is carried out in task_init instead. */
    step.refused = rc != 0;
    return 0;
}

/* slurm_spank_task_init - in the task, just before the user's program: when
 * the step was refused, print the reason on the task's stderr and exit 1
 * instead of running the program; print a warning once per step. (slurmstepd ignores init_post_opt's
 * result; failing user_init under `required` would hide the reason from the
 * user, and srun would even exit 0.) */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_REMOTE || !step.note[0])
        return 0;
    if (step.refused) {
        dprintf(STDERR_FILENO, "lockstep: %s\n", step.note);
        _exit(1);
    }
    /* A warning: once per step, from the first task of the first node. */
    int local = -1;
    if (step.node_id == 0 && spank_get_item(sp, S_TASK_ID, &local) == ESPANK_SUCCESS && local == 0)
        dprintf(STDERR_FILENO, "lockstep: %s\n", step.note);
    return 0;
}

/* slurm_spank_task_exit - in slurmstepd: report the task's exit to lockstepd.
 * The first node registered the step and knows its run id; the others look
 * it up once by job and step id. */
int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_REMOTE || !step.active || !step.conf.server[0])
        return 0;
    if (step.attest_again) {
        /* lockstepd was slow or away when the step started: its rank placement, once more (hardware
         * evidence counts only attested ranks). */
        step.attest_again = 0;
        lsp_glue_ops ops = {sp, sp_getenv, sp_setenv, sp_unsetenv, sp_option, sp_user_msg, sp_log};
        lsp_step_attest(&ops, &step.conf, &step.facts, step.conf.timeout_ms, &step.res);
        explicit_bzero(step.res.attest, sizeof(step.res.attest));
    }
    uint32_t rank = 0;
    int status = 0;
    char why[512];
    if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS)
        return 0;
    if (!step.run_id[0] && !step.looked_up) {
        /* The first node may not have registered yet when a short task ends here: ask again for up to
         * timeout_ms while lockstepd answers "no such run". */
        step.looked_up = 1;
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            int rc = lsp_reg_lookup(step.conf.server, step.token, step.job_id, step.step_id, step.conf.timeout_ms,
                                    step.run_id, sizeof(step.run_id), why, sizeof(why));
            clock_gettime(CLOCK_MONOTONIC, &now);
            long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
            if (rc <= 0 || ms + 100 > step.conf.timeout_ms)
                break;
            usleep(100 * 1000);
        }
        if (!step.run_id[0])
            slurm_info("lockstep: exits of step %s.%s not reported (the agent reports them): %s", step.job_id,
                       step.step_id, why);
    }
    if (!step.run_id[0])
        return 0;
    if (lsp_reg_end(step.conf.server, step.token, step.run_id, (long)rank, lsp_exit_code(status), step.conf.timeout_ms,
                    why, sizeof(why)))
        slurm_info("lockstep: could not report the exit of rank %u (the agent reports it too): %s", rank, why);
    return 0;
}

/* slurm_spank_exit - wipe the job's token from this process's memory. */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    explicit_bzero(step.token, sizeof(step.token));
    explicit_bzero(step.res.attest, sizeof(step.res.attest));
    return 0;
}
