/* proc.h - run a program from the lockstep command and capture what it prints. */
#ifndef CLI_PROC_H
#define CLI_PROC_H

#include <stddef.h>

/* proc_run - run argv[0] (searched in PATH) with `argv`, its stdout captured
 * into `out` (NUL-terminated, cut at `cap`), stderr passed through. Returns
 * the exit status (128+signal when killed), or -1 when it cannot start. */
int proc_run(char *const *argv, char *out, size_t cap);

/* proc_run_env - proc_run with the environment `envp` (NULL: this process's), and with `with_stderr` its
 * stderr captured into `out` too (interleaved with stdout). */
int proc_run_env(char *const *argv, char *const *envp, int with_stderr, char *out, size_t cap);

/* proc_run_input - proc_run_env (stderr captured too) with the `len` bytes at `input` as the program's standard
 * input (a file in memory, read from its start). Returns as proc_run. */
int proc_run_input(char *const *argv, char *const *envp, const char *input, size_t len, char *out, size_t cap);

#endif /* CLI_PROC_H */
