/* cmd_twin.c - `lockstep twin -n N [--spread] -- sbatch ARGS SCRIPT`: submit N copies of a job as one twin group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/proc.h"
#include "common/hostlist.h"

#define MAX_COPIES 64
#define MAX_NODES 4096

static const char *const usage =
    "usage: lockstep twin -n N [--spread [--exclude NODES]] [--group NAME] -- sbatch [SBATCH ARGS] SCRIPT [ARGS]";

/* nodes_per_job - the -N/--nodes count among sbatch's options (1 if none);
 * -1 for a range such as 2-4, which cannot be spread. */
static int nodes_per_job(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if ((!strcmp(argv[i], "-N") || !strcmp(argv[i], "--nodes")) && i + 1 < argc)
            v = argv[i + 1];
        else if (!strncmp(argv[i], "--nodes=", 8))
            v = argv[i] + 8;
        else if (!strncmp(argv[i], "-N", 2) && argv[i][2])
            v = argv[i] + 2;
        if (!v)
            continue;
        char *end;
        long n = strtol(v, &end, 10);
        return *end || n < 1 ? -1 : (int)n;
    }
    return 1;
}

/* list_nodes - the responding nodes, from sinfo, but those of the node list `exclude` (may be NULL). Returns the
 * count, or -1. */
static int list_nodes(char names[][64], int max, const char *exclude)
{
    static char skip[MAX_NODES][HOSTLIST_NAME_MAX];
    int nskip = exclude ? hostlist_expand(exclude, skip, MAX_NODES) : 0;
    if (nskip < 0)
        return -1;
    static char out[65536];
    char *argv[] = {"sinfo", "-h", "-N", "-r", "-o", "%N", NULL};
    if (proc_run(argv, out, sizeof(out)) != 0)
        return -1;
    int n = 0;
    for (char *save, *tok = strtok_r(out, "\n", &save); tok && n < max; tok = strtok_r(NULL, "\n", &save)) {
        int dup = 0;
        for (int i = 0; i < n && !dup; i++)
            dup = !strcmp(names[i], tok);
        for (int i = 0; i < nskip && !dup; i++)
            dup = !strcmp(skip[i], tok);
        if (!dup && *tok)
            snprintf(names[n++], 64, "%s", tok);
    }
    return n;
}

int cmd_twin(int argc, char **argv)
{
    int copies = 0, spread = 0, sep = -1;
    char group[128] = "";
    const char *exclude = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            sep = i;
            break;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            copies = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--spread")) {
            spread = 1;
        } else if (!strcmp(argv[i], "--exclude") && i + 1 < argc) {
            exclude = argv[++i];
            if (!*exclude) {
                cli_errorf(usage, "--exclude wants a node list such as n3 or n[3-4], not '%s'", exclude);
                return CLI_BAD_INPUT;
            }
        } else if (!strcmp(argv[i], "--group") && i + 1 < argc) {
            snprintf(group, sizeof(group), "%s", argv[++i]);
        } else {
            cli_errorf(usage, "unknown option '%s'", argv[i]);
            return CLI_BAD_INPUT;
        }
    }
    if (sep < 0 || sep + 2 >= argc || copies < 2 || copies > MAX_COPIES) {
        cli_error("twin needs -n N (2 to 64) and a command after --", NULL, usage);
        return CLI_BAD_INPUT;
    }
    char **cmd = argv + sep + 1;
    int cmdc = argc - sep - 1;
    const char *base = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
    if (strcmp(base, "sbatch") != 0) {
        cli_errorf(usage, "twin submits with sbatch, not '%s'", cmd[0]);
        return CLI_BAD_INPUT;
    }
    if (!group[0]) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        snprintf(group, sizeof(group), "twin-%04d%02d%02d-%02d%02d%02d-%04x", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(getpid() ^ (unsigned)now) & 0xffff);
    }

    static char nodes[MAX_NODES][64];
    int per = nodes_per_job(cmdc, cmd), n_nodes = 0;
    if (spread) {
        if (per < 0) {
            cli_error("--spread needs a fixed node count", "sbatch -N gives a range", "use -N K with one number");
            return CLI_BAD_INPUT;
        }
        n_nodes = list_nodes(nodes, MAX_NODES, exclude);
        if (n_nodes < 0) {
            cli_error("cannot list the cluster's nodes", exclude ? "sinfo failed, or --exclude is not a node list" : "sinfo failed",
                      "is SLURM_CONF set and slurmctld up? --exclude takes a list such as n3 or n[3-4]");
            return CLI_BAD_INPUT;
        }
        if (copies * per > n_nodes) {
            char detail[200];
            snprintf(detail, sizeof(detail), "%d copies x %d nodes each need %d nodes; %d respond%s", copies, per,
                     copies * per, n_nodes, exclude ? " (besides those excluded)" : "");
            cli_error("not enough nodes to spread the copies apart", detail, "use fewer copies or drop --spread");
            return CLI_BAD_INPUT;
        }
    }

    char twin_opt[200];
    snprintf(twin_opt, sizeof(twin_opt), "--lockstep-twin=%s", group);
    char jobs[MAX_COPIES][32];
    char placed[MAX_COPIES][1024];
    for (int c = 0; c < copies; c++) {
        /* sbatch --parsable --lockstep-twin=G [--nodelist=...] ARGS SCRIPT [ARGS] */
        char *av[cmdc + 4];
        char nodelist[1024] = "--nodelist=";
        int k = 0;
        av[k++] = cmd[0];
        av[k++] = "--parsable";
        av[k++] = twin_opt;
        placed[c][0] = 0;
        if (spread) {
            for (int j = 0; j < per; j++) {
                size_t n = strlen(nodelist);
                snprintf(nodelist + n, sizeof(nodelist) - n, "%s%s", j ? "," : "", nodes[c * per + j]);
            }
            snprintf(placed[c], sizeof(placed[c]), "%s", nodelist + 11);
            av[k++] = nodelist;
        }
        for (int j = 1; j < cmdc; j++)
            av[k++] = cmd[j];
        av[k] = NULL;
        char out[256];
        int st = proc_run(av, out, sizeof(out));
        long id = strtol(out, NULL, 10);
        if (st != 0 || id <= 0) {
            char detail[300];
            snprintf(detail, sizeof(detail), "copy %d of %d: sbatch exited %d%s", c + 1, copies, st,
                     c ? "; the copies submitted before it keep running" : "");
            cli_error("cannot submit the twin jobs", detail, "run the sbatch command alone to see why");
            return CLI_BAD_INPUT;
        }
        snprintf(jobs[c], sizeof(jobs[c]), "%ld", id);
    }

    printf("twin group %s: %d jobs\n", group, copies);
    for (int c = 0; c < copies; c++)
        printf("  job %s%s%s\n", jobs[c], placed[c][0] ? " on " : "", placed[c]);
    const char *server = getenv("LOCKSTEP_SERVER");
    if (server && *server) {
        char esc[400];
        client_escape(group, esc, sizeof(esc));
        printf("dashboard: %s/#/twins/%s\n", server, esc);
    }
    printf("follow it: lockstep twins %s\n", group);
    return CLI_OK;
}
