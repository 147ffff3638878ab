/* main.c - the lockstep command: dispatch to subcommands, and help. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/version.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *usage;
} cmds[] = {
    {"fp", cmd_fp, "fp [-r] [-j N] FILE|DIR...  LSFP-1 of each file ('-' reads stdin), like sha256sum;\n"
                   "                        -r: every file under DIR (a checkpoint manifest)\n"
                   "  fp --check MANIFEST    recompute a manifest's fingerprints, like sha256sum -c"},
    {"dump", cmd_dump, "dump TRACE            a trace file's records as JSON lines\n"
                       "  dump --logical DIR    a run's logical tensors, its shards combined across ranks"},
    {"diff", cmd_diff, "diff [--json] [--overlap] [--logical] A B\n"
                       "                        compare two runs' trace directories (or files); --logical: their\n"
                       "                        logical tensors, whatever their rank counts"},
    {"runs", cmd_runs, "runs [--user U] [--job J] [--group G] [--status S] [--node N] [--limit N]\n"
                       "                        list runs on the server"},
    {"run", cmd_run, "run RUN_ID             one run: job, ranks, nodes, manifests"},
    {"twins", cmd_twins, "twins [GROUP]         without GROUP: the twin groups, newest first (--status S --user U\n"
                         "                        --node N --since DAY --limit N --cursor C); with it: its status and\n"
                         "                        classification, runs, first divergence (cause, call site), per rank"},
    {"job", cmd_job, "job JOBID [--summary]  a Slurm job's outcome: every step's run and its twin group's status\n"
                     "                        (--summary: one line, as the slurmctld epilog writes it to AdminComment)"},
    {"manifest-diff", cmd_manifest_diff, "manifest-diff GROUP   what differs between the twins' manifests"},
    {"twin", cmd_twin, "twin -n N [--spread [--exclude NODES]] [--group NAME] [--change ARG] [--noise K --noise-arg ARG]\n"
                       "                        -- sbatch ARGS SCRIPT\n"
                       "                        submit N copies as one twin group (--spread: on disjoint nodes);\n"
                       "                        with --change/--noise: the baseline, the change, K noise replicas"},
    {"compare", cmd_compare, "compare BASE CHANGED [--noise NOISE] [--rank R] [--from S] [--to S] [--alpha A]\n"
                             "                        the effect of a change against the run-to-run noise band"},
    {"narrow", cmd_narrow, "narrow GROUP [--level modules|ops] [--window K] [--placements N] [--show [ID]]\n"
                           "                        replay a diverged group's window on chosen nodes: software,\n"
                           "                        persistent or transient hardware (admin token)"},
    {"checkpoint", cmd_checkpoint, "checkpoint STEP [PATH]  declare, from inside a job, a checkpoint it wrote"},
    {"replay", cmd_replay, "replay [--server URL] DIR  send what agents left in a spool directory to lockstepd"},
    {"nodes", cmd_nodes, "nodes                 nodes and GPUs with their suspect scores and states"},
    {"node", cmd_node, "node NAME [drain|repair|note REASON]\n"
                       "                        a node's defect history; admin actions"},
    {"alerts", cmd_alerts, "alerts [ack ID]       alerts and their deliveries; acknowledge one (admin)"},
    {"token", cmd_token, "token JOB [--secret FILE]\n"
                         "                        a job's ingest token (admin: from the site secret or the server)"},
};

static void help(FILE *out)
{
    fprintf(out, "usage: lockstep COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        fprintf(out, "  %s\n", cmds[i].usage);
    fprintf(out, "  help                  this text\n"
                 "  version               the release and commit of this lockstep (also --version)\n\n"
                 "server commands take --server URL (else LOCKSTEP_SERVER, else 'server = URL' in\n"
                 "~/.config/lockstep/config), --json, and the admin token from ~/.config/lockstep/admin-token\n"
                 "(yours, mode 0600), or --token-file F (else LOCKSTEP_ADMIN_TOKEN_FILE).\n\n"
                 "exit codes:\n"
                 "  0  success (diff, twins GROUP: the runs match; job: none of its twin groups failed to match;\n"
                 "     compare: identical or within noise)\n"
                 "  1  diff, twins GROUP, job: the runs do not match (diverged, or incomplete: failed runs or\n"
                 "     nothing in common); compare: beyond noise (or differs without NOISE, or undetermined)\n"
                 "  2  unreadable input, bad usage, or no such run/group\n"
                 "  3  the server could not be reached\n"
                 "  4  the server answered with an error\n"
                 "  5  twins: not decided yet (pending)\n"
                 "narrow: 0 a verdict (software, persistent-hardware, transient-hardware), 1 inconclusive\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        help(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_BAD_INPUT : CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("lockstep %s (commit %s)\n", version_release(), version_commit());
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            return cmds[i].fn(argc - 1, argv + 1);
    cli_errorf("run 'lockstep help' for the list of commands", "unknown command '%s'", argv[1]);
    return CLI_BAD_INPUT;
}
