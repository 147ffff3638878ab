/* spank_env.c - pure helpers for the job environment: LD_PRELOAD joining, exit codes, command lines. */
#include "spank/spank_env.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

/* has_entry - 1 when `agent` is one of the ':'- or blank-separated entries of `list`. */
static int has_entry(const char *list, const char *agent)
{
    size_t alen = strlen(agent);
    const char *p = list;
    while (*p) {
        while (*p == ':' || *p == ' ' || *p == '\t')
            p++;
        const char *e = p;
        while (*e && *e != ':' && *e != ' ' && *e != '\t')
            e++;
        if ((size_t)(e - p) == alen && alen && !memcmp(p, agent, alen))
            return 1;
        p = e;
    }
    return 0;
}

int lsp_preload_join(const char *cur, const char *agent, char *out, size_t cap)
{
    size_t len = 0;
    if (!cap)
        return -1;
    out[0] = 0;
    if (cur && *cur) {
        int n = snprintf(out, cap, "%s", cur);
        if (n < 0 || (size_t)n >= cap)
            return -1;
        len = (size_t)n;
    }
    /* Each ':'-separated library of `agent`, unless the user's list has it. */
    const char *p = agent;
    while (*p) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char one[4096];
        if (n >= sizeof(one))
            return -1;
        memcpy(one, p, n);
        one[n] = 0;
        if (n && !has_entry(out, one)) {
            int w = snprintf(out + len, cap - len, "%s%s", len ? ":" : "", one);
            if (w < 0 || (size_t)w >= cap - len)
                return -1;
            len += (size_t)w;
        }
        p += n + (e ? 1 : 0);
    }
    return 0;
}

int lsp_exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return status;
}

size_t lsp_argv_join(int argc, char **argv, char *out, size_t cap)
{
    size_t len = 0;
    if (!cap)
        return 0;
    out[0] = 0;
    for (int i = 0; i < argc && argv && argv[i]; i++) {
        int n = snprintf(out + len, cap - len, "%s%s", i ? " " : "", argv[i]);
        if (n < 0 || (size_t)n >= cap - len) {
            len = cap - 1;
            out[len] = 0;
            break;
        }
        len += (size_t)n;
    }
    return len;
}
