/* main.c - the lockstep command: the global options, then dispatch to a subcommand (or its usage). */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/usage.h"

int main(int argc, char **argv)
{
    cli_globals g;
    int help, version;
    int at = cli_globals_parse(argc, argv, &g, &help, &version);
    if (at < 0)
        return CLI_BAD_INPUT;
    if (version)
        return cli_version_print(stdout);
    if (at >= argc) { /* `lockstep --help` asks for the overview; a bare `lockstep` gets it as an error */
        cli_help_print(help ? stdout : stderr);
        return help ? CLI_OK : CLI_BAD_INPUT;
    }
    const cli_command *cmd = cli_command_find(argv[at]);
    if (!cmd) {
        cli_errorf("run 'lockstep help' for the list of commands", "unknown command '%s'", argv[at]);
        return CLI_BAD_INPUT;
    }
    cli_args a;
    int rc = cli_args_parse(cmd, argc - at, argv + at, &g, &a);
    if (rc)
        return rc;
    if (help || a.help) {
        cli_usage_print(cmd, stdout);
        rc = CLI_OK;
    } else {
        rc = cmd->run(&a);
    }
    cli_args_release(&a);
    return rc;
}
