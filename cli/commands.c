/* commands.c - the lockstep command's table of subcommands: what `lockstep help`, dispatch and completion walk. */
#include <string.h>

#include "cli/cli.h"

const cli_command *const cli_commands[] = {
    &cli_cmd_fp,      &cli_cmd_dump,          &cli_cmd_diff, &cli_cmd_runs,    &cli_cmd_run,    &cli_cmd_twins,
    &cli_cmd_job,     &cli_cmd_manifest_diff, &cli_cmd_twin, &cli_cmd_compare, &cli_cmd_narrow, &cli_cmd_checkpoint,
    &cli_cmd_replay,  &cli_cmd_nodes,         &cli_cmd_node, &cli_cmd_alerts,  &cli_cmd_token,  &cli_cmd_help,
    &cli_cmd_version, &cli_cmd_completion,    NULL,
};

const cli_command *cli_command_find(const char *name)
{
    for (const cli_command *const *c = cli_commands; *c; c++)
        if (!strcmp((*c)->name, name))
            return *c;
    return NULL;
}
