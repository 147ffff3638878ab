/* cmd_job.c - `lockstep job JOBID`: a Slurm job's Lockstep outcome, every step's run and its twin group's status (or one line for the job's AdminComment). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* group_line - "GROUP STATUS[ at step S, rank R (NAME)][, VERDICT]" into `out`. */
static void group_line(const job_group *g, char *out, size_t cap)
{
    const char *status = json_string_value(json_object_get(g->twin, "status"));
    json_t *fd = json_object_get(g->twin, "first_divergence");
    const char *verdict = json_string_value(json_object_get(g->twin, "verdict"));
    size_t n = (size_t)snprintf(out, cap, "%s %s", g->name, status ? status : "unknown");
    if (json_is_object(fd) && n < cap) {
        char b[3][64];
        n += (size_t)snprintf(out + n, cap - n, " at step %s, rank %s (%s)", cell(fd, "step", b[0], 64),
                              cell(fd, "rank", b[1], 64), cell(fd, "name", b[2], 64));
    }
    if (verdict && strcmp(verdict, "none") && n < cap)
        snprintf(out + n, cap - n, ", %s", verdict);
}

/* dashboard_url - the dashboard link of group `name` on this server, into `out`. */
static void dashboard_url(const client_conf *c, const char *name, char *out, size_t cap)
{
    char esc[600];
    client_escape(name, esc, sizeof(esc));
    snprintf(out, cap, "%.500s/#/twins/%.280s", c->server, esc);
}

int cmd_job(int argc, char **argv)
{
    client_conf c;
    if (client_conf_load(&c, &argc, argv) < 0)
        return CLI_BAD_INPUT;
    int summary = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--summary")) {
            summary = 1;
            memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof(char *));
            argc--;
            break;
        }
    if (argc != 2 || argv[1][0] == '-') {
        cli_error("wrong arguments", NULL, "usage: lockstep job JOBID [--summary] [--json]");
        return CLI_BAD_INPUT;
    }
    const char *job = argv[1];
    char esc[600], path[800];
    client_escape(job, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/api/v1/runs?job=%s&limit=1000", esc);
    json_t *reply;
    int rc = client_get(&c, path, &reply, "cannot list the job's runs");
    if (rc)
        return rc;
    json_t *runs = json_object_get(reply, "items");
    if (!json_array_size(runs)) {
        if (summary) { /* the epilog writes what there is: nothing ran under lockstep */
            printf("lockstep: no run\n");
            json_decref(reply);
            return CLI_OK;
        }
        cli_errorf("runs register when a job step starts with --lockstep (srun or sbatch)",
                   "job %s has no run on this server", job);
        json_decref(reply);
        return CLI_BAD_INPUT;
    }
    /* The job's groups, each read once. */
    job_group groups[JOB_MAX_GROUPS];
    int ng = 0, ungrouped = 0;
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r)
    {
        const char *g = json_string_value(json_object_get(r, "twin_group"));
        if (!g) {
            ungrouped++;
            continue;
        }
        int seen = 0;
        for (int k = 0; k < ng && !seen; k++)
            seen = !strcmp(groups[k].name, g);
        if (seen || ng == JOB_MAX_GROUPS)
            continue;
        groups[ng] = (job_group){g, NULL};
        char gesc[600], gpath[700];
        client_escape(g, gesc, sizeof(gesc));
        snprintf(gpath, sizeof(gpath), "/api/v1/twins/%s", gesc);
        if ((rc = client_get(&c, gpath, &groups[ng].twin, "cannot show the job's twin group")) != 0)
            goto out_free;
        ng++;
    }
    int diverged = 0;
    for (int k = 0; k < ng; k++)
        diverged |= !strcmp(json_string_value(json_object_get(groups[k].twin, "status")) ?: "", "diverged");
    if (c.json) {
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
            if (!url[0] && !strcmp(json_string_value(json_object_get(groups[k].twin, "status")) ?: "", "diverged"))
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
               json_array_size(runs) == 1 ? "" : "s", ng, ng == 1 ? "" : "s", diverged ? ", diverged" : "");
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
    rc = diverged ? CLI_DIVERGED : CLI_OK;
out_free:
    for (int k = 0; k < ng; k++)
        json_decref(groups[k].twin);
    json_decref(reply);
    return rc;
}
