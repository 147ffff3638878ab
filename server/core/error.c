/* error.c - filling a user-facing error (server/core/error.h). */
#include "server/core/error.h"

#include <stdio.h>
#include <string.h>

int srv_error_set(srv_error *e, const char *error, const char *detail, const char *hint)
{
    e->status = 0;
    snprintf(e->error, sizeof(e->error), "%s", error ? error : "");
    snprintf(e->detail, sizeof(e->detail), "%s", detail ? detail : "");
    snprintf(e->hint, sizeof(e->hint), "%s", hint ? hint : "");
    size_t n = strlen(e->detail);
    while (n && (e->detail[n - 1] == '\n' || e->detail[n - 1] == ' '))
        e->detail[--n] = 0;
    return -1;
}
