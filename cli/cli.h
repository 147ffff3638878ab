/* cli.h - what the lockstep command's subcommands share: entry points, exit codes, error output. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

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

int cmd_fp(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_twins(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_manifest_diff(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_twin(int argc, char **argv);
int cmd_nodes(int argc, char **argv);
int cmd_node(int argc, char **argv);
int cmd_alerts(int argc, char **argv);
int cmd_narrow(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);

#endif /* CLI_CLI_H */
