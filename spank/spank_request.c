/* spank_request.c - the user's request: --lockstep* options and SLURM_LOCKSTEP* variables, checked and read. */
#include "spank/spank_request.h"

#include <stdio.h>
#include <string.h>

#include "common/site.h"
#include "common/tracespec.h"
#include "common/wire.h"

/* How the user writes each request (by LSP_OPT_*): the option, and the variable that stands for it. */
static const char *const OPT_NAME[] = {
    NULL, "--lockstep", "--lockstep-twin", "--lockstep-trace", "--lockstep-ignore", "--lockstep-resume"};
static const char *const ENV_NAME[] = {NULL,
                                       "SLURM_LOCKSTEP",
                                       "SLURM_LOCKSTEP_TWIN",
                                       "SLURM_LOCKSTEP_TRACE",
                                       "SLURM_LOCKSTEP_IGNORE",
                                       "SLURM_LOCKSTEP_RESUME"};

int lsp_request_check(int which, const char *value, const char *from, char *why, size_t cap)
{
    lsp_mode m;
    trace_spec ts;
    char tw[256];
    if (which < LSP_OPT_MODE || which > LSP_OPT_RESUME) {
        snprintf(why, cap, "unknown option");
        return -1;
    }
    const char *as = from ? from : OPT_NAME[which]; /* as the user wrote it */
    switch (which) {
    case LSP_OPT_MODE:
        if (lsp_mode_parse(value, &m)) {
            snprintf(why, cap, "%s=%s is not a mode; use %s=off, consensus, fp or det", as, value, as);
            return -1;
        }
        return 0;
    case LSP_OPT_TWIN:
        if (!value || lsp_twin_valid(value)) {
            snprintf(why, cap, "%s=%s is not a twin group name; use 1-255 letters, digits and . _ - : / @ +", as,
                     value ? value : "");
            return -1;
        }
        return 0;
    case LSP_OPT_TRACE:
        if (!value || !*value || strlen(value) >= 512 || ts_parse(value, &ts, tw, sizeof(tw))) {
            snprintf(why, cap, "%s=%s is not a trace spec (%s); e.g. %s='metrics;ops:steps=120-125:ranks=0'", as,
                     value ? value : "", value && *value ? tw : "empty", as);
            return -1;
        }
        return 0;
    case LSP_OPT_IGNORE: {
        site_patterns p;
        char pwhy[600];
        if (!value || strlen(value) >= sizeof(((lsp_request *)0)->ignore) ||
            site_patterns_parse(value, &p, pwhy, sizeof(pwhy))) {
            snprintf(why, cap,
                     "%s=%.200s is not a list of patterns (%s); give glob patterns separated by commas, matched "
                     "against record names and the functions of their call sites, e.g. "
                     "%s=report_timings,'Solver::finish*'",
                     as, value ? value : "",
                     !value                  ? "no value"
                     : strlen(value) >= 2048 ? "too long"
                                             : pwhy,
                     as);
            return -1;
        }
        return 0;
    }
    default: { /* LSP_OPT_RESUME */
        char rwhy[300];
        if (!value || wire_resume_check(value, rwhy, sizeof(rwhy))) {
            snprintf(why, cap,
                     "%s=%.200s is not a resume template (%s); give the command that resumes from a checkpoint, "
                     "e.g. %s='train.py --resume /ckpt/step-{step} --max-steps {stop}'",
                     as, value ? value : "", value ? rwhy : "no value", as);
            return -1;
        }
        return 0;
    }
    }
}

/* read_one - request `which`: its option, else its variable, into *out (a bare option's value is NULL) and, when
 * it came from the variable, its name into *from (else NULL). Returns 1 when given, 0 when not, -1 when the
 * variable could not be read (too long for `cap`). */
static int read_one(const lsp_glue_ops *ops, int which, char *buf, size_t cap, const char **out, const char **from)
{
    const char *v = NULL;
    *from = NULL;
    if (ops->option(ops->ctx, which, &v)) {
        *out = v;
        return 1;
    }
    int g = ops->get(ops->ctx, ENV_NAME[which], buf, cap);
    if (g == 1) {
        *out = buf;
        *from = ENV_NAME[which];
    }
    return g;
}

/* unreadable - the reason for a variable read_one could not read. Returns -1. */
static int unreadable(const char *var, int which, char *why, size_t cap)
{
    snprintf(why, cap, "%s could not be read (too long?); unset it, or give %s instead", var, OPT_NAME[which]);
    return -1;
}

int lsp_request_read(const lsp_glue_ops *ops, lsp_request *r, char *why, size_t cap)
{
    char buf[2048], rbuf[4096];
    const char *v, *from;
    int g;
    memset(r, 0, sizeof(*r));

    if ((g = read_one(ops, LSP_OPT_MODE, buf, sizeof(buf), &v, &from)) < 0)
        return unreadable(ENV_NAME[LSP_OPT_MODE], LSP_OPT_MODE, why, cap);
    if (g == 1) {
        if (lsp_request_check(LSP_OPT_MODE, v, from, why, cap))
            return -1;
        lsp_mode_parse(v, &r->mode);
        r->mode_set = 1;
    }
    if ((g = read_one(ops, LSP_OPT_TWIN, buf, sizeof(buf), &v, &from)) < 0)
        return unreadable(ENV_NAME[LSP_OPT_TWIN], LSP_OPT_TWIN, why, cap);
    if (g == 1) {
        if (lsp_request_check(LSP_OPT_TWIN, v, from, why, cap))
            return -1;
        snprintf(r->twin, sizeof(r->twin), "%s", v);
    }
    if ((g = read_one(ops, LSP_OPT_TRACE, buf, sizeof(buf), &v, &from)) < 0)
        return unreadable(ENV_NAME[LSP_OPT_TRACE], LSP_OPT_TRACE, why, cap);
    if (g == 1) {
        if (lsp_request_check(LSP_OPT_TRACE, v, from, why, cap))
            return -1;
        snprintf(r->trace, sizeof(r->trace), "%s", v);
    }
    if ((g = read_one(ops, LSP_OPT_IGNORE, buf, sizeof(buf), &v, &from)) < 0)
        return unreadable(ENV_NAME[LSP_OPT_IGNORE], LSP_OPT_IGNORE, why, cap);
    if (g == 0 && (g = ops->get(ops->ctx, "LOCKSTEP_IGNORE", buf, sizeof(buf))) == 1) {
        v = buf; /* the agent's own variable, set in the job's environment */
        from = "LOCKSTEP_IGNORE";
    }
    if (g < 0)
        return unreadable("LOCKSTEP_IGNORE", LSP_OPT_IGNORE, why, cap);
    if (g == 1) {
        if (lsp_request_check(LSP_OPT_IGNORE, v, from, why, cap))
            return -1;
        snprintf(r->ignore, sizeof(r->ignore), "%s", v ? v : "");
        r->ignore_set = 1;
    }
    if ((g = read_one(ops, LSP_OPT_RESUME, rbuf, sizeof(rbuf), &v, &from)) < 0)
        return unreadable(ENV_NAME[LSP_OPT_RESUME], LSP_OPT_RESUME, why, cap);
    if (g == 1) {
        if (lsp_request_check(LSP_OPT_RESUME, v, from, why, cap))
            return -1;
        snprintf(r->resume, sizeof(r->resume), "%s", v);
    }
    return 0;
}

/* given_as - how the user gave request `which`: its option's name, its variable's name, or NULL when not at all. */
static const char *given_as(const lsp_glue_ops *ops, int which)
{
    const char *v;
    char buf[16];
    if (ops->option(ops->ctx, which, &v))
        return OPT_NAME[which];
    return ops->get(ops->ctx, ENV_NAME[which], buf, sizeof(buf)) != 0 ? ENV_NAME[which] : NULL;
}

int lsp_submit_check(const lsp_glue_ops *ops, const lsp_conf *c, char *why, size_t cap)
{
    lsp_request r;
    if (lsp_request_read(ops, &r, why, cap))
        return -1;
    if (lsp_effective_mode(c, &r) != LSP_MODE_OFF)
        return 0;
    /* The job runs without lockstep: say which of its requests will do nothing, in the user's words. */
    char names[200] = "";
    size_t n = 0;
    int count = 0;
    for (int which = LSP_OPT_TWIN; which <= LSP_OPT_RESUME; which++) {
        const char *as = given_as(ops, which);
        if (as && n < sizeof(names))
            n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", count++ ? " and " : "", as);
    }
    if (!count)
        return 0;
    const char *does = count > 1 ? "do" : "does";
    if (r.mode_set) /* the user said off */
        snprintf(why, cap, "%s %s nothing with %s=off: the job runs without lockstep", names, does,
                 given_as(ops, LSP_OPT_MODE));
    else
        snprintf(why, cap,
                 "%s %s nothing without --lockstep: this site fingerprints only the jobs that ask (its default is "
                 "off); add --lockstep to fingerprint the job, or --lockstep=det for the deterministic runtime too "
                 "(SLURM_LOCKSTEP=fp or det in the environment)",
                 names, does);
    return 1;
}
