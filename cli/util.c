/* util.c - error output shared by the lockstep subcommands. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>

void cli_error(const char *fact, const char *detail, const char *hint)
{
    fprintf(stderr, "lockstep: %s\n", fact);
    if (detail && *detail)
        fprintf(stderr, "  detail: %s\n", detail);
    if (hint && *hint)
        fprintf(stderr, "  hint: %s\n", hint);
}

void cli_errorf(const char *hint, const char *fmt, ...)
{
    char fact[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fact, sizeof(fact), fmt, ap);
    va_end(ap);
    cli_error(fact, NULL, hint);
}
