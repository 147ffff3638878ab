/* narrow_job.c - one placement of a narrow as a Slurm job: script of quoted words, owner, environment, sbatch
 * (cli/narrow_job.h). */
#include "cli/narrow_job.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/proc.h"
#include "common/text.h"
#include "common/words.h"

extern char **environ;

static const char *jstr(json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : dflt;
}

/* append_word - `w` quoted, then a space, at the end of the growing string *s (length *len). */
static void append_word(char **s, size_t *len, const char *w)
{
    size_t q = words_quote(w, NULL, 0);
    char *ns = realloc(*s, *len + q + 2);
    if (!ns)
        abort(); /* the CLI's policy: out of memory ends it */
    *s = ns;
    words_quote(w, *s + *len, q + 1);
    *len += q;
    (*s)[(*len)++] = ' ';
    (*s)[*len] = 0;
}

char *narrow_job_script(long long id, int idx, char *const *launcher, int nl, json_t *argv, char *why, size_t cap)
{
    if (!json_is_array(argv) || !json_array_size(argv)) {
        snprintf(why, cap, "the placement names no words to run");
        return NULL;
    }
    char *s = NULL;
    size_t len = 0;
    char head[200];
    /* The comment holds numbers only; sbatch reads no #SBATCH line after the first command, and there is none
     * before it. */
    snprintf(head, sizeof(head),
             "#!/bin/sh\n# lockstep narrow %lld, placement %d: every word below is quoted; none is read as shell\n", id,
             idx);
    s = strdup(head);
    if (!s)
        abort();
    len = strlen(s);
    for (int i = 0; i < nl; i++)
        append_word(&s, &len, launcher[i]);
    size_t i;
    json_t *w;
    json_array_foreach(argv, i, w)
    {
        if (!json_is_string(w) || strlen(json_string_value(w)) != json_string_length(w)) {
            snprintf(why, cap, "word %zu of the placement is not a string of text", i);
            free(s);
            return NULL;
        }
        append_word(&s, &len, json_string_value(w));
    }
    s[len - 1] = '\n'; /* the last word's space */
    return s;
}

/* The user a replay runs as. */
typedef struct replay_user {
    char name[256], home[1024];
    uid_t uid;
    gid_t gid;
    int other; /* another user than this process's: sbatch --uid/--gid, its own output directory, a chosen environment
                */
} replay_user;

/* user_of - who placement `p` runs as: its attested user, as this host knows it. Returns 0, or -1 with why it cannot
 * be submitted from this process (no attested user, an unknown user, or another user while not root). */
static int user_of(json_t *p, replay_user *u, char *why, size_t cap)
{
    const char *name = jstr(p, "user", NULL);
    if (!name || !*name) {
        snprintf(why, cap, "the user of the run it replays is not attested: lockstep replays a job only as its owner");
        return -1;
    }
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || !res) {
        snprintf(why, cap, "user %.200s, the owner of the run it replays, is not known on this host", name);
        return -1;
    }
    uid_t me = geteuid();
    if (pw.pw_uid != me && me != 0) {
        snprintf(why, cap,
                 "the replay runs as %.200s, the owner of the run it replays, and lockstep narrow runs as uid %u: run "
                 "it as %.200s%s",
                 name, (unsigned)me, name, pw.pw_uid ? ", or as root" : "");
        return -1;
    }
    snprintf(u->name, sizeof(u->name), "%s", pw.pw_name);
    snprintf(u->home, sizeof(u->home), "%s", pw.pw_dir);
    u->uid = pw.pw_uid;
    u->gid = pw.pw_gid;
    u->other = pw.pw_uid != me;
    return 0;
}

/* user_outdir - where the replay's output goes: `outdir` for this process's user; for another user DIR/uid-N, made
 * for that user (0700, theirs) or checked to be a directory of theirs. Returns 0, or -1 with why. */
static int user_outdir(const char *outdir, const replay_user *u, char *out, size_t cap, char *why, size_t wcap)
{
    if (!u->other) {
        snprintf(out, cap, "%s", outdir);
        return 0;
    }
    snprintf(out, cap, "%s/uid-%u", outdir, (unsigned)u->uid);
    if (mkdir(out, 0700) == 0 && chown(out, u->uid, u->gid) < 0) {
        snprintf(why, wcap, "cannot give %s to %s: %s", out, u->name, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(out, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != u->uid) {
        snprintf(why, wcap, "%s is not a directory of %s's for the replay's output", out, u->name);
        return -1;
    }
    return 0;
}

/* env_bufs - the variables child_env adds, owned here. */
typedef struct env_bufs {
    char start[64], user[300], logname[300], home[1100];
} env_bufs;

static int has_prefix(const char *s, const char *const *list)
{
    for (const char *const *p = list; *p; p++)
        if (!strncmp(s, *p, strlen(*p)))
            return 1;
    return 0;
}

/* carried_env - what the placement carries from the run it replays into the job's environment ("settings":
 * its determinism environment, its step rule and MPI input setting), as "NAME=value" strings in a new array the
 * caller frees with free_carried; NULL-terminated. A name that is not letters, digits and '_', or a value holding a
 * NUL, is left out. */
static char **carried_env(json_t *settings)
{
    json_t *env = json_object_get(settings, "env");
    static const char *const rules[][2] = {{"step_on", "LOCKSTEP_STEP_ON"}, {"mpi_inputs", "LOCKSTEP_MPI_INPUTS"}};
    size_t n = json_object_size(env) + 2, k = 0;
    char **out = calloc(n + 1, sizeof(char *));
    if (!out)
        abort();
    const char *name;
    json_t *v;
    json_object_foreach(env, name, v)
    {
        const char *val = json_string_value(v);
        if (!val || strlen(val) != json_string_length(v) || !*name || (*name >= '0' && *name <= '9') ||
            strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != strlen(name))
            continue;
        if (asprintf(&out[k], "%s=%s", name, val) < 0)
            abort();
        k++;
    }
    for (size_t i = 0; i < 2; i++) {
        json_t *r = json_object_get(settings, rules[i][0]);
        const char *val = json_string_value(r);
        if (val && strlen(val) == json_string_length(r)) {
            if (asprintf(&out[k], "%s=%s", rules[i][1], val) < 0)
                abort();
            k++;
        }
    }
    return out;
}

static void free_carried(char **c)
{
    for (char **p = c; p && *p; p++)
        free(*p);
    free(c);
}

/* carried_name - whether "NAME=..." `kv` names a variable of `carried` ("NAME=..." strings). */
static int carried_name(char *const *carried, const char *kv)
{
    size_t n = strcspn(kv, "=");
    for (char *const *c = carried; c && *c; c++)
        if (!strncmp(*c, kv, n) && (*c)[n] == '=')
            return 1;
    return 0;
}

/* child_env - the replay job's environment: this process's, without what would leak a credential or contradict the
 * replay's own settings (the admin token, another job's token and run, a twin group, trace or recording rule); for
 * another user's replay only what runs a program (paths, libraries, locale, Slurm's configuration, MPI and sanitizer
 * settings) and that user's USER, LOGNAME and HOME, never the rest of the operator's environment; plus what the run
 * it replays had (`carried`, in place of this process's values) and LOCKSTEP_START_STEP when the replay resumes. A
 * new array of borrowed strings (the caller frees it). */
static char **child_env(const replay_user *u, const char *start_step, char *const *carried, env_bufs *b)
{
    static const char *const drop[] = {"LOCKSTEP_ADMIN_TOKEN=",
                                       "LOCKSTEP_ADMIN_TOKEN_FILE=",
                                       "LOCKSTEP_TOKEN=",
                                       "LOCKSTEP_RUN_ID=",
                                       "LOCKSTEP_TWIN_GROUP=",
                                       "LOCKSTEP_TRACE=",
                                       "LOCKSTEP_START_STEP=",
                                       "SLURM_LOCKSTEP",
                                       "LOCKSTEP_MODE=",
                                       "LOCKSTEP_IGNORE=",
                                       "LOCKSTEP_STEP_ON=",
                                       "LOCKSTEP_MPI_INPUTS=",
                                       NULL};
    static const char *const keep[] = {
        "PATH=",     "LD_LIBRARY_PATH=", "LD_PRELOAD=", "LANG=",         "LANGUAGE=",      "LC_", "TZ=", "SLURM_CONF=",
        "OMPI_MCA_", "PMIX_MCA_",        "UCX_",        "ASAN_OPTIONS=", "UBSAN_OPTIONS=", NULL};
    static const char *const own[] = {"USER=", "LOGNAME=", "HOME=", NULL};
    size_t n = 0, nc = 0;
    while (environ[n])
        n++;
    while (carried && carried[nc])
        nc++;
    char **env = calloc(n + nc + 5, sizeof(char *));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!has_prefix(environ[i], drop) && !carried_name(carried, environ[i]) &&
            (!u->other || (has_prefix(environ[i], keep) && !has_prefix(environ[i], own))))
            env[k++] = environ[i];
    for (size_t i = 0; i < nc; i++)
        env[k++] = carried[i];
    if (u->other) {
        snprintf(b->user, sizeof(b->user), "USER=%s", u->name);
        snprintf(b->logname, sizeof(b->logname), "LOGNAME=%s", u->name);
        snprintf(b->home, sizeof(b->home), "HOME=%s", u->home);
        env[k++] = b->user;
        env[k++] = b->logname;
        env[k++] = b->home;
    }
    if (start_step) {
        snprintf(b->start, sizeof(b->start), "LOCKSTEP_START_STEP=%s", start_step);
        env[k++] = b->start;
    }
    env[k] = NULL;
    return env;
}

int narrow_job_submit(json_t *n, json_t *p, char *const *launcher, int nl, const char *outdir, narrow_job *job,
                      char *why, size_t cap)
{
    char name[64], nodes_a[700], ntasks[32], nnodes[32], mode[40], twin[400], trace[1400], output[1300], uid[32],
        gid[32], start[32], ignore[2200], chdir_a[4200];
    long long id = (long long)json_integer_value(json_object_get(n, "id"));
    int idx = (int)json_integer_value(json_object_get(p, "index"));
    replay_user u;
    if (user_of(p, &u, why, cap) < 0 || user_outdir(outdir, &u, job->outdir, sizeof(job->outdir), why, cap) < 0)
        return -1;
    char *script = narrow_job_script(id, idx, launcher, nl, json_object_get(p, "argv"), why, cap);
    if (!script)
        return -1;
    snprintf(name, sizeof(name), "--job-name=lockstep-narrow-%lld.%d", id, idx);
    snprintf(nodes_a, sizeof(nodes_a), "--nodelist=%s", jstr(p, "nodes", ""));
    snprintf(nnodes, sizeof(nnodes), "--nodes=%lld", (long long)json_integer_value(json_object_get(p, "nnodes")));
    snprintf(ntasks, sizeof(ntasks), "--ntasks=%lld", (long long)json_integer_value(json_object_get(p, "ranks")));
    snprintf(mode, sizeof(mode), "--lockstep=%s", *jstr(p, "mode", "") ? jstr(p, "mode", "fp") : "fp");
    snprintf(twin, sizeof(twin), "--lockstep-twin=%s", jstr(n, "narrow_group", ""));
    /* It records as the run it replays did: that run's trace with the window on top, its ignore rule, from its
     * working directory (the placement's settings, from the run's manifest). */
    json_t *settings = json_object_get(p, "settings");
    snprintf(trace, sizeof(trace), "--lockstep-trace=%s",
             jstr(settings, "trace", jstr(json_object_get(n, "window"), "trace", "collectives")));
    snprintf(ignore, sizeof(ignore), "--lockstep-ignore=%s", jstr(settings, "ignore", ""));
    snprintf(chdir_a, sizeof(chdir_a), "--chdir=%s", jstr(settings, "cwd", ""));
    snprintf(output, sizeof(output), "--output=%s/%%j.out", job->outdir);
    snprintf(uid, sizeof(uid), "--uid=%u", (unsigned)u.uid);
    snprintf(gid, sizeof(gid), "--gid=%u", (unsigned)u.gid);
    /* No script file: sbatch reads the script from its standard input. */
    char *av[16] = {"sbatch", "--parsable", name, nnodes, ntasks, nodes_a, mode, twin, trace, output};
    int na = 10;
    if (ignore[18])
        av[na++] = ignore;
    if (chdir_a[8] == '/')
        av[na++] = chdir_a;
    if (u.other) {
        av[na++] = uid;
        av[na++] = gid;
    }
    av[na] = NULL;
    json_t *ss = json_object_get(p, "start_step");
    if (json_is_integer(ss))
        snprintf(start, sizeof(start), "%" JSON_INTEGER_FORMAT, json_integer_value(ss));
    env_bufs eb;
    char **carried = carried_env(settings);
    char **env = child_env(&u, json_is_integer(ss) ? start : NULL, carried, &eb);
    static char out[8192];
    int st = env ? proc_run_input(av, env, script, strlen(script), out, sizeof(out)) : -1;
    free(env);
    free_carried(carried);
    free(script);
    long j = st == 0 ? strtol(out, NULL, 10) : 0;
    if (j <= 0) {
        size_t l = strlen(out);
        while (l && (out[l - 1] == '\n' || out[l - 1] == ' '))
            out[--l] = 0;
        for (char *nl_at = strchr(out, '\n'); nl_at; nl_at = strchr(nl_at, '\n'))
            *nl_at = ' ';
        snprintf(why, cap, "sbatch %s%s%s exited %d: %s", nodes_a, u.other ? " --uid=" : "", u.other ? u.name : "", st,
                 st < 0   ? strerror(errno)
                 : out[0] ? out
                          : "(it said nothing)");
        return -1;
    }
    snprintf(job->id, sizeof(job->id), "%ld", j);
    return 0;
}

void narrow_job_tail(const narrow_job *job, char *out, size_t cap)
{
    char path[1300], line[512];
    out[0] = 0;
    snprintf(path, sizeof(path), "%s/%s.out", job->outdir, job->id);
    /* the file may be another user's: never through a link, never a FIFO that would block */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    FILE *f = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0])
            text_sanitize(line, out, cap); /* the job's text: no control character reaches a terminal */
    }
    fclose(f);
}
