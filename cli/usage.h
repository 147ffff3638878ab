/* usage.h - the lockstep command's help: the overview, one command's usage, the version (from cli/args.h's tables). */
#ifndef CLI_USAGE_H
#define CLI_USAGE_H

#include <stdio.h>

#include "cli/args.h"

/* cli_help_print - the overview `lockstep help` prints: every command, the global options, the exit codes. */
void cli_help_print(FILE *out);

/* cli_usage_print - the usage `lockstep COMMAND --help` prints: its forms, what it does, its options and the global
 * options it takes. */
void cli_usage_print(const cli_command *cmd, FILE *out);

/* cli_version_print - "lockstep RELEASE (commit COMMIT)". Returns CLI_OK. */
int cli_version_print(FILE *out);

#endif /* CLI_USAGE_H */
