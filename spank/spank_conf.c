/* spank_conf.c - parse plugstack.conf arguments and user option values, and decide a step's mode. */
#include "spank/spank_conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/consensus.h"
#include "common/servers.h"
#include "common/site.h"

void lsp_conf_defaults(lsp_conf *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->agent, sizeof(c->agent), "%s", LSP_DEFAULT_AGENT);
    c->dflt = LSP_MODE_OFF;
    c->enforce = LSP_MODE_OFF;
    c->timeout_ms = 3000;
}

int lsp_mode_parse(const char *s, lsp_mode *out)
{
    if (!s || !*s || !strcasecmp(s, "fp"))
        *out = LSP_MODE_FP;
    else if (!strcasecmp(s, "off"))
        *out = LSP_MODE_OFF;
    else if (!strcasecmp(s, "det"))
        *out = LSP_MODE_DET;
    else if (!strcasecmp(s, "consensus"))
        *out = LSP_MODE_CONSENSUS;
    else
        return -1;
    return 0;
}

const char *lsp_mode_name(lsp_mode m)
{
    switch (m) {
    case LSP_MODE_FP: return "fp";
    case LSP_MODE_DET: return "det";
    case LSP_MODE_CONSENSUS: return "consensus";
    default: return "off";
    }
}

int lsp_twin_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255)
        return -1;
    for (const char *p = s; *p; p++) {
        char ch = *p;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
            continue;
        if (!strchr("._-:/@+", ch))
            return -1;
    }
    return 0;
}

/* set_str - copy `val` into `dst` (capacity `cap`); -1 when it does not fit or is empty. */
static int set_str(char *dst, size_t cap, const char *val)
{
    size_t n = strlen(val);
    if (n == 0 || n >= cap)
        return -1;
    memcpy(dst, val, n + 1);
    return 0;
}

/* set_int - `val`, a whole number in lo..hi, into *dst; -1 (dst untouched) when it is not one. */
static int set_int(int *dst, const char *val, long lo, long hi)
{
    char *end;
    errno = 0;
    long n = strtol(val, &end, 10);
    if (errno || *end || end == val || n < lo || n > hi)
        return -1;
    *dst = (int)n;
    return 0;
}

int lsp_conf_parse(lsp_conf *c, int ac, char **av, char *why, size_t cap)
{
    int rv = 0;
    for (int i = 0; i < ac; i++) {
        const char *a = av[i];
        const char *eq = strchr(a, '=');
        if (!eq) {
            snprintf(why, cap,
                     "plugstack argument '%s' has no value; write it as key=value "
                     "(server, secret, agent, default, enforce, spool, stream, relay, consensus_every, timeout_ms, "
                     "ignore, secret_vars)",
                     a);
            rv = -1;
            continue;
        }
        size_t klen = (size_t)(eq - a);
        const char *v = eq + 1;
        int bad = 0;
        if (klen == 6 && !strncmp(a, "server", 6)) {
            server_list list;
            char lwhy[300];
            bad = servers_parse(v, &list, lwhy, sizeof(lwhy)) < 0;
            bad = bad || set_str(c->server, sizeof(c->server), v);
            /* The agent appends /api/v1/...: drop a trailing slash. */
            size_t n = strlen(c->server);
            while (!bad && n > 0 && c->server[n - 1] == '/')
                c->server[--n] = 0;
        } else if (klen == 6 && !strncmp(a, "secret", 6)) {
            bad = v[0] != '/' || set_str(c->secret, sizeof(c->secret), v);
        } else if (klen == 5 && !strncmp(a, "agent", 5)) {
            bad = v[0] != '/' || set_str(c->agent, sizeof(c->agent), v);
        } else if (klen == 5 && !strncmp(a, "spool", 5)) {
            bad = v[0] != '/' || set_str(c->spool, sizeof(c->spool), v);
        } else if (klen == 5 &&
                   !strncmp(a, "relay", 5)) { /* room left for "/lockstep-relay.JOB.STEP" in a socket path */
            bad = v[0] != '/' || strlen(v) > 48 || set_str(c->relay, sizeof(c->relay), v);
        } else if (klen == 7 && !strncmp(a, "default", 7)) {
            bad = !*v || lsp_mode_parse(v, &c->dflt);
        } else if (klen == 7 && !strncmp(a, "enforce", 7)) {
            bad = !*v || lsp_mode_parse(v, &c->enforce);
        } else if (klen == 6 && !strncmp(a, "ignore", 6)) {
            site_patterns p;
            char pwhy[600];
            if (strlen(v) >= sizeof(c->ignore) || site_patterns_parse(v, &p, pwhy, sizeof(pwhy)) < 0) {
                snprintf(why, cap,
                         "invalid plugstack argument '%s': %s; ignore= takes glob patterns separated by "
                         "commas, e.g. ignore=report_timings,MPI_Wtime",
                         a, strlen(v) >= sizeof(c->ignore) ? "too long" : pwhy);
                rv = -1;
                continue;
            }
            snprintf(c->ignore, sizeof(c->ignore), "%s", v);
        } else if (klen == 11 && !strncmp(a, "secret_vars", 11)) {
            site_patterns p;
            char pwhy[600];
            if (strlen(v) >= sizeof(c->secret_vars) || site_patterns_parse(v, &p, pwhy, sizeof(pwhy)) < 0 || !p.n) {
                snprintf(why, cap,
                         "invalid plugstack argument '%s': %s; secret_vars= takes glob patterns of "
                         "variable names separated by commas, e.g. secret_vars=NCCL_IB_PKEY,SITE_LICENSE*",
                         a,
                         strlen(v) >= sizeof(c->secret_vars) ? "too long"
                         : !*v                               ? "empty"
                                                             : pwhy);
                rv = -1;
                continue;
            }
            snprintf(c->secret_vars, sizeof(c->secret_vars), "%s", v);
        } else if (klen == 6 && !strncmp(a, "stream", 6)) {
            bad = (strcmp(v, "records") && strcmp(v, "digests")) || set_str(c->stream, sizeof(c->stream), v);
        } else if (klen == 15 && !strncmp(a, "consensus_every", 15)) {
            bad = set_int(&c->consensus_every, v, 1, CONS_EVERY_MAX);
        } else if (klen == 10 && !strncmp(a, "timeout_ms", 10)) {
            bad = set_int(&c->timeout_ms, v, 1, 60000);
        } else {
            snprintf(why, cap,
                     "unknown plugstack argument '%s'; known: server=URL secret=FILE agent=PATH "
                     "default=off|consensus|fp|det enforce=off|consensus|fp|det spool=DIR stream=records|digests "
                     "relay=DIR consensus_every=N timeout_ms=N "
                     "ignore=GLOB[,GLOB...] secret_vars=GLOB[,GLOB...]",
                     a);
            rv = -1;
            continue;
        }
        if (bad) {
            snprintf(why, cap,
                     "invalid plugstack argument '%s'; server wants an http(s):// URL (or several, separated by "
                     "commas), secret, "
                     "agent and spool an absolute path, relay an absolute path of at most 48 bytes, default and "
                     "enforce off|consensus|fp|det, "
                     "stream records|digests, consensus_every 1-1000000, timeout_ms 1-60000",
                     a);
            rv = -1;
        }
    }
    return rv;
}

lsp_mode lsp_effective_mode(const lsp_conf *c, const lsp_request *r)
{
    lsp_mode m = r->mode_set ? r->mode : c->dflt;
    return m < c->enforce ? c->enforce : m;
}
