/* usage.c - the lockstep command's help text, made from the command table: the overview, a command's usage, the
 * version; and the `help` and `version` subcommands. */
#include "cli/usage.h"

#include <string.h>

#include "cli/cli.h"
#include "common/version.h"

#define USAGE_COL 24 /* where descriptions start */

static const char EXIT_CODES[] =
    "exit codes:\n"
    "  0  success (diff, twins GROUP: the runs match; job: none of its twin groups failed to match;\n"
    "     compare: identical or within noise)\n"
    "  1  diff, twins GROUP, job: the runs do not match (diverged, or incomplete: failed runs or\n"
    "     nothing in common); compare: beyond noise (or differs without NOISE, or undetermined)\n"
    "  2  unreadable input, bad usage, or no such run/group\n"
    "  3  the server could not be reached\n"
    "  4  the server answered with an error\n"
    "  5  twins: not decided yet (pending)\n"
    "narrow: 0 a verdict (software, persistent-hardware, transient-hardware), 1 inconclusive\n";

/* print_lines - each line of `text` indented by `indent` spaces. */
static void print_lines(FILE *out, const char *text, int indent)
{
    for (const char *l = text; l && *l;) {
        size_t n = strcspn(l, "\n");
        fprintf(out, "%*s%.*s\n", indent, "", (int)n, l);
        l += n + (l[n] == '\n');
    }
}

/* print_entry - "  LEFT  TEXT": TEXT from column USAGE_COL, below LEFT when it does not fit beside it. */
static void print_entry(FILE *out, const char *left, const char *text)
{
    size_t tn = strcspn(text ? text : "", "\n");
    if (strlen(left) + 4 <= USAGE_COL) {
        fprintf(out, "  %-*s%.*s\n", USAGE_COL - 2, left, (int)tn, text ? text : "");
    } else {
        fprintf(out, "  %s\n", left);
        if (tn)
            fprintf(out, "%*s%.*s\n", USAGE_COL, "", (int)tn, text);
    }
    if (text && text[tn])
        print_lines(out, text + tn + 1, USAGE_COL);
}

/* opt_left - "-k, --name ARG" of an option, into `out`. */
static const char *opt_left(const cli_opt *o, char *out, size_t cap)
{
    size_t n = 0;
    if (o->key < CLI_KEY_LONG)
        n += (size_t)snprintf(out, cap, "-%c%s", o->key, o->name ? ", " : o->arg ? " " : "");
    if (o->name && n < cap)
        n += (size_t)snprintf(out + n, cap - n, "--%s%s", o->name, o->arg ? " " : "");
    if (o->arg && n < cap)
        snprintf(out + n, cap - n, "%s", o->arg);
    return out;
}

void cli_help_print(FILE *out)
{
    fprintf(out, "usage: lockstep [GLOBAL OPTIONS] COMMAND [ARGS]\n\ncommands:\n");
    for (const cli_command *const *c = cli_commands; *c; c++) {
        const char *s = (*c)->synopsis;
        size_t n = strcspn(s, "\n");
        char first[300];
        snprintf(first, sizeof(first), "%.*s", (int)n, s);
        if (!s[n]) {
            print_entry(out, first, (*c)->summary);
            continue;
        }
        /* several forms: each on its own line, then what the command does */
        for (const char *l = s; *l;) {
            size_t k = strcspn(l, "\n");
            fprintf(out, "  %.*s\n", (int)k, l);
            l += k + (l[k] == '\n');
        }
        print_lines(out, (*c)->summary, USAGE_COL);
    }
    fprintf(out, "\nglobal options, before or after the command (those of the server commands):\n");
    char left[120];
    for (const cli_opt *o = cli_global_opts; o->name; o++)
        print_entry(out, opt_left(o, left, sizeof(left)), o->help);
    print_entry(out, "-h, --help", "this text; a command's usage: lockstep COMMAND --help, lockstep help COMMAND");
    print_entry(out, "--version", "the release and commit of this lockstep");
    fprintf(out, "\nThe admin token is read from ~/.config/lockstep/admin-token (yours, mode 0600) unless\n"
                 "--token-file F or LOCKSTEP_ADMIN_TOKEN_FILE names another file. docs/cli.md has every command.\n\n");
    fputs(EXIT_CODES, out);
}

void cli_usage_print(const cli_command *cmd, FILE *out)
{
    int first = 1;
    for (const char *l = cmd->synopsis; *l; first = 0) { /* a line that starts with a blank continues the form */
        size_t k = strcspn(l, "\n");
        if (*l == ' ')
            fprintf(out, "%16s%.*s\n", "", (int)k, l);
        else
            fprintf(out, "%s lockstep %.*s\n", first ? "usage:" : "      ", (int)k, l);
        l += k + (l[k] == '\n');
    }
    fprintf(out, "\n");
    print_lines(out, cmd->summary, 0);
    char left[120];
    if (cmd->opts && (cmd->opts[0].name || cmd->opts[0].key)) {
        fprintf(out, "\noptions:\n");
        for (const cli_opt *o = cmd->opts; o->name || o->key; o++)
            print_entry(out, opt_left(o, left, sizeof(left)), o->help);
    }
    if (cmd->globals) {
        fprintf(out, "\nglobal options (before or after %s):\n", cmd->name);
        for (const cli_opt *o = cli_global_opts; o->name; o++)
            if (cli_takes_global(cmd, o))
                print_entry(out, opt_left(o, left, sizeof(left)), o->help);
    }
    fprintf(out, "\nexit codes, and every command: lockstep help\n");
}

int cli_version_print(FILE *out)
{
    fprintf(out, "lockstep %s (commit %s)\n", version_release(), version_commit());
    return CLI_OK;
}

/* cmd_help - `lockstep help [COMMAND]`. */
static int cmd_help(const cli_args *a)
{
    if (a->npos == 0) {
        cli_help_print(stdout);
        return CLI_OK;
    }
    if (a->npos > 1)
        return cli_args_fail(a, "help takes one command");
    const cli_command *c = cli_command_find(a->pos[0]);
    if (!c) {
        cli_errorf("run 'lockstep help' for the list of commands", "unknown command '%s'", a->pos[0]);
        return CLI_BAD_INPUT;
    }
    cli_usage_print(c, stdout);
    return CLI_OK;
}

/* cmd_version - `lockstep version`. */
static int cmd_version(const cli_args *a)
{
    if (a->npos)
        return cli_args_fail(a, "version takes no arguments");
    return cli_version_print(stdout);
}

const cli_command cli_cmd_help = {
    .name = "help",
    .run = cmd_help,
    .synopsis = "help [COMMAND]",
    .summary = "every command (this text), or one command's usage (also lockstep COMMAND --help)",
    .complete = {"@subcommand"},
};

const cli_command cli_cmd_version = {
    .name = "version",
    .run = cmd_version,
    .synopsis = "version",
    .summary = "the release and commit of this lockstep (also lockstep --version)",
};
