/* completion.h - the bash completion script of the lockstep command, written from its tables (cli/args.h). */
#ifndef CLI_COMPLETION_H
#define CLI_COMPLETION_H

#include <stdio.h>

/* cli_completion_bash - write the bash completion script to `out`: every command, its options, how each option's
 * value and each positional argument completes. Returns CLI_OK, or CLI_BAD_INPUT when `out` could not be written. */
int cli_completion_bash(FILE *out);

#endif /* CLI_COMPLETION_H */
