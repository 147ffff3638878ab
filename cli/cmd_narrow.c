/* cmd_narrow.c - `lockstep narrow GROUP`: differential replay of a diverged twin group on chosen nodes, and the
 * verdict: software, persistent or transient hardware, or inconclusive with the reason.
 *
 * lockstepd designs the experiment from the group and the node states this command reads from sinfo
 * (server/rules/replay.h), this command submits each placement with sbatch into the narrow's replay group,
 * reports the jobs, cancels each one once lockstepd has what it needs from it, and prints the verdict with the
 * placements tried, their outcomes and the reasoning (docs/cli.md, "narrow").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/narrow_job.h"
#include "cli/proc.h"
#include "common/words.h"

#define MAX_NODES 4096
#define MAX_PLACEMENTS 16

enum { NW_LEVEL = CLI_KEY_LONG, NW_WINDOW, NW_TIMEOUT, NW_PLACEMENTS, NW_LAUNCHER, NW_OUTPUT, NW_SHOW };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *jstr(json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : dflt;
}

/* say - progress for people: stdout, or stderr when stdout carries the JSON document. */
static FILE *say_to;

/* node_states - the cluster's nodes and their states from sinfo, as [{"name", "state"}]; NULL when sinfo fails. */
static json_t *node_states(void)
{
    static char out[1 << 18];
    char *argv[] = {"sinfo", "-h", "-N", "-o", "%N %t", NULL};
    if (proc_run(argv, out, sizeof(out)) != 0)
        return NULL;
    json_t *a = json_array();
    for (char *save, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[256], state[64];
        if (sscanf(line, "%255s %63s", name, state) != 2)
            continue;
        size_t i;
        json_t *o;
        int dup = 0;
        json_array_foreach(a, i, o) dup |= !strcmp(jstr(o, "name", ""), name); /* a node in several partitions */
        if (!dup && json_array_size(a) < MAX_NODES)
            json_array_append_new(a, json_pack("{s:s, s:s}", "name", name, "state", state));
    }
    return a;
}

/* job_gone - 1 when Slurm no longer lists job `job` (ended, or never known). */
static int job_gone(const char *job)
{
    char *av[] = {"squeue", "-h", "-j", (char *)job, "-o", "%T", NULL};
    char out[256];
    int st = proc_run_env(av, NULL, 1, out, sizeof(out));
    return st != 0 || !strspn(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
}

static void cancel(const char *job)
{
    char *av[] = {"scancel", (char *)job, NULL};
    char out[256];
    proc_run_env(av, NULL, 1, out, sizeof(out));
}

/* print_design - what the experiment is, before it runs. */
static void print_design(json_t *n, FILE *f)
{
    json_t *fd = json_object_get(n, "first_divergence"), *w = json_object_get(n, "window");
    fprintf(f,
            "narrowing %s: first divergence at step %" JSON_INTEGER_FORMAT ", rank %" JSON_INTEGER_FORMAT
            ", \"%s\" (cause %s)\n",
            jstr(n, "group", "?"), json_integer_value(json_object_get(fd, "step")),
            json_integer_value(json_object_get(fd, "rank")), jstr(fd, "name", "?"), jstr(n, "cause", "?"));
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(n, "runs"), i, r)
    {
        json_int_t c = json_integer_value(json_object_get(r, "content"));
        fprintf(f, "  run of job %-8s on %-12s result %c%s%s\n", jstr(r, "job_id", "?"),
                *jstr(r, "nodes", "") ? jstr(r, "nodes", "") : "(not attested)", (char)('A' + c % 26),
                json_is_true(json_object_get(r, "majority")) ? " (the majority's)" : "",
                json_is_true(json_object_get(r, "odd")) ? " (odd one out)" : "");
    }
    fprintf(f,
            "design: %s; replays in twin group %s, traced '%s' (steps %" JSON_INTEGER_FORMAT "-%" JSON_INTEGER_FORMAT
            " compared)\n",
            jstr(n, "kind", "?"), jstr(n, "narrow_group", "?"), jstr(w, "trace", "?"),
            json_integer_value(json_object_get(w, "from")), json_integer_value(json_object_get(w, "to")));
    json_t *p;
    json_array_foreach(json_object_get(n, "placements"), i, p)
    {
        json_t *rs = json_object_get(p, "resume_step");
        char from[48];
        if (json_is_integer(rs))
            snprintf(from, sizeof(from), "checkpoint %" JSON_INTEGER_FORMAT, json_integer_value(rs));
        else
            snprintf(from, sizeof(from), "the start");
        fprintf(f, "  #%-2" JSON_INTEGER_FORMAT " %-22s job %-8s's program on %-10s from %s: %s\n",
                json_integer_value(json_object_get(p, "index")), jstr(p, "role", "?"), jstr(p, "source_job_id", "?"),
                jstr(p, "nodes", "?"), from, jstr(p, "why", ""));
    }
    json_array_foreach(json_object_get(n, "notes"), i, p) fprintf(f, "  not placed: %s\n", json_string_value(p));
}

/* print_verdict - the verdict, the placements' outcomes, the reasoning and the record. */
static void print_verdict(json_t *n, FILE *f)
{
    const char *v = jstr(n, "verdict", "none");
    fprintf(f, "\nverdict: %s", v);
    if (json_is_string(json_object_get(n, "node")))
        fprintf(f, ", node %s", jstr(n, "node", ""));
    if (json_is_string(json_object_get(n, "gpu")))
        fprintf(f, ", GPU %s", jstr(n, "gpu", ""));
    fprintf(f, "\n  %s\n", jstr(n, "reason", ""));
    fprintf(f, "placements:\n");
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(n, "placements"), i, p)
    {
        json_t *d = json_object_get(p, "diverged");
        fprintf(f, "  #%-2" JSON_INTEGER_FORMAT " %-22s on %-10s job %-8s %-10s %s\n",
                json_integer_value(json_object_get(p, "index")), jstr(p, "role", "?"), jstr(p, "nodes", "?"),
                jstr(p, "job_id", "-"), jstr(p, "outcome", "?"),
                json_is_true(d)    ? "reproduced the divergence"
                : json_is_false(d) ? "clean"
                                   : "");
        if (*jstr(p, "detail", ""))
            fprintf(f, "      %s\n", jstr(p, "detail", ""));
    }
    json_array_foreach(json_object_get(n, "notes"), i, p) fprintf(f, "  not placed: %s\n", json_string_value(p));
    fprintf(f, "reasoning:\n");
    json_array_foreach(json_object_get(n, "reasoning"), i, p) fprintf(f, "  - %s\n", json_string_value(p));
    json_t *rec = json_object_get(n, "record");
    if (json_is_object(rec)) {
        fprintf(f,
                "%s:\n  step %" JSON_INTEGER_FORMAT ", rank %" JSON_INTEGER_FORMAT
                ", \"%s\" occurrence %" JSON_INTEGER_FORMAT
                " (%s %s), inputs %s\n  replay %s fp %s, reference %s fp %s\n",
                json_is_true(json_object_get(rec, "output_differs_while_inputs_matched"))
                    ? "first record whose output differs while its inputs matched"
                    : "first differing record at the finest level traced (no input fingerprints clear it)",
                json_integer_value(json_object_get(rec, "step")), json_integer_value(json_object_get(rec, "rank")),
                jstr(rec, "name", "?"), json_integer_value(json_object_get(rec, "occurrence")), jstr(rec, "level", "?"),
                jstr(rec, "dtype", "?"), jstr(rec, "inputs", "?"), jstr(rec, "replay_run_id", "?"),
                jstr(rec, "fp", "?"), jstr(rec, "reference_run_id", "?"), jstr(rec, "reference_fp", "?"));
    } else if (strcmp(v, "none")) {
        fprintf(f, "record: none named (no two replays differ)\n");
    }
}

static int exit_of(json_t *n)
{
    return strcmp(jstr(n, "verdict", "inconclusive"), "inconclusive") ? CLI_OK : CLI_DIVERGED;
}

/* show - print an existing narrow of `group` (the newest, or `id`). */
static int show(const client_conf *c, const char *group, const char *id)
{
    char path[600], esc[400];
    json_t *o;
    int rc;
    if (!id) {
        client_escape(group, esc, sizeof(esc));
        snprintf(path, sizeof(path), "/api/v1/twins/%s/narrows?limit=1", esc);
        if ((rc = client_get(c, path, &o, "cannot list the group's narrows")))
            return rc;
        json_t *first = json_array_get(json_object_get(o, "items"), 0);
        if (!first) {
            json_decref(o);
            cli_errorf("start one with lockstep narrow GROUP", "group %s was never narrowed", group);
            return CLI_BAD_INPUT;
        }
        snprintf(path, sizeof(path), "/api/v1/narrows/%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(first, "id")));
        json_decref(o);
    } else {
        snprintf(path, sizeof(path), "/api/v1/narrows/%s", id);
    }
    if ((rc = client_get(c, path, &o, "cannot read the narrow")))
        return rc;
    json_t *n = json_incref(json_object_get(o, "narrow"));
    json_decref(o);
    if (c->json) {
        client_print_json(json_incref(n));
    } else {
        print_design(n, stdout);
        if (!strcmp(jstr(n, "state", ""), "done"))
            print_verdict(n, stdout);
        else
            printf("\nstill running (deadline %s)\n", jstr(n, "deadline_at", "?"));
    }
    rc = strcmp(jstr(n, "state", ""), "done") ? CLI_PENDING : exit_of(n);
    json_decref(n);
    return rc;
}

/* number_opt - option `key`'s value as a whole number in [lo, hi] into *out (unchanged when not given). Returns 0,
 * or -1 after printing why. */
static int number_opt(const cli_args *a, int key, const char *name, long lo, long hi, long *out)
{
    const char *v = cli_args_last(a, key);
    char *end = NULL;
    if (!v)
        return 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < lo || n > hi) {
        cli_args_fail(a, "--%s takes %ld to %ld, not '%s'", name, lo, hi, v);
        return -1;
    }
    *out = n;
    return 0;
}

static int cmd_narrow(const cli_args *a)
{
    const char *group = a->npos ? a->pos[0] : NULL, *level = cli_args_last(a, NW_LEVEL) ?: "modules",
               *launcher = cli_args_last(a, NW_LAUNCHER) ?: "srun --mpi=pmix", *outdir = cli_args_last(a, NW_OUTPUT),
               *show_id = a->npos > 1 ? a->pos[1] : NULL;
    long window = 1, timeout = 900, placements = 6;
    int show_only = cli_args_count(a, NW_SHOW) > 0;
    if (!group)
        return cli_args_fail(a, "narrow needs a group");
    if (a->npos > (show_only ? 2 : 1))
        return cli_args_fail(a, "unexpected argument '%s'", a->pos[show_only ? 2 : 1]);
    if (show_id && (!*show_id || strspn(show_id, "0123456789") != strlen(show_id)))
        return cli_args_fail(a, "--show takes a narrow's number, not '%s'", show_id);
    if (strcmp(level, "modules") && strcmp(level, "ops"))
        return cli_args_fail(a, "--level takes modules or ops, not '%s'", level);
    if (number_opt(a, NW_WINDOW, "window", 0, 1000, &window) < 0 ||
        number_opt(a, NW_TIMEOUT, "timeout", 5, 86400, &timeout) < 0 ||
        number_opt(a, NW_PLACEMENTS, "placements", 1, MAX_PLACEMENTS, &placements) < 0)
        return CLI_BAD_INPUT;
    client_conf c;
    if (client_conf_load(&c, &a->g) < 0)
        return CLI_BAD_INPUT;
    if (show_only)
        return show(&c, group, show_id);
    /* The operator's launcher, as words (quoted as for sh), each quoted again into every replay's script. */
    char lbuf[2048], *lwords[NARROW_LAUNCHER_WORDS], lwhy[120];
    int nl = strlen(launcher) < sizeof(lbuf)
                 ? words_split(launcher, lbuf, sizeof(lbuf), lwords, NARROW_LAUNCHER_WORDS, lwhy, sizeof(lwhy))
                 : -1;
    if (nl < 0) {
        cli_errorf("give the launcher as words, e.g. --launcher 'srun --mpi=pmix'", "--launcher '%.200s': %s", launcher,
                   strlen(launcher) < sizeof(lbuf) ? lwhy : "too long");
        return CLI_BAD_INPUT;
    }
    say_to = c.json ? stderr : stdout;
    double t0 = now_s();

    json_t *nodes = node_states();
    if (!nodes || !json_array_size(nodes)) {
        json_decref(nodes);
        cli_error("cannot list the cluster's nodes", "sinfo -h -N failed or listed none",
                  "narrow submits replays with sbatch: run it where Slurm answers (is SLURM_CONF set, slurmctld up?)");
        return CLI_BAD_INPUT;
    }
    const char *user = getenv("USER");
    json_t *req = json_pack("{s:o, s:s, s:i, s:i, s:i, s:s}", "nodes", nodes, "level", level, "window", (int)window,
                            "placements", (int)placements, "timeout_s", (int)timeout, "actor", user ? user : "");
    char esc[600], path[800];
    client_escape(group, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/api/v1/twins/%s/narrows", esc);
    json_t *reply;
    long status = client_request(&c, "POST", path, req, &reply);
    json_decref(req);
    if (status < 0)
        return CLI_UNREACHABLE;
    if (status == 401 || status == 403) {
        json_decref(reply);
        cli_error("narrow needs lockstepd's admin token",
                  status == 401 ? "none was given" : "the token given is not it",
                  "keep it in ~/.config/lockstep/admin-token (mode 0600) or pass --token-file FILE: narrow starts jobs "
                  "and records a verdict "
                  "that can drain a node");
        return CLI_SERVER_ERROR;
    }
    if (status == 409) {
        int rc = client_fail(status, reply, "cannot narrow the group", path);
        return rc == CLI_SERVER_ERROR ? CLI_BAD_INPUT : rc;
    }
    if (status < 200 || status >= 300)
        return client_fail(status, reply, "cannot start the narrow", path);
    json_t *n = json_incref(json_object_get(reply, "narrow"));
    json_decref(reply);
    long long id = (long long)json_integer_value(json_object_get(n, "id"));
    print_design(n, say_to);

    /* Where the replays' output goes: the operator's directory, or a new one of ours (a name nobody could have made
     * first); other users' replays write into subdirectories of their own. */
    char dir[1024];
    if (outdir) {
        snprintf(dir, sizeof(dir), "%s", outdir);
        if (mkdir(dir, 0755) < 0 && access(dir, W_OK) < 0) {
            cli_errorf("give a directory with --output DIR", "cannot create %s for the replays' output", dir);
            json_decref(n);
            return CLI_BAD_INPUT;
        }
    } else {
        snprintf(dir, sizeof(dir), "%s/lockstep-narrow-%lld-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", id);
        if (!mkdtemp(dir) || chmod(dir, 0711) < 0) {
            cli_errorf("give a directory with --output DIR", "cannot create %s for the replays' output", dir);
            json_decref(n);
            return CLI_BAD_INPUT;
        }
    }

    /* Submit every placement still pending (lockstepd decides some not-run at once, saying why); report the jobs, or
     * why one could not be submitted. */
    size_t np = json_array_size(json_object_get(n, "placements"));
    narrow_job jobs[MAX_PLACEMENTS];
    int cancelled[MAX_PLACEMENTS] = {0}, reported[MAX_PLACEMENTS] = {0};
    double gone_since[MAX_PLACEMENTS] = {0};
    json_t *jobsreq = json_pack("{s:[]}", "placements");
    size_t i;
    json_t *p;
    int submitted = 0;
    memset(jobs, 0, sizeof(jobs));
    json_array_foreach(json_object_get(n, "placements"), i, p)
    {
        char why[1200];
        if (i >= MAX_PLACEMENTS)
            break;
        if (strcmp(jstr(p, "outcome", "pending"), "pending")) { /* announced with the outcomes below */
            reported[i] = 1;
            continue;
        }
        if (narrow_job_submit(n, p, lwords, nl, dir, &jobs[i], why, sizeof(why)) == 0) {
            submitted++;
            json_array_append_new(json_object_get(jobsreq, "placements"),
                                  json_pack("{s:I, s:s}", "index", (json_int_t)i, "job_id", jobs[i].id));
            fprintf(say_to, "  #%zu submitted: job %s on %s as %s\n", i, jobs[i].id, jstr(p, "nodes", "?"),
                    jstr(p, "user", "?"));
        } else {
            jobs[i].id[0] = 0;
            json_array_append_new(json_object_get(jobsreq, "placements"),
                                  json_pack("{s:I, s:s}", "index", (json_int_t)i, "error", why));
            fprintf(say_to, "  #%zu not submitted: %s\n", i, why);
            reported[i] = 1;
        }
    }
    fflush(say_to);
    if (json_array_size(json_object_get(jobsreq, "placements"))) {
        snprintf(path, sizeof(path), "/api/v1/narrows/%lld/jobs", id);
        int rc = client_post(&c, path, jobsreq, &reply, "cannot report the replay jobs");
        json_decref(jobsreq);
        if (rc) {
            for (size_t k = 0; k < np && k < MAX_PLACEMENTS; k++)
                if (jobs[k].id[0])
                    cancel(jobs[k].id);
            json_decref(n);
            return rc;
        }
        json_decref(reply);
    } else {
        json_decref(jobsreq);
    }
    fprintf(say_to,
            "waiting for %d replay%s to record steps up to %" JSON_INTEGER_FORMAT
            " (lockstepd's deadline: %ld s; job output in %s)\n",
            submitted, submitted == 1 ? "" : "s",
            json_integer_value(json_object_get(json_object_get(n, "window"), "to")), timeout, dir);
    fflush(say_to);

    /* Wait for the verdict; cancel each replay once it is decided; report jobs that left Slurm without a run. */
    snprintf(path, sizeof(path), "/api/v1/narrows/%lld", id);
    json_t *cur = NULL;
    int rc = 0, announced[MAX_PLACEMENTS] = {0};
    double last_queue = 0;
    for (;;) {
        json_t *o;
        if ((rc = client_get(&c, path, &o, "cannot read the narrow")))
            break;
        json_decref(cur);
        cur = json_incref(json_object_get(o, "narrow"));
        json_decref(o);
        int check_queue = now_s() - last_queue >= 2.0;
        if (check_queue)
            last_queue = now_s();
        json_array_foreach(json_object_get(cur, "placements"), i, p)
        {
            if (i >= MAX_PLACEMENTS)
                break;
            const char *outcome = jstr(p, "outcome", "pending");
            if (strcmp(outcome, "pending")) {
                if (!announced[i]) {
                    announced[i] = 1;
                    fprintf(say_to, "  #%zu %s on %s: %s (%s) [%.1f s]\n", i, jstr(p, "role", "?"),
                            jstr(p, "nodes", "?"), outcome, jstr(p, "detail", ""), now_s() - t0);
                    fflush(say_to);
                }
                /* lockstepd has what it needs: the rest of the run would only cost the node's time */
                if (jobs[i].id[0] && !cancelled[i] && !strcmp(jstr(p, "run_status", ""), "running")) {
                    cancel(jobs[i].id);
                    cancelled[i] = 1;
                }
                continue;
            }
            if (!jobs[i].id[0] || reported[i] || !json_is_null(json_object_get(p, "run_id")) || !check_queue)
                continue;
            /* A job Slurm no longer lists that never registered a run: say why, as far as its output tells. */
            if (!job_gone(jobs[i].id)) {
                gone_since[i] = 0;
                continue;
            }
            if (!gone_since[i])
                gone_since[i] = now_s();
            if (now_s() - gone_since[i] < 6.0) /* its run may still be on its way to lockstepd */
                continue;
            char last[512], why[2400];
            narrow_job_tail(&jobs[i], last, sizeof(last));
            snprintf(why, sizeof(why), "job %.31s left Slurm's queue without registering a run in %.300s%s%.1200s%s",
                     jobs[i].id, jstr(cur, "narrow_group", "?"), last[0] ? "; its output ends: " : " (its output, in ",
                     last[0] ? last : jobs[i].outdir, last[0] ? "" : ", is empty or missing)");
            json_t *r2 = json_pack("{s:[{s:I, s:s}]}", "placements", "index", (json_int_t)i, "error", why);
            char jp[200];
            snprintf(jp, sizeof(jp), "/api/v1/narrows/%lld/jobs", id);
            json_t *ignore = NULL;
            client_request(&c, "POST", jp, r2, &ignore);
            json_decref(ignore);
            json_decref(r2);
            reported[i] = 1;
        }
        if (!strcmp(jstr(cur, "state", ""), "done"))
            break;
        if (now_s() - t0 > (double)timeout + 60) {
            cli_errorf("lockstepd's fleet thread may be stuck; see its log",
                       "narrow %lld has no verdict %.0f s after it started (deadline %ld s)", id, now_s() - t0,
                       timeout);
            rc = CLI_SERVER_ERROR;
            break;
        }
        usleep(400000);
    }
    for (size_t k = 0; k < np && k < MAX_PLACEMENTS; k++)
        if (jobs[k].id[0] && !cancelled[k] && !job_gone(jobs[k].id))
            cancel(jobs[k].id);
    if (!rc && cur) {
        if (c.json) {
            json_object_set_new(cur, "elapsed_s", json_real(now_s() - t0));
            client_print_json(json_incref(cur));
        } else {
            print_verdict(cur, stdout);
            printf("narrowed in %.1f s (%d job%s); lockstep narrow %s --show prints it again\n", now_s() - t0,
                   submitted, submitted == 1 ? "" : "s", group);
        }
        rc = exit_of(cur);
    }
    json_decref(cur);
    json_decref(n);
    return rc;
}

static const cli_opt narrow_opts[] = {
    {"level", NW_LEVEL, "LEVEL", "modules ops", "what the replays trace in the window: modules (default) or ops"},
    {"window", NW_WINDOW, "K", NULL, "replay K steps before the first divergence too (0 to 1000, default 1)"},
    {"placements", NW_PLACEMENTS, "N", NULL, "at most N replays (1 to 16, default 6)"},
    {"timeout", NW_TIMEOUT, "SECONDS", NULL, "lockstepd's deadline for the verdict (5 to 86400, default 900)"},
    {"launcher", NW_LAUNCHER, "'CMD'", NULL, "how each replay starts its ranks (default 'srun --mpi=pmix')"},
    {"output", NW_OUTPUT, "DIR", "@dir", "where the replays' output goes (default: a new directory in /tmp)"},
    {"show", NW_SHOW, NULL, NULL, "print the group's newest (or narrow ID's) verdict, without replaying"},
    {0},
};

const cli_command cli_cmd_narrow = {
    .name = "narrow",
    .run = cmd_narrow,
    .synopsis = "narrow GROUP [--level modules|ops] [--window K] [--placements N] [--timeout SECONDS]\n"
                "       [--launcher 'srun --mpi=pmix'] [--output DIR]\n"
                "narrow GROUP --show [ID]",
    .summary = "replay a diverged group's window on chosen nodes: software,\n"
               "persistent or transient hardware (admin token); --show: the\n"
               "group's newest (or narrow ID's) verdict, without replaying",
    .opts = narrow_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
};
