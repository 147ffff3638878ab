/* spank_conf.h - the plugin's configuration: plugstack.conf arguments, user options, the effective mode. */
#ifndef SPANK_SPANK_CONF_H
#define SPANK_SPANK_CONF_H

#include <limits.h>
#include <stddef.h>

/* Modes, weakest first (their order is used by `enforce`): consensus records only the copies every rank must hold
 * alike (checked within the run, no twin), fp every record, det fp with the deterministic runtime. */
typedef enum lsp_mode { LSP_MODE_OFF = 0, LSP_MODE_CONSENSUS = 1, LSP_MODE_FP = 2, LSP_MODE_DET = 3 } lsp_mode;

#ifndef LSP_DEFAULT_AGENT
#define LSP_DEFAULT_AGENT "/usr/local/lib/liblockstep.so"
#endif

/* What plugstack.conf says: `server=URL secret=FILE agent=PATH default=MODE enforce=MODE spool=DIR
 * stream=records|digests relay=DIR consensus_every=N timeout_ms=N ignore=GLOBS secret_vars=GLOBS`. */
typedef struct lsp_conf {
    char server[512];       /* lockstepd base URL, "" when none */
    char secret[PATH_MAX];  /* site secret file, read by slurmstepd only, "" when none */
    char agent[PATH_MAX];   /* liblockstep.so appended to LD_PRELOAD */
    char spool[PATH_MAX];   /* agent spool root, "" for the agent's default */
    char stream[16];        /* the site's LOCKSTEP_STREAM (records, digests) for jobs that set none; "" */
    char relay[PATH_MAX];   /* relay=: a node-local root for each job step's node relay (LOCKSTEP_RELAY), "" */
    int consensus_every;    /* the site's LOCKSTEP_CONSENSUS_EVERY for consensus jobs that set none; 0 when none */
    lsp_mode dflt;          /* mode of a job that asks for nothing */
    lsp_mode enforce;       /* minimum mode the site imposes */
    int timeout_ms;         /* registration time limit (timeout_ms=) */
    char ignore[2048];      /* ignore=: the site's default LOCKSTEP_IGNORE patterns, "" when none */
    char secret_vars[1024]; /* secret_vars=: names the manifest keeps out (LOCKSTEP_SECRET_VARS), "" when none */
} lsp_conf;

/* A user's request: from --lockstep* options, else SLURM_LOCKSTEP* variables. */
typedef struct lsp_request {
    int mode_set; /* 1 when the user chose a mode */
    lsp_mode mode;
    char twin[256];    /* twin group, "" when none */
    char trace[512];   /* LOCKSTEP_TRACE spec, "" when none */
    int ignore_set;    /* 1 when the user gave ignore patterns (possibly none: "" drops the site's) */
    char ignore[2048]; /* LOCKSTEP_IGNORE patterns */
    char resume[4096]; /* how the job resumes (--lockstep-resume), "" when unsaid */
} lsp_request;

/* lsp_conf_defaults - fill `c` with the built-in defaults (mode off, the
 * installed agent path, no server, no secret, 3000 ms). */
void lsp_conf_defaults(lsp_conf *c);

/* lsp_conf_parse - apply plugstack.conf arguments `av[0..ac)` over the
 * current contents of `c`. Every argument is tried; each unknown or invalid
 * one is described in `why` (the last one wins) and makes the call return -1,
 * while the valid ones still take effect. Returns 0 when all were valid. */
int lsp_conf_parse(lsp_conf *c, int ac, char **av, char *why, size_t cap);

/* lsp_mode_parse - "off", "consensus", "fp" or "det" (case-insensitive) into `out`.
 * NULL or "" means fp: a bare `--lockstep` fingerprints. Returns 0 or -1. */
int lsp_mode_parse(const char *s, lsp_mode *out);

/* lsp_mode_name - "off", "consensus", "fp" or "det". */
const char *lsp_mode_name(lsp_mode m);

/* lsp_twin_valid - 0 when `s` is a usable twin group name: 1-255 bytes of
 * letters, digits and . _ - : / @ +, else -1. */
int lsp_twin_valid(const char *s);

/* lsp_effective_mode - the mode a step runs in: the user's if set, else
 * the site default, raised to the site's enforce minimum. */
lsp_mode lsp_effective_mode(const lsp_conf *c, const lsp_request *r);

#endif /* SPANK_SPANK_CONF_H */
