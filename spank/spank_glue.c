/* spank_glue.c - what the plugin does to a job step: mode, det runtime, agent, LOCKSTEP_* env, token, registration. */
#include "spank/spank_glue.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crypto/token.h"
#include "common/fsutil.h"
#include "common/hostlist.h"
#include "common/site.h"
#include "common/tracespec.h"
#include "common/wire.h"
#include "spank/spank_det.h"
#include "spank/spank_env.h"
#include "spank/spank_reg.h"
#include "spank/spank_request.h"

#define ENV_MAX 8192

/* Environment reads for lsp_det_plan_make: a few rotating buffers, since it
 * holds two values at once. */
typedef struct env_reader {
    const lsp_glue_ops *ops;
    char buf[4][512];
    int next;
    int failed;
} env_reader;

static const char *reader_get(void *ctx, const char *name)
{
    env_reader *rd = ctx;
    char *b = rd->buf[rd->next++ % 4];
    int g = rd->ops->get(rd->ops->ctx, name, b, sizeof(rd->buf[0]));
    if (g < 0) { /* too long to be one of ours: judge it as it is, a conflict */
        rd->failed = 1;
        snprintf(b, sizeof(rd->buf[0]), "(unreadable)");
        return b;
    }
    return g == 1 ? b : NULL;
}

/* say - format a message and hand it to `fn`. */
static void say(const lsp_glue_ops *ops, void (*fn)(void *, const char *), const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const lsp_glue_ops *ops, void (*fn)(void *, const char *), const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fn(ops->ctx, msg);
}

/* setv - set one variable, counting failures in *bad. */
static void setv(const lsp_glue_ops *ops, const char *name, const char *value, int *bad)
{
    if (ops->set(ops->ctx, name, value))
        (*bad)++;
}

/* apply_det - check the user's environment against the det runtime. Under
 * det set what is missing (or fail on a conflict); under fp record conflicts.
 * Returns 0, or -1 when a det step must fail. */
static int apply_det(const lsp_glue_ops *ops, lsp_mode mode, const lsp_job_facts *f, int *bad)
{
    env_reader *rd = calloc(1, sizeof(*rd));
    lsp_det_plan *plan = calloc(1, sizeof(*plan));
    char *text = malloc(ENV_MAX);
    int rv = -1;
    if (!rd || !plan || !text) {
        say(ops, ops->log, "out of memory checking the deterministic runtime");
        (*bad)++;
        rv = mode == LSP_MODE_DET ? -1 : 0;
        goto out_free;
    }
    rd->ops = ops;
    lsp_det_plan_make(reader_get, rd, f->cpus_per_task, plan);
    if (plan->n_conflict && mode == LSP_MODE_DET) {
        lsp_det_message(plan, text, ENV_MAX);
        char *line = text;
        while (line && *line) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            say(ops, ops->user_msg, "%s", line);
            line = nl ? nl + 1 : NULL;
        }
        say(ops, ops->user_msg, "step %u.%u refused: --lockstep=det cannot make it reproducible", f->job_id,
            f->step_id);
        goto out_free;
    }
    if (plan->n_conflict) {
        lsp_det_conflicts(plan, text, ENV_MAX);
        setv(ops, "LOCKSTEP_CONFLICTS", text, bad);
        say(ops, ops->log, "step %u.%u runs under fp with settings that break determinism: %s", f->job_id, f->step_id,
            text);
    } else {
        ops->unset(ops->ctx, "LOCKSTEP_CONFLICTS");
    }
    if (mode == LSP_MODE_DET)
        for (int i = 0; i < plan->n_set; i++)
            setv(ops, plan->set[i].name, plan->set[i].value, bad);
    rv = 0;
out_free:
    free(text);
    free(plan);
    free(rd);
    return rv;
}

/* trouble - lockstep's own problem: fail the step under enforce, else warn and go on. */
static int trouble(const lsp_glue_ops *ops, const lsp_conf *c, const char *what)
{
    if (c->enforce > LSP_MODE_OFF) {
        say(ops, ops->user_msg, "%s; the site enforces --lockstep=%s, so this step cannot run", what,
            lsp_mode_name(c->enforce));
        return -1;
    }
    say(ops, ops->user_msg, "%s; the step runs without fingerprinting", what);
    return 0;
}

/* mint_token - the job's token and its attestation token from the site secret, into res->token and
 * res->attest (the latter stays in slurmstepd), and the user's digest key into `env_key` ("" when the user is
 * unknown). */
static int mint_token(const lsp_conf *c, const lsp_job_facts *f, lsp_step_result *res, char env_key[TOKEN_HEX_LEN + 1],
                      char *why, size_t cap)
{
    char job[16];
    size_t len = 0;
    snprintf(job, sizeof(job), "%u", f->job_id);
    unsigned char *key = token_load_secret(c->secret, &len);
    if (!key) {
        snprintf(why, cap, "cannot read the site secret %s: %s", c->secret,
                 errno == EINVAL ? "it is empty" : strerror(errno));
        return -1;
    }
    int rc = token_compute(key, len, job, res->token) || token_compute_attest(key, len, job, res->attest) ||
             (f->user[0] && token_compute_env_key(key, len, f->user, env_key));
    explicit_bzero(key, len);
    free(key);
    if (rc) {
        snprintf(why, cap, "OpenSSL could not compute the job token");
        return -1;
    }
    return 0;
}

void lsp_step_key(const lsp_job_facts *f, char *out, size_t cap)
{
    if (f->restarts > 0)
        snprintf(out, cap, "%u.r%u", f->step_id, f->restarts);
    else
        snprintf(out, cap, "%u", f->step_id);
}

/* set_secret_vars - the site's secret_vars= patterns ahead of the job's own LOCKSTEP_SECRET_VARS: a job may add
 * names the manifest keeps out, never take the site's away. */
static void set_secret_vars(const lsp_glue_ops *ops, const lsp_conf *c, int *bad)
{
    char user[sizeof(c->secret_vars)], both[2 * sizeof(c->secret_vars) + 2];
    if (!c->secret_vars[0])
        return;
    if (ops->get(ops->ctx, "LOCKSTEP_SECRET_VARS", user, sizeof(user)) == 1 && user[0])
        snprintf(both, sizeof(both), "%s,%s", c->secret_vars, user);
    else
        snprintf(both, sizeof(both), "%s", c->secret_vars);
    setv(ops, "LOCKSTEP_SECRET_VARS", both, bad);
}

/* set_identity - LOCKSTEP_* variables that tell the agent who it runs for. */
static void set_identity(const lsp_glue_ops *ops, const lsp_conf *c, const lsp_request *r, const lsp_job_facts *f,
                         lsp_mode mode, char *nodes, char *part, int *bad)
{
    char num[32];
    setv(ops, "LOCKSTEP_MODE", lsp_mode_name(mode), bad);
    snprintf(num, sizeof(num), "%u", f->job_id);
    setv(ops, "LOCKSTEP_JOB_ID", num, bad);
    lsp_step_key(f, num, sizeof(num));
    setv(ops, "LOCKSTEP_STEP_ID", num, bad);
    snprintf(num, sizeof(num), "%u", f->ntasks);
    setv(ops, "LOCKSTEP_RANKS", num, bad);
    if (r->twin[0])
        setv(ops, "LOCKSTEP_TWIN_GROUP", r->twin, bad);
    if (r->trace[0])
        setv(ops, "LOCKSTEP_TRACE", r->trace, bad);
    /* The user's ignore patterns, else the site's default (ignore=); "" from the user drops the default. */
    const char *ignore = r->ignore_set ? r->ignore : c->ignore;
    if (ignore[0])
        setv(ops, "LOCKSTEP_IGNORE", ignore, bad);
    else
        ops->unset(ops->ctx, "LOCKSTEP_IGNORE");
    if (r->resume[0])
        setv(ops, "LOCKSTEP_RESUME", r->resume, bad); /* the agent registers with it when the plugin could not */
    if (c->server[0])
        setv(ops, "LOCKSTEP_SERVER", c->server, bad);
    if (c->spool[0])
        setv(ops, "LOCKSTEP_SPOOL_DIR", c->spool, bad);
    set_secret_vars(ops, c, bad);
    if (ops->get(ops->ctx, "LOCKSTEP_STREAM", num, sizeof(num)) != 1) { /* unless the job made its own choice: */
        if (mode == LSP_MODE_CONSENSUS)
            setv(ops, "LOCKSTEP_STREAM", "digests", bad); /* consensus sends digests, records on demand */
        else if (c->stream[0])
            setv(ops, "LOCKSTEP_STREAM", c->stream, bad); /* the site's */
    }
    char relay[PATH_MAX + 96];
    if (c->relay[0] && ops->get(ops->ctx, "LOCKSTEP_RELAY", relay, sizeof(relay)) != 1) { /* unless the job's own */
        lsp_step_key(f, num, sizeof(num));
        snprintf(relay, sizeof(relay), "%s/lockstep-relay.%u.%s", c->relay, f->job_id, num); /* this node's */
        setv(ops, "LOCKSTEP_RELAY", relay, bad);
    }
    if (mode == LSP_MODE_CONSENSUS && c->consensus_every > 0 &&
        ops->get(ops->ctx, "LOCKSTEP_CONSENSUS_EVERY", num, sizeof(num)) != 1) { /* the site's rate, unless the job's */
        char every[16];
        snprintf(every, sizeof(every), "%d", c->consensus_every);
        setv(ops, "LOCKSTEP_CONSENSUS_EVERY", every, bad);
    }
    if (mode == LSP_MODE_DET && ops->get(ops->ctx, "NCCL_GRAPH_DUMP_FILE", nodes, 1024) == 0) {
        /* NCCL writes the topology graph it chose here; the agent puts it in the manifest. */
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s/nccl-graph.%u.%u.xml", c->spool[0] ? c->spool : "/tmp", f->job_id, f->step_id);
        setv(ops, "NCCL_GRAPH_DUMP_FILE", path, bad);
    }
    if (f->user[0])
        setv(ops, "LOCKSTEP_USER", f->user, bad);
    if (ops->get(ops->ctx, "SLURM_STEP_NODELIST", nodes, 1024) == 1 ||
        ops->get(ops->ctx, "SLURM_JOB_NODELIST", nodes, 1024) == 1)
        setv(ops, "LOCKSTEP_NODES", nodes, bad);
    else
        nodes[0] = 0;
    if (ops->get(ops->ctx, "SLURM_JOB_PARTITION", part, 256) == 1)
        setv(ops, "LOCKSTEP_PARTITION", part, bad);
    else
        part[0] = 0;
}

/* add_agent - append the agent to the job's LD_PRELOAD. Returns 0, or -1 with `why`. */
static int add_agent(const lsp_glue_ops *ops, const lsp_conf *c, char *why, size_t cap)
{
    char *cur = malloc(ENV_MAX), *joined = malloc(ENV_MAX);
    int rv = -1;
    if (!cur || !joined) {
        snprintf(why, cap, "out of memory");
        goto out_free;
    }
    for (const char *p = c->agent; *p;) { /* every library of a ':'-separated list must be readable */
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(cur, ENV_MAX, "%.*s", (int)n, p);
        if (n && access(cur, R_OK)) {
            snprintf(why, cap, "the agent %s cannot be read (%s); check agent= in plugstack.conf", cur,
                     strerror(errno));
            goto out_free;
        }
        p += n + (e ? 1 : 0);
    }
    int g = ops->get(ops->ctx, "LD_PRELOAD", cur, ENV_MAX);
    if (g < 0) {
        snprintf(why, cap, "the job's LD_PRELOAD is too long to extend");
        goto out_free;
    }
    if (lsp_preload_join(g == 1 ? cur : NULL, c->agent, joined, ENV_MAX) || ops->set(ops->ctx, "LD_PRELOAD", joined)) {
        snprintf(why, cap, "cannot set LD_PRELOAD for the agent");
        goto out_free;
    }
    rv = 0;
out_free:
    free(joined);
    free(cur);
    return rv;
}

/* make_spool - create the agents' spool directory (world-writable, sticky, as /tmp) when it is missing.
 * Failure is logged; the agent then says so itself. */
static void make_spool(const lsp_glue_ops *ops, const lsp_conf *c)
{
    struct stat st;
    if (stat(c->spool, &st) == 0 || errno != ENOENT)
        return;
    if (fs_mkdir_p(c->spool) || chmod(c->spool, 01777))
        say(ops, ops->log, "cannot create the spool directory %s: %s", c->spool, strerror(errno));
}

/* do_register - register the step with lockstepd (first node only); on success
 * the tasks get LOCKSTEP_RUN_ID. Failure is logged, never fatal: the agent
 * registers the run itself from its spool once the server answers. */
static void do_register(const lsp_glue_ops *ops, const lsp_conf *c, const lsp_request *r, const lsp_job_facts *f,
                        lsp_mode mode, const char *nodes, const char *part, lsp_step_result *res)
{
    char job[16], stepid[32], why[600];
    int bad = 0;
    snprintf(job, sizeof(job), "%u", f->job_id);
    lsp_step_key(f, stepid, sizeof(stepid));
    /* A run resumed from a checkpoint says where it starts (LOCKSTEP_START_STEP in the job's
     * environment), so that lockstepd compares it with its twins on the overlap only. */
    char start[32];
    long start_step = 0;
    if (ops->get(ops->ctx, "LOCKSTEP_START_STEP", start, sizeof(start)) == 1)
        start_step = strtol(start, NULL, 10);
    /* The client id names the step (and its requeue attempt): a registration repeated for the same
     * step gets the run the first one created, never a second. */
    char client[96];
    snprintf(client, sizeof(client), "slurm:%s.%s", job, stepid);
    wire_run info = {.job_id = job,
                     .step_id = stepid,
                     .twin_group = r->twin,
                     .ranks = (long)f->ntasks,
                     .start_step = start_step,
                     .user = f->user,
                     .partition = part,
                     .nodes = nodes,
                     .command = f->command,
                     .mode = lsp_mode_name(mode),
                     .client_id = client,
                     .resume = r->resume,
                     .argv = f->argv,
                     .argc = f->argc};
    /* Sent with the attestation token: the user, nodes, command and argv are slurmstepd's word. */
    if (lsp_reg_register(c->server, res->attest[0] ? res->attest : res->token, &info, c->timeout_ms, res->run_id,
                         sizeof(res->run_id), why, sizeof(why))) {
        res->run_id[0] = 0;
        ops->unset(ops->ctx, "LOCKSTEP_RUN_ID"); /* never a run id the user brought along */
        say(ops, ops->log, "step %s.%s not registered now (the agent will): %s", job, stepid, why);
        return;
    }
    setv(ops, "LOCKSTEP_RUN_ID", res->run_id, &bad);
    say(ops, ops->log, "step %s.%s registered as run %s", job, stepid, res->run_id);
}

static void do_attest(const lsp_glue_ops *ops, const lsp_conf *c, const lsp_job_facts *f, const char *nodes,
                      int budget_ms, lsp_step_result *res);

void lsp_step_attest(const lsp_glue_ops *ops, const lsp_conf *c, const lsp_job_facts *f, int budget_ms,
                     lsp_step_result *res)
{
    if (c->server[0] && res->attest[0] && !res->attested)
        do_attest(ops, c, f, res->nodes, budget_ms, res);
}

/* do_attest - tell lockstepd, with the attestation token, which global ranks run on this node: its name
 * (the step's node list at slurmstepd's index of this node), the user, the GPUs Slurm gave the step here.
 * Failure is logged, never fatal: the step's runs then carry no hardware evidence. */
static void do_attest(const lsp_glue_ops *ops, const lsp_conf *c, const lsp_job_facts *f, const char *nodes,
                      int budget_ms, lsp_step_result *res)
{
    char job[16], stepid[32], node[256], gpus[256] = "", why[600];
    snprintf(job, sizeof(job), "%u", f->job_id);
    lsp_step_key(f, stepid, sizeof(stepid));
    if (!f->nlocal) {
        say(ops, ops->log, "step %s.%s not attested: slurmstepd did not say which ranks run here", job, stepid);
        return;
    }
    if (budget_ms < 50) {
        say(ops, ops->log, "step %s.%s not attested: lockstepd took all of timeout_ms to register it", job, stepid);
        return;
    }
    if (!nodes[0] || hostlist_nth(nodes, f->node_id, node, sizeof(node)) < 0) {
        say(ops, ops->log, "step %s.%s not attested: node %u of \"%s\" has no name", job, stepid, f->node_id, nodes);
        return;
    }
    if (ops->get(ops->ctx, "SLURM_STEP_GPUS", gpus, sizeof(gpus)) != 1 &&
        ops->get(ops->ctx, "SLURM_JOB_GPUS", gpus, sizeof(gpus)) != 1)
        gpus[0] = 0;
    wire_attest a = {.job_id = job,
                     .step_id = stepid,
                     .node = node,
                     .node_index = (long)f->node_id,
                     .user = f->user,
                     .nodes = nodes,
                     .gpus = gpus,
                     .ranks = f->local_ranks,
                     .nranks = f->nlocal};
    if (lsp_reg_attest(c->server, res->attest, &a, budget_ms, why, sizeof(why))) {
        say(ops, ops->log, "step %s.%s not attested on %s: %s", job, stepid, node, why);
        return;
    }
    res->attested = 1;
    say(ops, ops->log, "step %s.%s attested on %s (%u ranks)", job, stepid, node, f->nlocal);
}

void lsp_step_scrub(const lsp_glue_ops *ops)
{
    static const char *const never[] = {"LOCKSTEP_ADMIN_TOKEN", NULL};
    for (const char *const *v = never; *v; v++)
        if (ops->unset(ops->ctx, *v))
            say(ops, ops->log, "cannot remove %s from the step's environment", *v);
}

int lsp_step_prepare(const lsp_glue_ops *ops, const lsp_conf *c, const lsp_job_facts *f, lsp_step_result *res)
{
    lsp_request r;
    char why[1024], env_key[TOKEN_HEX_LEN + 1] = "";
    char *nodes = NULL, *part = NULL;
    int bad = 0, rv = -1;
    memset(res, 0, sizeof(*res));

    lsp_step_scrub(ops); /* whatever the mode: no task of any step holds the operator's token */

    if (lsp_request_read(ops, &r, why, sizeof(why))) {
        say(ops, ops->user_msg, "%s", why);
        return -1;
    }
    lsp_mode mode = lsp_effective_mode(c, &r);
    if (mode == LSP_MODE_OFF || f->is_special)
        return 0;
    if (r.mode_set && r.mode < mode)
        say(ops, ops->log, "step %u.%u asked for --lockstep=%s; the site enforces %s", f->job_id, f->step_id,
            lsp_mode_name(r.mode), lsp_mode_name(mode));

    /* consensus checks copies within the run: neither the deterministic runtime nor its conflicts (which explain
     * twins) concern it, and it costs the job nothing */
    if (mode != LSP_MODE_CONSENSUS && apply_det(ops, mode, f, &bad))
        return -1;
    if (f->is_batch) { /* the batch shell gets the runtime; its srun steps get the agent */
        setv(ops, "LOCKSTEP_MODE", lsp_mode_name(mode), &bad);
        rv = 0;
        goto out_check;
    }

    nodes = malloc(1024);
    part = malloc(256);
    if (!nodes || !part) {
        rv = trouble(ops, c, "out of memory");
        goto out_free;
    }
    if (c->secret[0] && mint_token(c, f, res, env_key, why, sizeof(why))) {
        rv = trouble(ops, c, why);
        goto out_free;
    }
    if (c->spool[0])
        make_spool(ops, c);
    if (add_agent(ops, c, why, sizeof(why))) {
        rv = trouble(ops, c, why);
        goto out_free;
    }
    set_identity(ops, c, &r, f, mode, nodes, part, &bad);
    if (res->token[0])
        setv(ops, "LOCKSTEP_TOKEN", res->token, &bad);
    if (env_key[0]) /* the manifest digests secret-named variables with it (common/envrule.h) */
        setv(ops, "LOCKSTEP_DIGEST_KEY", env_key, &bad);
    res->active = 1;
    /* Registration and attestation share timeout_ms: a slow or hung lockstepd delays the step by that at most. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (c->server[0] && f->node_id == 0)
        do_register(ops, c, &r, f, mode, nodes, part, res);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    snprintf(res->nodes, sizeof(res->nodes), "%s", nodes);
    if (c->server[0] && res->attest[0])
        do_attest(ops, c, f, nodes, (int)(c->timeout_ms - spent), res);
    rv = 0;
out_check:
    if (bad && rv == 0)
        rv = trouble(ops, c, "some LOCKSTEP_* variables could not be set in the job's environment");
out_free:
    explicit_bzero(env_key, sizeof(env_key));
    free(part);
    free(nodes);
    return rv;
}
