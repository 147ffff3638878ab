/* args.c - the lockstep command's arguments, parsed with getopt_long from each command's option table. */
#include "cli/args.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum { G_SERVER = CLI_KEY_GLOBAL, G_TOKEN, G_TOKEN_FILE, G_CA_FILE, G_JSON, G_VERSION };

const cli_opt cli_global_opts[] = {
    {"server", G_SERVER, "URL", NULL,
     "lockstepd's URL (else LOCKSTEP_SERVER, else 'server = URL' in ~/.config/lockstep/config)"},
    {"token-file", G_TOKEN_FILE, "FILE", "@file",
     "the admin token's file (else LOCKSTEP_ADMIN_TOKEN_FILE, else ~/.config/lockstep/admin-token)"},
    {"token", G_TOKEN, "TOKEN", NULL, "the token itself (other users see it in ps: prefer --token-file)"},
    {"ca-file", G_CA_FILE, "FILE", "@file", "CA certificates for an https:// server (else LOCKSTEP_CA_FILE)"},
    {"json", G_JSON, NULL, NULL, "print JSON (the server's document unchanged) instead of tables"},
    {0},
};

/* global_flag - the CLI_G_* a global option belongs to. */
static unsigned global_flag(int key)
{
    return key == G_JSON ? CLI_G_JSON : CLI_G_SERVER;
}

/* set_global - record global option `key` with `value` in *g. */
static void set_global(cli_globals *g, int key, const char *value)
{
    switch (key) {
    case G_SERVER: g->server = value; break;
    case G_TOKEN: g->token = value; break;
    case G_TOKEN_FILE: g->token_file = value; break;
    case G_CA_FILE: g->ca_file = value; break;
    case G_JSON: g->json = 1; break;
    default: break;
    }
}

/* opt_count - the entries of an option table (NULL: none). */
static size_t opt_count(const cli_opt *o)
{
    size_t n = 0;
    while (o && (o[n].name || o[n].key))
        n++;
    return n;
}

/* find_key - the option of `cmd` or the global one with `key`, or NULL. */
static const cli_opt *find_key(const cli_command *cmd, int key)
{
    for (const cli_opt *o = cmd ? cmd->opts : NULL; o && (o->name || o->key); o++)
        if (o->key == key)
            return o;
    for (const cli_opt *o = cli_global_opts; o->name; o++)
        if (o->key == key)
            return o;
    return NULL;
}

/* shadowed - 1 when `cmd` has an option of its own named `name` (it wins over the global one). */
static int shadowed(const cli_command *cmd, const char *name)
{
    for (const cli_opt *o = cmd ? cmd->opts : NULL; o && (o->name || o->key); o++)
        if (o->name && !strcmp(o->name, name))
            return 1;
    return 0;
}

int cli_takes_global(const cli_command *cmd, const cli_opt *o)
{
    return !cmd || ((cmd->globals & global_flag(o->key)) && !shadowed(cmd, o->name));
}

/* build_opts - getopt_long's tables for `cmd` (NULL: the global options only): its options, then the global ones
 * it does not shadow, then --help (and --version without a command). Returns the long table (free it), or NULL. */
static struct option *build_opts(const cli_command *cmd, char *shorts, size_t cap)
{
    size_t n = opt_count(cmd ? cmd->opts : NULL), k = 0, s = 0;
    struct option *lo = calloc(n + opt_count(cli_global_opts) + 3, sizeof(*lo));
    if (!lo)
        return NULL;
    shorts[s++] = cmd ? '-' : '+'; /* a command: positional arguments in order; before one: stop at it */
    shorts[s++] = ':';
    for (size_t i = 0; i < n; i++) {
        const cli_opt *o = &cmd->opts[i];
        if (o->name)
            lo[k++] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->key};
        if (o->key < CLI_KEY_LONG && s + 3 < cap) {
            shorts[s++] = (char)o->key;
            if (o->arg)
                shorts[s++] = ':';
        }
    }
    for (const cli_opt *o = cli_global_opts; o->name; o++)
        if (!shadowed(cmd, o->name))
            lo[k++] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->key};
    lo[k++] = (struct option){"help", no_argument, NULL, 'h'};
    if (!cmd)
        lo[k++] = (struct option){"version", no_argument, NULL, G_VERSION};
    shorts[s++] = 'h';
    shorts[s] = 0;
    return lo;
}

/* is_number - 1 when `w` is a negative number ("-3", "-0.5"): an argument, never an option. */
static int is_number(const char *w)
{
    if (w[0] != '-' || w[1] < '0' || w[1] > '9')
        return 0;
    w += strspn(w + 1, "0123456789") + 1;
    if (*w == '.')
        w += strspn(w + 1, "0123456789") + 1;
    return *w == 0;
}

/* opt_word - how the user writes option `o`: "--name" or "-k". */
static const char *opt_word(const cli_opt *o, char *buf, size_t cap)
{
    if (o && o->name)
        snprintf(buf, cap, "--%s", o->name);
    else
        snprintf(buf, cap, "-%c", o ? (char)o->key : '?');
    return buf;
}

/* report - say what getopt_long refused (c is '?' or ':'), with the usage of `cmd`. */
static void report(const cli_command *cmd, int c, int argc, char **argv)
{
    char hint[600], w[80];
    const char *word = optind > 0 && optind - 1 < argc ? argv[optind - 1] : "";
    const cli_opt *o = optopt ? find_key(cmd, optopt) : NULL;
    if (cmd)
        cli_usage_hint(cmd, hint, sizeof(hint));
    else
        snprintf(hint, sizeof(hint), "run 'lockstep help' for the commands and the global options");
    if (c == ':')
        cli_errorf(hint, "option '%s' needs a value", opt_word(o, w, sizeof(w)));
    else if (o && o->name && !strncmp(word, "--", 2) && strchr(word, '='))
        cli_errorf(hint, "option '--%s' takes no value", o->name);
    else if (!optopt)
        cli_errorf(hint, "unknown option '%.*s'", (int)strcspn(word, "="), word);
    else
        cli_errorf(hint, "unknown option '-%c'", optopt);
}

int cli_globals_parse(int argc, char **argv, cli_globals *g, int *help, int *version)
{
    char shorts[16];
    memset(g, 0, sizeof(*g));
    *help = *version = 0;
    struct option *lo = build_opts(NULL, shorts, sizeof(shorts));
    if (!lo) {
        cli_error("out of memory", NULL, NULL);
        return -1;
    }
    optind = 0; /* glibc: start over (the previous parse may have left state behind) */
    opterr = 0;
    int c, rc = 0;
    while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        if (c == '?' || c == ':') {
            report(NULL, c, argc, argv);
            rc = -1;
            break;
        }
        if (c == 'h')
            *help = 1;
        else if (c == G_VERSION)
            *version = 1;
        else
            set_global(g, c, optarg);
    }
    free(lo);
    return rc < 0 ? -1 : optind;
}

/* check_globals - refuse a global option `cmd` does not take. Returns 0 or -1 after printing why. */
static int check_globals(const cli_command *cmd, const cli_globals *g)
{
    const char *given[] = {g->server, g->token, g->token_file, g->ca_file, g->json ? "" : NULL};
    static const int keys[] = {G_SERVER, G_TOKEN, G_TOKEN_FILE, G_CA_FILE, G_JSON};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (!given[i] || (cmd->globals & global_flag(keys[i])))
            continue;
        char hint[600];
        cli_errorf(cli_usage_hint(cmd, hint, sizeof(hint)), "%s takes no --%s", cmd->name,
                   find_key(NULL, keys[i])->name);
        return -1;
    }
    return 0;
}

int cli_args_parse(const cli_command *cmd, int argc, char **argv, const cli_globals *before, cli_args *a)
{
    char shorts[128];
    memset(a, 0, sizeof(*a));
    a->cmd = cmd;
    if (before)
        a->g = *before;
    struct option *lo = build_opts(cmd, shorts, sizeof(shorts));
    a->pos = calloc((size_t)argc + 1, sizeof(*a->pos));
    a->given = calloc((size_t)argc + 1, sizeof(*a->given));
    if (!lo || !a->pos || !a->given) {
        free(lo);
        cli_args_release(a);
        cli_error("out of memory", NULL, NULL);
        return CLI_BAD_INPUT;
    }
    optind = 0;
    opterr = 0;
    int c, rc = 0;
    for (;;) {
        int start = optind ? optind : 1;
        if ((c = getopt_long(argc, argv, shorts, lo, NULL)) == -1)
            break;
        if (c == 1) {
            a->pos[a->npos++] = optarg;
        } else if (c == '?' && optopt >= '0' && optopt <= '9' && start < argc && is_number(argv[start])) {
            while (optind == start) /* the rest of the number's characters, each refused as a short option */
                getopt_long(argc, argv, shorts, lo, NULL);
            a->pos[a->npos++] = argv[start];
        } else if (c == '?' || c == ':') {
            report(cmd, c, argc, argv);
            rc = CLI_BAD_INPUT;
            break;
        } else if (c == 'h') {
            a->help = 1;
        } else if (c >= CLI_KEY_GLOBAL) {
            set_global(&a->g, c, optarg);
        } else {
            a->given[a->ngiven++] = (cli_given){find_key(cmd, c), optarg};
        }
    }
    a->ndash = a->npos;
    for (int i = optind; rc == 0 && i < argc; i++) /* after "--" */
        a->pos[a->npos++] = argv[i];
    free(lo);
    if (rc == 0 && !a->help && check_globals(cmd, &a->g) < 0)
        rc = CLI_BAD_INPUT;
    if (rc)
        cli_args_release(a);
    return rc;
}

void cli_args_release(cli_args *a)
{
    free(a->pos);
    free(a->given);
    a->pos = NULL;
    a->given = NULL;
    a->npos = a->ngiven = 0;
}

const char *cli_args_last(const cli_args *a, int key)
{
    const char *v = NULL;
    for (int i = 0; i < a->ngiven; i++)
        if (a->given[i].opt->key == key)
            v = a->given[i].value;
    return v;
}

int cli_args_count(const cli_args *a, int key)
{
    int n = 0;
    for (int i = 0; i < a->ngiven; i++)
        n += a->given[i].opt->key == key;
    return n;
}

const char *cli_usage_hint(const cli_command *cmd, char *out, size_t cap)
{
    const char *s = cmd->synopsis;
    snprintf(out, cap, "usage: lockstep %.*s (more: lockstep %s --help)", (int)strcspn(s, "\n"), s, cmd->name);
    return out;
}

int cli_args_fail(const cli_args *a, const char *fmt, ...)
{
    char fact[1024], hint[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fact, sizeof(fact), fmt, ap);
    va_end(ap);
    cli_error(fact, NULL, cli_usage_hint(a->cmd, hint, sizeof(hint)));
    return CLI_BAD_INPUT;
}
