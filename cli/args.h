/* args.h - the lockstep command's arguments: each subcommand's options as a table, parsed by getopt_long, with
 * the global options accepted before or after the subcommand; usage and bash completion come from the same tables
 * (cli/usage.c, cli/completion.c). Tested by tests/unit/test_cli_args.c. */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <stdio.h>

/* Keys of options that have no short letter start here; the global options use keys from CLI_KEY_GLOBAL. */
#define CLI_KEY_LONG 256
#define CLI_KEY_GLOBAL 0x1000

/* One option of a command. */
typedef struct cli_opt {
    const char *name;     /* the long name without "--", or NULL for a short-only option */
    int key;              /* the short letter ('n' for -n), or a key >= CLI_KEY_LONG for a long-only option */
    const char *arg;      /* the value's name in usage ("N", "FILE"), NULL for a switch */
    const char *complete; /* how bash completes the value: "@file", "@dir", or words separated by spaces; NULL */
    const char *help;     /* one line for `lockstep COMMAND --help` */
} cli_opt;

/* The global options a command takes (cli_command.globals). */
enum {
    CLI_G_SERVER = 1, /* --server URL, --token-file F, --token T, --ca-file F: where lockstepd is, and the token */
    CLI_G_JSON = 2,   /* --json: print JSON */
};

/* The global options as given, before or after the subcommand (the later wins); NULL / 0 when not given. */
typedef struct cli_globals {
    const char *server, *token, *token_file, *ca_file;
    int json;
} cli_globals;

typedef struct cli_args cli_args;

/* One subcommand: its name, what it does, how it is called, its options. */
typedef struct cli_command {
    const char *name;
    int (*run)(const cli_args *a);
    const char *synopsis;    /* its usage, one line per form, each without the leading "lockstep " */
    const char *summary;     /* what it does, for `lockstep help` (lines separated by '\n') */
    const cli_opt *opts;     /* its own options, ended by an entry whose name and key are 0; may be NULL */
    unsigned globals;        /* the CLI_G_* it takes */
    const char *complete[3]; /* how bash completes its 1st, 2nd, 3rd and later positional arguments (as .complete) */
} cli_command;

/* One option as given on the command line. */
typedef struct cli_given {
    const cli_opt *opt;
    const char *value; /* NULL for a switch */
} cli_given;

/* A parsed command line. */
struct cli_args {
    const cli_command *cmd;
    cli_globals g;
    char **pos; /* the positional arguments in order, those after "--" included (borrowed from argv) */
    int npos;
    int ndash;        /* how many positional arguments came before "--" (npos when there was none) */
    cli_given *given; /* the command's own options in the order given */
    int ngiven;
    int help; /* --help or -h was given: print the command's usage instead of running it */
};

/* cli_globals_parse - the global options before the subcommand (argv[1..]), and --help / --version there.
 * Returns the index of the subcommand in argv (argc when there is none) with *g, *help and *version set, or -1
 * after printing the error. */
int cli_globals_parse(int argc, char **argv, cli_globals *g, int *help, int *version);

/* cli_args_parse - the command line of command `cmd`: argv[0] is the subcommand, argv[1..] its arguments,
 * `before` the global options given ahead of it. Options may come before, between or after the positional
 * arguments, as --opt value, --opt=value or -o value; "--" ends them. A word that is a negative number is a
 * positional argument. A global option the command does not take is refused. Returns 0 with *a filled (release
 * it with cli_args_release), or CLI_BAD_INPUT after printing the error with the command's usage. */
int cli_args_parse(const cli_command *cmd, int argc, char **argv, const cli_globals *before, cli_args *a);

/* cli_args_release - free what cli_args_parse allocated (argv's strings are borrowed, never freed). */
void cli_args_release(cli_args *a);

/* cli_args_last - the value of the last `key` option given (NULL when it was not, or it is a switch). */
const char *cli_args_last(const cli_args *a, int key);

/* cli_args_count - how many times option `key` was given. */
int cli_args_count(const cli_args *a, int key);

/* cli_args_fail - print the formatted fact with the command's usage as hint, and return CLI_BAD_INPUT. */
int cli_args_fail(const cli_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cli_usage_hint - "usage: lockstep SYNOPSIS (lockstep CMD --help)" of `cmd`'s first form, into `out`. */
const char *cli_usage_hint(const cli_command *cmd, char *out, size_t cap);

/* cli_takes_global - 1 when `cmd` (NULL: before any command) takes global option `o` (one of cli_global_opts) and
 * has no option of its own by that name. */
int cli_takes_global(const cli_command *cmd, const cli_opt *o);

/* The global options, as the usage and the completion show them (ended by a zero entry). */
extern const cli_opt cli_global_opts[];

#endif /* CLI_ARGS_H */
