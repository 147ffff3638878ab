/* cmd_job.c - `lockstep job JOBID`: a Slurm job's Lockstep outcome, every step's run and its own outcome in each of
 * its twin groups (or one line for the job's AdminComment, as the slurmctld epilog writes it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/outcome.h"
#include "cli/table.h"

#define JOB_MAX_GROUPS 64

/* One twin group the job's steps belong to, with what lockstepd says of it and the job's own outcome there. */
typedef struct job_group {
    const char *name;
    json_t *twin; /* GET /api/v1/twins/NAME, or NULL */
    job_outcome out;
} job_group;

static const char *cell(json_t *o, const char *key, char *buf, size_t cap)
{
    const char *v = client_cell(o, key, 0, buf, cap);
    return v ? v : "-";
}

/* dashboard_url - the dashboard link of group `name` on this server, into `out`. */
static void dashboard_url(const client_conf *c, const char *name, char *out, size_t cap)
{
    char esc[600];
    client_escape(name, esc, sizeof(esc));
    snprintf(out, cap, "%.500s/#/twins/%.280s", c->servers.url[0], esc);
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

/* job_node - where the job's run of a group that diverged without a majority ran the diverging rank (slurmstepd's
 * attestation, GET /api/v1/runs/ID), into `node` ("" when that is unknown or cannot be read: the outcome then
 * goes without it). */
static void job_node(const client_conf *c, json_t *twin, const char *job, char *node, size_t cap)
{
    int rank;
    const char *run = outcome_run_to_place(twin, job, &rank);
    char esc[300], path[400];
    json_t *reply = NULL;
    node[0] = 0;
    if (!run)
        return;
    client_escape(run, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/api/v1/runs/%s", esc);
    if (client_request(c, "GET", path, NULL, &reply) != 200) {
        json_decref(reply);
        return;
    }
    size_t i, k;
    json_t *p, *r;
    json_array_foreach(json_object_get(json_object_get(reply, "attested"), "placement"), i, p)
    {
        json_array_foreach(json_object_get(p, "ranks"), k, r)
        {
            if (json_integer_value(r) == rank && json_is_string(json_object_get(p, "node")))
                snprintf(node, cap, "%s", json_string_value(json_object_get(p, "node")));
        }
    }
    json_decref(reply);
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
        char node[256] = "";
        job_node(c, j->groups[j->ng].twin, job, node, sizeof(node));
        outcome_of(j->groups[j->ng].twin, g, job, node, &j->groups[j->ng].out);
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
    json_array_foreach(j->runs, i,
                       r) if (!strcmp(json_string_value(json_object_get(r, "status")) ?: "", "running")) return 1;
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

/* print_twin_jobs - the other jobs of the job's twin groups, once each (the epilog rewrites their comments too). */
static void print_twin_jobs(const job_state *j, const char *job)
{
    json_t *seen = json_object();
    json_object_set_new(seen, job, json_true());
    for (int k = 0; k < j->ng; k++) {
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(j->groups[k].twin, "runs"), i, r)
        {
            const char *other = json_string_value(json_object_get(r, "job_id"));
            if (other && !json_object_get(seen, other)) {
                json_object_set_new(seen, other, json_true());
                printf("%s\n", other);
            }
        }
    }
    json_decref(seen);
}

/* print_json - {"job_id", "runs", "groups": each group's document with "job_outcome": {"outcome", "text"}}. */
static void print_json(const job_state *j, const char *job)
{
    json_t *o = json_pack("{s:s, s:O, s:[]}", "job_id", job, "runs", j->runs, "groups");
    for (int k = 0; k < j->ng; k++) {
        json_t *g = json_deep_copy(j->groups[k].twin);
        json_object_set_new(g, "job_outcome",
                            json_pack("{s:s, s:s}", "outcome", j->groups[k].out.kind, "text", j->groups[k].out.text));
        json_array_append_new(json_object_get(o, "groups"), g);
    }
    client_print_json(o);
}

/* print_summary - one line for the job's AdminComment (deploy/slurm/epilog-lockstep.sh): the job's own outcome in
 * each of its groups, and the dashboard link of the first group that needs a look. */
static void print_summary(const client_conf *c, const job_state *j)
{
    char line[2400], url[900] = "";
    size_t n = (size_t)snprintf(line, sizeof(line), "lockstep:");
    for (int k = 0; k < j->ng && n < sizeof(line); k++) {
        n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %s", k ? ";" : "", j->groups[k].out.text);
        if (!url[0] && j->groups[k].out.needs_look)
            dashboard_url(c, j->groups[k].name, url, sizeof(url));
    }
    if (j->ungrouped && n < sizeof(line))
        n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %d step%s in no twin group", j->ng ? ";" : "",
                              j->ungrouped, j->ungrouped > 1 ? "s" : "");
    if (url[0] && n < sizeof(line))
        snprintf(line + n, sizeof(line) - n, " %s", url);
    printf("%s\n", line);
}

/* print_table - every step's run and its group's status, then the job's outcome in each group with its link. */
static void print_table(const client_conf *c, const job_state *j, const char *job, const char *state)
{
    size_t nruns = json_array_size(j->runs), i;
    printf("job %s: %zu run%s under lockstep, %d twin group%s%s\n\n", job, nruns, nruns == 1 ? "" : "s", j->ng,
           j->ng == 1 ? "" : "s", state);
    static const char *const head[] = {"STEP", "RUN", "RUN STATUS", "RANKS", "NODES", "GROUP", "GROUP STATUS"};
    table t;
    table_init(&t, 7, head);
    json_t *r;
    json_array_foreach(j->runs, i, r)
    {
        char b[7][64];
        const char *row[7] = {cell(r, "step_id", b[0], 64),     cell(r, "run_id", b[1], 64),
                              cell(r, "status", b[2], 64),      cell(r, "ranks", b[3], 64),
                              cell(r, "nodes", b[4], 64),       cell(r, "twin_group", b[5], 64),
                              cell(r, "group_status", b[6], 64)};
        table_add(&t, row);
    }
    table_print(&t, stdout);
    table_free(&t);
    if (j->ng)
        printf("\n");
    for (int k = 0; k < j->ng; k++) {
        char url[900];
        dashboard_url(c, j->groups[k].name, url, sizeof(url));
        printf("%s  %s\n", j->groups[k].out.text, url);
    }
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
    if (!json_array_size(j.runs)) {
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
    for (int k = 0; k < j.ng; k++) {
        const char *st = json_string_value(json_object_get(j.groups[k].twin, "status")) ?: "";
        diverged |= !strcmp(st, "diverged");
        unmatched |= !strcmp(st, "diverged") || !strcmp(st, "incomplete");
    }
    if (twin_jobs)
        print_twin_jobs(&j, job);
    else if (c.json)
        print_json(&j, job);
    else if (summary)
        print_summary(&c, &j);
    else
        print_table(&c, &j, job, diverged ? ", diverged" : unmatched ? ", incomplete" : "");
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
    .summary = "a Slurm job's outcome: every step's run, and the job's own outcome in each twin group\n"
               "(--summary: one line, as the slurmctld epilog writes it to AdminComment)",
    .opts = job_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
};
