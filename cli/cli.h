/* cli.h - what the lockstep command's subcommands share: the command table, exit codes, error output. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include "cli/args.h"

/* Exit codes of every subcommand (documented in `lockstep help`). */
enum cli_exit {
    CLI_OK = 0,        /* success; for diff and twins: the runs match */
    CLI_DIVERGED = 1,  /* diff, twins: the runs do not match (they diverged, or nothing comparable: incomplete) */
    CLI_BAD_INPUT = 2, /* unreadable input, bad usage */
    CLI_PENDING = 5,   /* twins: not decided yet (runs still running, or a twin still missing) */
};

/* cli_error - print "lockstep: FACT" and, when given, indented detail and
 * hint lines, on stderr. */
void cli_error(const char *fact, const char *detail, const char *hint);

/* cli_errorf - cli_error with a formatted fact. */
void cli_errorf(const char *hint, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The subcommands, in the order `lockstep help` lists them (cli/commands.c), ended by NULL. */
extern const cli_command *const cli_commands[];

/* cli_command_find - the subcommand called `name`, or NULL. */
const cli_command *cli_command_find(const char *name);

extern const cli_command cli_cmd_fp, cli_cmd_dump, cli_cmd_diff, cli_cmd_runs, cli_cmd_run, cli_cmd_twins, cli_cmd_job,
    cli_cmd_manifest_diff, cli_cmd_twin, cli_cmd_compare, cli_cmd_narrow, cli_cmd_checkpoint, cli_cmd_replay,
    cli_cmd_nodes, cli_cmd_node, cli_cmd_alerts, cli_cmd_token, cli_cmd_help, cli_cmd_version, cli_cmd_completion;

#endif /* CLI_CLI_H */
