/* cmd_job.c - `lockstep job JOBID`: a Slurm job's Lockstep outcome, every step's run and its twin group's status (or one line for the job's AdminComment, as the slurmctld epilog writes it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/table.h"

#define JOB_MAX_GROUPS 64

/* One twin group the job's steps belong to, with what lockstepd says of it. */
typedef struct job_group {
    const char *name;
    json_t *twin; /* GET /api/v1/twins/NAME, or NULL */
} job_group;

static const char *cell(json_t *o, const char *key, char *buf, size_t cap)
{
    const char *v = client_cell(o, key, 0, buf, cap);
    return v ? v : "-";
}

/* group_line - "GROUP STATUS[ at step S, rank R (NAME): CAUSE][, CLASS]" into `out`: the group's status, its
 * first divergence with its cause (GET /twins/G's), and the fleet's classification (hardware, software) once
 * it has one. */
static void group_line(const job_group *g, char *out, size_t cap)
{
    const char *status = json_string_value(json_object_get(g->twin, "status"));
    json_t *fd = json_object_get(g->twin, "first_divergence");
    const char *klass = json_string_value(json_object_get(json_object_get(g->twin, "classification"), "class"));
    size_t n = (size_t)snprintf(out, cap, "%s %s", g->name, status ? status : "unknown");
    if (json_is_object(fd) && n < cap) {
        char b[4][64];
        const char *cause = client_cell(fd, "cause", 0, b[3], 64);
        n += (size_t)snprintf(out + n, cap - n, " at step %s, rank %s (%s)%s%s", cell(fd, "step", b[0], 64),
                              cell(fd, "rank", b[1], 64), cell(fd, "name", b[2], 64), cause ? ": " : "",
                              cause ? cause : "");
    }
    if (klass && strcmp(klass, "none") && n < cap)
        snprintf(out + n, cap - n, ", %s", klass);
}

/* dashboard_url - the dashboard link of group `name` on this server, into `out`. */
static void dashboard_url(const client_conf *c, const char *name, char *out, size_t cap)
{
    char esc[600];
    client_escape(name, esc, sizeof(esc));
    snprintf(out, cap, "%.500s/#/twins/%.280s", c->server, esc);
}

/* What lockstepd says of one job: its runs (every step) and each of their twin groups. */
typedef struct job_state {
    json_t *reply; /* GET /api/v1/runs?job=J */
    json_t *runs;  /* borrowed from reply */
    job_group groups[JOB_MAX_GROUPS];
    int ng, ungrouped;
} job_state;

static void job_state_free(job_state *j)
{
    for (int k = 0; k < j->ng; k++)
        json_decref(j->groups[k].twin);
    json_decref(j->reply);
    memset(j, 0, sizeof(*j));
}

/* job_load - the job's runs and groups. Returns 0, or the exit code after printing the error. */
static int job_load(const client_conf *c, const char *job, job_state *j)
{
    memset(j, 0, sizeof(*j));
    char esc[300], path[800];
    client_escape(job, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/api/v1/runs?job=%s&limit=1000", esc);
    int rc = client_get(c, path, &j->reply, "cannot list the job's runs");
    if (rc)
        return rc;
    j->runs = json_object_get(j->reply, "items");
    size_t i;
    json_t *r;
    json_array_foreach(j->runs, i, r)
    {
        const char *g = json_string_value(json_object_get(r, "twin_group"));
        if (!g) {
            j->ungrouped++;
            continue;
        }
        int seen = 0;
        for (int k = 0; k < j->ng && !seen; k++)
            seen = !strcmp(j->groups[k].name, g);
        if (seen || j->ng == JOB_MAX_GROUPS)
            continue;
        j->groups[j->ng] = (job_group){g, NULL};
        char gesc[600], gpath[1000];
        client_escape(g, gesc, sizeof(gesc));
        /* ?job=: with read_access = admin a job's own token reads its user's groups (docs/server.md) */
        snprintf(gpath, sizeof(gpath), "/api/v1/twins/%s?job=%s", gesc, esc);
        if ((rc = client_get(c, gpath, &j->groups[j->ng].twin, "cannot show the job's twin group")) != 0) {
            job_state_free(j);
            return rc;
        }
        j->ng++;
    }
    return 0;
}

/* job_settling - 1 while the job's own part may still change soon: one of its runs still runs, or a group of
 * it is pending although every run of it has ended (the comparison catching up). A group that waits for a twin
 * of another job that still runs, or for a second run, is not settling: that can take hours. */
static int job_settling(const job_state *j)
{
    size_t i;
    json_t *r;
    json_array_foreach(j->runs, i, r) if (!strcmp(json_string_value(json_object_get(r, "status")) ?: "", "running")) return 1;
    for (int k = 0; k < j->ng; k++) {
        json_t *t = j->groups[k].twin;
        if (strcmp(json_string_value(json_object_get(t, "status")) ?: "", "pending"))
            continue;
        int running = 0;
        json_array_foreach(json_object_get(t, "runs"), i, r) running |=
            !strcmp(json_string_value(json_object_get(r, "status")) ?: "", "running");
        if (!running && json_array_size(json_object_get(t, "runs")) >= 2)
            return 1;
    }
    return 0;
}

enum { JOB_SUMMARY = CLI_KEY_LONG, JOB_TWIN_JOBS, JOB_WAIT };

static int cmd_job(const cli_args *a)
{
    const char *wait_s = cli_args_last(a, JOB_WAIT);
    int summary = cli_args_count(a, JOB_SUMMARY) > 0, twin_jobs = cli_args_count(a, JOB_TWIN_JOBS) > 0;
    char *end = NULL;
    double wait = wait_s ? strtod(wait_s, &end) : 0;
    if (a->npos != 1)
        return cli_args_fail(a, "job takes one job id");
    if (wait_s && (end == wait_s || *end || wait < 0 || wait > 3600))
        return cli_args_fail(a, "--wait takes 0 to 3600 seconds, not '%s'", wait_s);
    if (summary && twin_jobs)
        return cli_args_fail(a, "--summary and --twin-jobs go one at a time");
    client_conf c;
    if (client_conf_load(&c, &a->g) < 0)
        return CLI_BAD_INPUT;
    const char *job = a->pos[0];
    job_state j;
    int rc = job_load(&c, job, &j);
    if (rc)
        return rc;
    /* --wait: until the job's own runs have ended and their comparison has caught up (never for its twins). */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (wait > 0 && json_array_size(j.runs) && job_settling(&j)) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 >= wait)
            break;
        struct timespec ts = {0, 250000000L};
        nanosleep(&ts, NULL);
        job_state_free(&j);
        if ((rc = job_load(&c, job, &j)) != 0)
            return rc;
    }
    json_t *runs = j.runs;
    job_group *groups = j.groups;
    int ng = j.ng, ungrouped = j.ungrouped;
    size_t i;
    json_t *r;
    if (!json_array_size(runs)) {
        rc = CLI_OK;
        if (summary) /* the epilog writes what there is: nothing ran under lockstep */
            printf("lockstep: no run\n");
        else if (!twin_jobs) {
            cli_errorf("runs register when a job step starts with --lockstep (srun or sbatch)",
                       "job %s has no run on this server", job);
            rc = CLI_BAD_INPUT;
        }
        goto out_free;
    }
    /* the runs do not match when a group diverged, or is incomplete (failed runs, or nothing in common) */
    int diverged = 0, unmatched = 0;
    for (int k = 0; k < ng; k++) {
        const char *st = json_string_value(json_object_get(groups[k].twin, "status")) ?: "";
        diverged |= !strcmp(st, "diverged");
        unmatched |= !strcmp(st, "diverged") || !strcmp(st, "incomplete");
    }
    if (twin_jobs) {
        /* The other jobs of the job's twin groups, once each (the epilog rewrites their comments too). */
        json_t *seen = json_object();
        json_object_set_new(seen, job, json_true());
        for (int k = 0; k < ng; k++)
            json_array_foreach(json_object_get(groups[k].twin, "runs"), i, r)
            {
                const char *other = json_string_value(json_object_get(r, "job_id"));
                if (other && !json_object_get(seen, other)) {
                    json_object_set_new(seen, other, json_true());
                    printf("%s\n", other);
                }
            }
        json_decref(seen);
    } else if (c.json) {
        json_t *o = json_pack("{s:s, s:O, s:o}", "job_id", job, "runs", runs, "groups", json_array());
        for (int k = 0; k < ng; k++)
            json_array_append(json_object_get(o, "groups"), groups[k].twin);
        client_print_json(o);
    } else if (summary) {
        /* One line for the job's AdminComment (deploy/slurm/epilog-lockstep.sh): each group's status, the
         * first divergence of a diverged one, and the dashboard link of the first group that needs a look. */
        char line[1200], g[400], url[900] = "";
        size_t n = (size_t)snprintf(line, sizeof(line), "lockstep:");
        for (int k = 0; k < ng && n < sizeof(line); k++) {
            group_line(&groups[k], g, sizeof(g));
            n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %s", k ? ";" : "", g);
            const char *st = json_string_value(json_object_get(groups[k].twin, "status")) ?: "";
            if (!url[0] && (!strcmp(st, "diverged") || !strcmp(st, "incomplete")))
                dashboard_url(&c, groups[k].name, url, sizeof(url));
        }
        if (ungrouped && n < sizeof(line))
            n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %d step%s in no twin group", ng ? ";" : "",
                                  ungrouped, ungrouped > 1 ? "s" : "");
        if (url[0] && n < sizeof(line))
            snprintf(line + n, sizeof(line) - n, " %s", url);
        printf("%s\n", line);
    } else {
        printf("job %s: %zu run%s under lockstep, %d twin group%s%s\n\n", job, json_array_size(runs),
               json_array_size(runs) == 1 ? "" : "s", ng, ng == 1 ? "" : "s", diverged ? ", diverged" : unmatched ? ", incomplete" : "");
        static const char *const head[] = {"STEP", "RUN", "RUN STATUS", "RANKS", "NODES", "GROUP", "GROUP STATUS"};
        table t;
        table_init(&t, 7, head);
        json_array_foreach(runs, i, r)
        {
            char b[7][64];
            const char *row[7] = {cell(r, "step_id", b[0], 64),    cell(r, "run_id", b[1], 64),
                                  cell(r, "status", b[2], 64),     cell(r, "ranks", b[3], 64),
                                  cell(r, "nodes", b[4], 64),      cell(r, "twin_group", b[5], 64),
                                  cell(r, "group_status", b[6], 64)};
            table_add(&t, row);
        }
        table_print(&t, stdout);
        table_free(&t);
        if (ng)
            printf("\n");
        for (int k = 0; k < ng; k++) {
            char g[400], url[900];
            group_line(&groups[k], g, sizeof(g));
            dashboard_url(&c, groups[k].name, url, sizeof(url));
            printf("%s  %s\n", g, url);
        }
    }
    rc = unmatched && !twin_jobs ? CLI_DIVERGED : CLI_OK;
out_free:
    job_state_free(&j);
    return rc;
}

static const cli_opt job_opts[] = {
    {"summary", JOB_SUMMARY, NULL, NULL, "one line, as the slurmctld epilog writes it into the job's AdminComment"},
    {"twin-jobs", JOB_TWIN_JOBS, NULL, NULL, "the other jobs of the job's twin groups, one a line"},
    {"wait", JOB_WAIT, "SECONDS", NULL, "wait up to SECONDS for the job's own runs to end and be compared"},
    {0},
};

const cli_command cli_cmd_job = {
    .name = "job",
    .run = cmd_job,
    .synopsis = "job JOBID [--summary | --twin-jobs] [--wait SECONDS]",
    .summary = "a Slurm job's outcome: every step's run and its twin group's status\n"
               "(--summary: one line, as the slurmctld epilog writes it to AdminComment)",
    .opts = job_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
};
