/* xalloc.c - lockstepd's aborting allocator and Jansson's allocation hooks (server/core/xalloc.h). */
#include "server/core/xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noreturn)) static void out_of_memory(size_t n)
{
    /* No allocation here: write(2) straight to stderr. */
    char line[96];
    int len = snprintf(line, sizeof(line), "lockstepd: out of memory (asked for %zu bytes); aborting\n", n);
    if (len > 0 && write(2, line, (size_t)len) < 0)
        abort();
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        out_of_memory(n * size);
    return p;
}

void *xrealloc(void *old, size_t n)
{
    void *p = realloc(old, n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

void xalloc_init(void)
{
    json_set_alloc_funcs(xmalloc, free);
}
