/* cmd_twin.c - `lockstep twin -n N [--noise K] [--change ARG] -- sbatch ARGS SCRIPT`: submit N copies of a job as one
 * twin group, or a whole experiment (baseline, change, noise replicas). */
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
#define MAX_EXTRA 32 /* --change / --noise-arg / --*-env options */

enum {
    TW_COPIES = 'n',
    TW_SPREAD = CLI_KEY_LONG,
    TW_EXCLUDE,
    TW_GROUP,
    TW_CHANGE,
    TW_CHANGE_ENV,
    TW_NOISE,
    TW_NOISE_ARG,
    TW_NOISE_ENV,
    TW_NOISE_MODE,
};

/* One set of copies to submit: a twin group, how many, and what sets it apart from the baseline. */
typedef struct copy_set {
    const char *part; /* "baseline", "change", "noise" */
    char group[160];
    int copies;
    const char *args[MAX_EXTRA]; /* appended to the script's arguments */
    int nargs;
    const char *env[MAX_EXTRA]; /* VAR=VALUE, in the environment sbatch exports */
    int nenv;
    int fp_mode; /* replace --lockstep=det (or add --lockstep=fp) */
    char jobs[MAX_COPIES][32];
    char placed[MAX_COPIES][1024];
} copy_set;

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

/* script_index - where the batch script sits in `cmd` (sbatch's first non-option word), or -1. Options that
 * take a separate value are those sbatch documents with one; `--opt=value` forms need no care. */
static int script_index(int cmdc, char **cmd)
{
    static const char *const with_value[] = {"-A",
                                             "-a",
                                             "-b",
                                             "-c",
                                             "-C",
                                             "-D",
                                             "-d",
                                             "-e",
                                             "-F",
                                             "-G",
                                             "-i",
                                             "-J",
                                             "-L",
                                             "-M",
                                             "-m",
                                             "-N",
                                             "-n",
                                             "-o",
                                             "-p",
                                             "-q",
                                             "-S",
                                             "-t",
                                             "-w",
                                             "-x",
                                             "--account",
                                             "--array",
                                             "--begin",
                                             "--cpus-per-task",
                                             "--constraint",
                                             "--chdir",
                                             "--dependency",
                                             "--error",
                                             "--nodefile",
                                             "--gpus",
                                             "--gres",
                                             "--input",
                                             "--job-name",
                                             "--licenses",
                                             "--clusters",
                                             "--distribution",
                                             "--nodes",
                                             "--ntasks",
                                             "--output",
                                             "--partition",
                                             "--qos",
                                             "--time",
                                             "--nodelist",
                                             "--exclude",
                                             "--mem",
                                             "--mem-per-cpu",
                                             "--ntasks-per-node",
                                             "--export",
                                             "--signal",
                                             "--gpus-per-node",
                                             "--reservation",
                                             "--comment",
                                             "--mail-type",
                                             "--mail-user",
                                             NULL};
    for (int i = 1; i < cmdc; i++) {
        if (cmd[i][0] != '-')
            return i;
        int takes = 0;
        for (int k = 0; with_value[k] && !takes; k++)
            takes = !strcmp(cmd[i], with_value[k]);
        if (takes)
            i++;
    }
    return -1;
}

/* env_apply - set (restore = 0) the set's variables, saving what they were; or put the saved values back. */
static void env_apply(const copy_set *s, char *saved[], int restore)
{
    for (int i = 0; i < s->nenv; i++) {
        char name[256];
        const char *eq = strchr(s->env[i], '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - s->env[i]), s->env[i]);
        if (!restore) {
            const char *old = getenv(name);
            saved[i] = old ? strdup(old) : NULL;
            setenv(name, eq + 1, 1);
        } else {
            if (saved[i])
                setenv(name, saved[i], 1);
            else
                unsetenv(name);
            free(saved[i]);
        }
    }
}

/* submit - the copies of one set; 0, or the exit code after saying why. */
static int submit(copy_set *s, int cmdc, char **cmd, int script, int spread, char nodes[][64], int per)
{
    char twin_opt[200];
    snprintf(twin_opt, sizeof(twin_opt), "--lockstep-twin=%s", s->group);
    char *saved[MAX_EXTRA];
    env_apply(s, saved, 0);
    int rc = CLI_OK;
    for (int c = 0; c < s->copies && rc == CLI_OK; c++) {
        /* sbatch --parsable --lockstep-twin=G [--nodelist=...] ARGS SCRIPT [ARGS] [the set's ARGS] */
        char *av[cmdc + MAX_EXTRA + 6];
        char nodelist[1024] = "--nodelist=";
        int k = 0, has_mode = 0;
        av[k++] = cmd[0];
        av[k++] = "--parsable";
        av[k++] = twin_opt;
        s->placed[c][0] = 0;
        if (spread) {
            for (int j = 0; j < per; j++) {
                size_t n = strlen(nodelist);
                snprintf(nodelist + n, sizeof(nodelist) - n, "%s%s", j ? "," : "", nodes[c * per + j]);
            }
            snprintf(s->placed[c], sizeof(s->placed[c]), "%s", nodelist + 11);
            av[k++] = nodelist;
        }
        for (int j = 1; j < cmdc; j++) {
            if (j == script && s->fp_mode && !has_mode)
                av[k++] = "--lockstep=fp";
            int mode = j < script && (!strncmp(cmd[j], "--lockstep=", 11) || !strcmp(cmd[j], "--lockstep"));
            has_mode |= mode;
            av[k++] = mode && s->fp_mode ? "--lockstep=fp" : cmd[j];
        }
        for (int j = 0; j < s->nargs; j++)
            av[k++] = (char *)s->args[j];
        av[k] = NULL;
        char out[256];
        int st = proc_run(av, out, sizeof(out));
        long id = strtol(out, NULL, 10);
        if (st != 0 || id <= 0) {
            char detail[400];
            snprintf(detail, sizeof(detail), "%s copy %d of %d: sbatch exited %d%s", s->part, c + 1, s->copies, st,
                     c || strcmp(s->part, "baseline") ? "; the copies submitted before it keep running" : "");
            cli_error("cannot submit the twin jobs", detail, "run the sbatch command alone to see why");
            rc = CLI_BAD_INPUT;
            break;
        }
        snprintf(s->jobs[c], sizeof(s->jobs[c]), "%ld", id);
    }
    env_apply(s, saved, 1);
    return rc;
}

/* print_set - "  GROUP  PART  (what differs)  job J on NODES, ..." */
static void print_set(const copy_set *s)
{
    printf("  %-24s %-8s", s->group, s->part);
    for (int j = 0; j < s->nargs; j++)
        printf(" %s", s->args[j]);
    for (int j = 0; j < s->nenv; j++)
        printf(" %s", s->env[j]);
    if (s->fp_mode)
        printf(" (--lockstep=fp)");
    printf("\n");
    for (int c = 0; c < s->copies; c++)
        printf("    job %s%s%s\n", s->jobs[c], s->placed[c][0] ? " on " : "", s->placed[c]);
}

static int add_extra(const cli_args *a, const char **list, int *n, const char *v, const char *opt)
{
    if (*n == MAX_EXTRA) {
        cli_args_fail(a, "too many %s options (at most %d)", opt, MAX_EXTRA);
        return -1;
    }
    if (strstr(opt, "-env") && (!strchr(v, '=') || v[0] == '=')) {
        cli_errorf("e.g. --noise-env NCCL_ALGO=Tree", "%s takes VAR=VALUE, not '%s'", opt, v);
        return -1;
    }
    list[(*n)++] = v;
    return 0;
}

/* take_opts - the twin command's options, in the order given, into the sets and the rest. Returns 0, or -1 after
 * printing what is wrong. */
static int take_opts(const cli_args *a, copy_set *sets, int *copies, int *spread, int *noise, char *group, size_t gcap,
                     const char **exclude)
{
    copy_set *change = &sets[1], *nz = &sets[2];
    for (int i = 0; i < a->ngiven; i++) {
        const char *v = a->given[i].value, *name = a->given[i].opt->name;
        char *end = NULL;
        int bad = 0;
        switch (a->given[i].opt->key) {
        case TW_COPIES:
            *copies = (int)strtol(v, &end, 10);
            bad = *end != 0;
            name = "-n";
            break;
        case TW_SPREAD: *spread = 1; break;
        case TW_EXCLUDE:
            *exclude = v;
            if (!*v) {
                cli_args_fail(a, "--exclude wants a node list such as n3 or n[3-4], not '%s'", v);
                return -1;
            }
            break;
        case TW_GROUP: snprintf(group, gcap, "%s", v); break;
        case TW_NOISE:
            *noise = (int)strtol(v, &end, 10);
            bad = *end != 0;
            break;
        case TW_CHANGE: bad = add_extra(a, change->args, &change->nargs, v, "--change") < 0; break;
        case TW_CHANGE_ENV: bad = add_extra(a, change->env, &change->nenv, v, "--change-env") < 0; break;
        case TW_NOISE_ARG: bad = add_extra(a, nz->args, &nz->nargs, v, "--noise-arg") < 0; break;
        case TW_NOISE_ENV: bad = add_extra(a, nz->env, &nz->nenv, v, "--noise-env") < 0; break;
        case TW_NOISE_MODE:
            nz->fp_mode = !strcmp(v, "fp");
            bad = !nz->fp_mode && strcmp(v, "det");
            break;
        default: break;
        }
        if (bad) {
            cli_args_fail(a, "bad value for %s%s: '%s'", name[0] == '-' ? "" : "--", name, v);
            return -1;
        }
    }
    return 0;
}

static int cmd_twin(const cli_args *a)
{
    int copies = 0, spread = 0, noise = -1;
    char group[128] = "";
    static copy_set sets[3];
    memset(sets, 0, sizeof(sets));
    copy_set *base = &sets[0], *change = &sets[1], *nz = &sets[2];
    const char *exclude = NULL;
    if (take_opts(a, sets, &copies, &spread, &noise, group, sizeof(group), &exclude) < 0)
        return CLI_BAD_INPUT;
    if (a->ndash > 0)
        return cli_args_fail(a, "twin takes its sbatch command after --, not '%s'", a->pos[0]);
    int experiment = noise >= 0 || change->nargs || change->nenv;
    if (a->npos < 2 || copies < (experiment ? 1 : 2) || copies > MAX_COPIES)
        return cli_args_fail(a, experiment ? "twin needs -n N (1 to 64) and a command after --"
                                           : "twin needs -n N (2 to 64) and a command after --");
    if (noise >= 0 && (noise < 2 || noise > MAX_COPIES)) {
        cli_error("--noise takes 2 to 64 replicas", "a noise band needs at least 2 replicas to estimate its spread",
                  "4 or more give a useful band");
        return CLI_BAD_INPUT;
    }
    if (noise < 0 && (nz->nargs || nz->nenv || nz->fp_mode))
        return cli_args_fail(a, "--noise-arg, --noise-env and --noise-mode need --noise K");
    if (noise > 0 && !nz->nargs && !nz->nenv && !nz->fp_mode) {
        cli_error("the noise replicas need a nondeterministic setting",
                  "without one they are deterministic twins "
                  "of the baseline and carry no noise",
                  "name it: --noise-arg --nondeterministic, or --noise-env NCCL_ALGO=Tree --noise-mode fp");
        return CLI_BAD_INPUT;
    }
    char **cmd = a->pos;
    int cmdc = a->npos;
    const char *exe = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
    if (strcmp(exe, "sbatch") != 0)
        return cli_args_fail(a, "twin submits with sbatch, not '%s'", cmd[0]);
    int script = script_index(cmdc, cmd);
    if (script < 0)
        return cli_args_fail(a, "no batch script after the sbatch options");
    if (!group[0]) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        snprintf(group, sizeof(group), "%s-%04d%02d%02d-%02d%02d%02d-%04x", experiment ? "exp" : "twin",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (unsigned)(getpid() ^ (unsigned)now) & 0xffff);
    }
    base->part = "baseline";
    change->part = "change";
    nz->part = "noise";
    snprintf(base->group, sizeof(base->group), "%s", group);
    snprintf(change->group, sizeof(change->group), "%s.change", group);
    snprintf(nz->group, sizeof(nz->group), "%s.noise", group);
    base->copies = copies;
    change->copies = change->nargs || change->nenv ? copies : 0;
    nz->copies = noise > 0 ? noise : 0;

    static char nodes[MAX_NODES][64];
    int per = nodes_per_job(cmdc, cmd), n_nodes = 0, most = copies > nz->copies ? copies : nz->copies;
    if (spread) {
        if (per < 0) {
            cli_error("--spread needs a fixed node count", "sbatch -N gives a range", "use -N K with one number");
            return CLI_BAD_INPUT;
        }
        n_nodes = list_nodes(nodes, MAX_NODES, exclude);
        if (n_nodes < 0) {
            cli_error("cannot list the cluster's nodes",
                      exclude ? "sinfo failed, or --exclude is not a node list" : "sinfo failed",
                      "is SLURM_CONF set and slurmctld up? --exclude takes a list such as n3 or n[3-4]");
            return CLI_BAD_INPUT;
        }
        if (most * per > n_nodes) {
            char detail[200];
            snprintf(detail, sizeof(detail), "%d copies x %d nodes each need %d nodes; %d respond%s", most, per,
                     most * per, n_nodes, exclude ? " (besides those excluded)" : "");
            cli_error("not enough nodes to spread the copies apart", detail, "use fewer copies or drop --spread");
            return CLI_BAD_INPUT;
        }
    }

    for (int s = 0; s < 3; s++)
        if (sets[s].copies) {
            int rc = submit(&sets[s], cmdc, cmd, script, spread, nodes, per);
            if (rc)
                return rc;
        }

    const char *server = getenv("LOCKSTEP_SERVER");
    char esc[3][400];
    for (int s = 0; s < 3; s++)
        client_escape(sets[s].group, esc[s], sizeof(esc[s]));
    if (!experiment) {
        printf("twin group %s: %d jobs\n", group, copies);
        for (int c = 0; c < copies; c++)
            printf("  job %s%s%s\n", base->jobs[c], base->placed[c][0] ? " on " : "", base->placed[c]);
        if (server && *server)
            printf("dashboard: %s/#/twins/%s\n", server, esc[0]);
        printf("follow it: lockstep twins %s\n", group);
        return CLI_OK;
    }
    printf("experiment %s: %d jobs\n", group, base->copies + change->copies + nz->copies);
    for (int s = 0; s < 3; s++)
        if (sets[s].copies)
            print_set(&sets[s]);
    char cmp[1200];
    snprintf(cmp, sizeof(cmp), "lockstep compare %s %s%s%s", group, change->copies ? change->group : "CHANGED",
             nz->copies ? " --noise " : "", nz->copies ? nz->group : "");
    if (server && *server)
        printf("dashboard: %s/#/compare?base=%s&changed=%s%s%s\n", server, esc[0], change->copies ? esc[1] : "CHANGED",
               nz->copies ? "&noise=" : "", nz->copies ? esc[2] : "");
    printf("compare it: %s\n", cmp);
    return CLI_OK;
}

static const cli_opt twin_opts[] = {
    {NULL, TW_COPIES, "N", NULL, "how many copies (2 to 64; with --change or --noise: 1 to 64)"},
    {"spread", TW_SPREAD, NULL, NULL, "place the copies on disjoint nodes (sinfo's responding nodes)"},
    {"exclude", TW_EXCLUDE, "NODES", NULL, "with --spread: leave these nodes out (n3, n[3-4])"},
    {"group", TW_GROUP, "NAME", NULL, "the twin group's name (default: twin-DATE-TIME-XXXX, exp-... for experiments)"},
    {"change", TW_CHANGE, "ARG", NULL, "an argument the change's copies add to the script's (GROUP.change)"},
    {"change-env", TW_CHANGE_ENV, "VAR=VALUE", NULL, "a variable the change's copies run with"},
    {"noise", TW_NOISE, "K", NULL, "K noise replicas (2 to 64) of the baseline (GROUP.noise)"},
    {"noise-arg", TW_NOISE_ARG, "ARG", NULL, "the replicas' nondeterministic setting, as an argument"},
    {"noise-env", TW_NOISE_ENV, "VAR=VALUE", NULL, "... or as a variable (e.g. NCCL_ALGO=Tree)"},
    {"noise-mode", TW_NOISE_MODE, "MODE", "fp det", "fp: the replicas run --lockstep=fp (without the det runtime)"},
    {0},
};

const cli_command cli_cmd_twin = {
    .name = "twin",
    .run = cmd_twin,
    .synopsis = "twin -n N [--spread [--exclude NODES]] [--group NAME] -- sbatch ARGS SCRIPT\n"
                "twin -n N [--change ARG]... [--change-env VAR=VALUE]... [--noise K [--noise-arg ARG]...\n"
                "     [--noise-env VAR=VALUE]... [--noise-mode fp]] -- sbatch ARGS SCRIPT",
    .summary = "submit N copies as one twin group (--spread: on disjoint nodes);\n"
               "with --change/--noise: the baseline, the change, K noise replicas",
    .opts = twin_opts,
    .complete = {"@program", "@file", "@file"},
};
