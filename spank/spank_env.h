/* spank_env.h - small pure helpers for the job environment: LD_PRELOAD, exit codes, command lines. */
#ifndef SPANK_SPANK_ENV_H
#define SPANK_SPANK_ENV_H

#include <stddef.h>

/* lsp_preload_join - the LD_PRELOAD value with the libraries of `agent`
 * (one path, or several separated by ':') appended to the user's `cur` (NULL
 * or "" when unset). The user's entries are kept as they are, in their
 * order; a library already among them (separated by ':' or blanks) is not
 * added twice. Returns 0, or -1 when the result does not fit in `cap`. */
int lsp_preload_join(const char *cur, const char *agent, char *out, size_t cap);

/* lsp_exit_code - a shell-style exit code from a wait(2) status: the exit
 * status, or 128 + signal number for a task killed by a signal. */
int lsp_exit_code(int status);

/* lsp_argv_join - argv joined by single spaces into `out`, truncated to
 * cap-1 bytes (on a character boundary of the input). Returns the length. */
size_t lsp_argv_join(int argc, char **argv, char *out, size_t cap);

#endif /* SPANK_SPANK_ENV_H */
