/* config.c - streaming settings from LOCKSTEP_* variables: the server, identity of the run, batching and bounds. */
#include "agent/config.h"

#include "agent/agent.h"
#include "agent/mode.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/servers.h"
#include "common/wire.h"

#define DEF_MAX_MEM ((size_t)64 << 20)
#define DEF_BATCH_BYTES ((size_t)256 << 10)
#define DEF_BATCH_MS 200
#define DEF_FLUSH_MS 10000
#define DEF_HTTP_MS 10000
#define DEF_RELAY_MS 20
#define DEF_HOLD_MEM ((size_t)64 << 20)
#define DEF_HOLD_DISK ((size_t)1 << 30)

int config_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-')
        return -1;
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10, end++;
    else if (*end == 'm' || *end == 'M')
        shift = 20, end++;
    else if (*end == 'g' || *end == 'G')
        shift = 30, end++;
    if (*end == 'i' || *end == 'B' || *end == 'b')
        end += (*end == 'i' && (end[1] == 'B' || end[1] == 'b')) ? 2 : 1;
    if (*end || v > (~0ULL >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

int config_seconds_ms(const char *s, long *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < 0 || v > 86400)
        return -1;
    *out = (long)(v * 1000 + 0.5);
    return 0;
}

/* scopy - copy `src` into `dst` (cap bytes), cut to fit. */
static void scopy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

static const char *env_or(const char *a, const char *b, const char *dflt)
{
    const char *v = getenv(a);
    if ((!v || !*v) && b)
        v = getenv(b);
    return v && *v ? v : dflt;
}

/* command_line - /proc/self/cmdline with spaces between arguments. */
static void command_line(char *out, size_t cap)
{
    out[0] = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        return;
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == 0)
            out[i] = ' ';
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = 0;
}

static int get_size(const char *var, size_t dflt, size_t *out, char *why, size_t cap)
{
    const char *v = getenv(var);
    *out = dflt;
    if (v && *v && config_size(v, out) < 0) {
        snprintf(why, cap, "%s='%s' is not a byte count (e.g. 64M)", var, v);
        return -1;
    }
    return 0;
}

static int get_ms(const char *var, long dflt, long *out, int seconds, char *why, size_t cap)
{
    const char *v = getenv(var);
    *out = dflt;
    if (!v || !*v)
        return 0;
    int bad;
    if (seconds) {
        bad = config_seconds_ms(v, out) < 0;
    } else {
        char *end;
        errno = 0;
        long ms = strtol(v, &end, 10);
        bad = errno || end == v || *end || ms < 0 || ms > 86400000L;
        if (!bad)
            *out = ms;
    }
    if (bad) {
        snprintf(why, cap, "%s='%s' is not a number of %s", var, v, seconds ? "seconds" : "milliseconds");
        return -1;
    }
    return 0;
}

int config_stream(send_cfg *cfg, long rank, const rec_header *hdr, char *why, size_t cap)
{
    const char *server = getenv("LOCKSTEP_SERVER");
    memset(cfg, 0, sizeof(*cfg));
    if (!server || !*server)
        return 0;
    server_list list;
    char bad[300];
    if (servers_parse(server, &list, bad, sizeof(bad)) < 0) {
        snprintf(why, cap, "LOCKSTEP_SERVER='%.300s': %s (one lockstepd URL, or several separated by commas)", server,
                 bad);
        return -1;
    }
    scopy(cfg->server, sizeof(cfg->server), server);
    scopy(cfg->token, sizeof(cfg->token), env_or("LOCKSTEP_TOKEN", NULL, ""));
    scopy(cfg->ca_file, sizeof(cfg->ca_file), env_or("LOCKSTEP_CA_FILE", NULL, ""));

    /* The run is found by job and step: every rank of one launch must agree.
     * Outside Slurm, mpirun's PMIx namespace is shared by the ranks of one launch. */
    char local_job[300];
    snprintf(local_job, sizeof(local_job), "local-%s", hdr->run_id);
    const char *job = env_or("LOCKSTEP_JOB_ID", "SLURM_JOB_ID", NULL);
    if (!job)
        job = env_or("PMIX_NAMESPACE", NULL, local_job);
    /* A requeued job keeps its job id and numbers its steps again: the attempt goes into the step key
     * ("S.rN", as the SPANK plugin's), so that no rank finds the previous attempt's run. */
    const char *step = env_or("LOCKSTEP_STEP_ID", NULL, NULL);
    char slurm_step[300];
    if (!step) {
        const char *restarts = env_or("SLURM_RESTART_COUNT", NULL, "0");
        step = env_or("SLURM_STEP_ID", NULL, "0");
        if (strtol(restarts, NULL, 10) > 0) {
            snprintf(slurm_step, sizeof(slurm_step), "%.200s.r%ld", step, strtol(restarts, NULL, 10));
            step = slurm_step;
        }
    }
    scopy(cfg->job_id, sizeof(cfg->job_id), job);
    scopy(cfg->step_id, sizeof(cfg->step_id), step);
    /* A run id given in advance (the SPANK plugin registered the step) is the server's. */
    const char *rid = getenv("LOCKSTEP_RUN_ID");
    scopy(cfg->run_id, sizeof(cfg->run_id), rid ? rid : "");

    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%.4000s/lockstep-spool", env_or("TMPDIR", NULL, "/tmp"));
    scopy(cfg->spool_root, sizeof(cfg->spool_root), env_or("LOCKSTEP_SPOOL_DIR", NULL, tmp));
    snprintf(cfg->spool_key, sizeof(cfg->spool_key), "%.200s.%.90s", job, step);
    for (char *p = cfg->spool_key; *p; p++)
        if (*p == '/' || (p == cfg->spool_key && *p == '.'))
            *p = '_';

    if (get_size("LOCKSTEP_MAX_MEM", DEF_MAX_MEM, &cfg->mem_cap, why, cap) < 0 ||
        get_size("LOCKSTEP_BATCH_BYTES", DEF_BATCH_BYTES, &cfg->batch_bytes, why, cap) < 0 ||
        get_ms("LOCKSTEP_BATCH_MS", DEF_BATCH_MS, &cfg->batch_ms, 0, why, cap) < 0 ||
        get_ms("LOCKSTEP_FLUSH_TIMEOUT", DEF_FLUSH_MS, &cfg->flush_ms, 1, why, cap) < 0 ||
        get_ms("LOCKSTEP_HTTP_TIMEOUT", DEF_HTTP_MS, &cfg->http_timeout_ms, 1, why, cap) < 0)
        return -1;
    /* the consensus mode sends digests (records on demand) unless told otherwise */
    const char *mode = env_or("LOCKSTEP_MODE", NULL, "");
    const char *stream = env_or("LOCKSTEP_STREAM", NULL, mode_is_consensus(mode) ? "digests" : "records");
    if (strcmp(stream, "records") != 0 && strcmp(stream, "digests") != 0) {
        snprintf(why, cap, "LOCKSTEP_STREAM='%s' is neither records nor digests", stream);
        return -1;
    }
    cfg->digests = strcmp(stream, "digests") == 0;
    scopy(cfg->stats_file, sizeof(cfg->stats_file), env_or("LOCKSTEP_STATS_FILE", NULL, ""));
    scopy(cfg->relay_dir, sizeof(cfg->relay_dir), env_or("LOCKSTEP_RELAY", NULL, ""));
    if (get_ms("LOCKSTEP_RELAY_MS", DEF_RELAY_MS, &cfg->relay_ms, 0, why, cap) < 0)
        return -1;
    if (get_size("LOCKSTEP_HOLD_MEM", DEF_HOLD_MEM, &cfg->hold_mem, why, cap) < 0 ||
        get_size("LOCKSTEP_HOLD_DISK", DEF_HOLD_DISK, &cfg->hold_disk, why, cap) < 0)
        return -1;
    if (cfg->batch_bytes < 4096)
        cfg->batch_bytes = 4096;
    if (cfg->mem_cap < 2 * cfg->batch_bytes)
        cfg->mem_cap = 2 * cfg->batch_bytes;
    if (cfg->batch_ms < 1)
        cfg->batch_ms = 1;
    if (cfg->http_timeout_ms < 100)
        cfg->http_timeout_ms = 100;
    const char *man = getenv("LOCKSTEP_MANIFEST");
    cfg->manifest = !(man && strcmp(man, "0") == 0);
    cfg->hdr = *hdr;
    cfg->hdr.rank = (uint32_t)rank;
    cfg->hdr.kind = REC_KIND_BATCH;
    scopy(cfg->hdr.job_id, sizeof(cfg->hdr.job_id), job);
    scopy(cfg->hdr.step_id, sizeof(cfg->hdr.step_id), step);

    /* The registration body. */
    char ranks_s[32], user[256], cmd[4096];
    snprintf(ranks_s, sizeof(ranks_s), "%ld", agent_env_ranks());
    long start_step = strtol(env_or("LOCKSTEP_START_STEP", NULL, "0"), NULL, 10);
    /* The plugin passes the user; a name-service lookup is the last resort. */
    const char *u = env_or("LOCKSTEP_USER", "SLURM_JOB_USER", NULL);
    if (!u)
        u = env_or("USER", "LOGNAME", NULL);
    if (u) {
        scopy(user, sizeof(user), u);
    } else {
        struct passwd pw, *pwp = NULL;
        char pwbuf[2048];
        if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 && pwp)
            scopy(user, sizeof(user), pw.pw_name);
        else
            snprintf(user, sizeof(user), "uid%ld", (long)getuid());
    }
    command_line(cmd, sizeof(cmd));
    const char *nodes = env_or("LOCKSTEP_NODES", "SLURM_STEP_NODELIST", NULL);
    wire_run reg = {
        .job_id = job,
        .step_id = step,
        .twin_group = env_or("LOCKSTEP_TWIN_GROUP", NULL, ""),
        .ranks = atol(ranks_s),
        .start_step = start_step,
        .user = user,
        .partition = env_or("LOCKSTEP_PARTITION", "SLURM_JOB_PARTITION", NULL),
        .nodes = nodes ? nodes : env_or("SLURM_JOB_NODELIST", NULL, hdr->host),
        .command = cmd,
        .mode = env_or("LOCKSTEP_MODE", NULL, "fp"),
        /* The same on every attempt and in the spool: lockstepd answers a repeat with the run it registered. */
        .client_id = hdr->run_id,
        .resume = env_or("LOCKSTEP_RESUME", NULL, NULL),
    };
    cfg->reg_json = wire_run_body(&reg);
    if (!cfg->reg_json) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    return 1;
}
