/* test_cli_args.c - the lockstep command's argument parsing (cli/args.h): getopt_long over each command's table,
 * --opt=value and --opt value alike, global options before or after the subcommand, --help, and the usage and
 * bash completion written from the same tables (cli/usage.h, cli/completion.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/completion.h"
#include "cli/usage.h"

enum { K_SWITCH = CLI_KEY_LONG, K_VALUE, K_TOKEN };

static int run_nothing(const cli_args *a)
{
    (void)a;
    return 0;
}

static const cli_opt test_opts[] = {
    {"switch", K_SWITCH, NULL, NULL, "a switch"},        {"value", K_VALUE, "V", NULL, "takes a value"},
    {"jobs", 'j', "N", NULL, "a short and a long name"}, {NULL, 'n', "N", NULL, "a short name only"},
    {"recursive", 'r', NULL, NULL, "a short switch"},    {0},
};

static const cli_command server_cmd = {
    .name = "srv",
    .run = run_nothing,
    .synopsis = "srv [--switch] [--value V] ARG...",
    .summary = "a test command that talks to a server",
    .opts = test_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
};

static const cli_command local_cmd = {
    .name = "loc",
    .run = run_nothing,
    .synopsis = "loc ARG",
    .summary = "a test command that takes no global option",
    .opts = test_opts,
};

static const cli_opt own_token[] = {{"token", K_TOKEN, "T", NULL, "the command's own --token"}, {0}};
static const cli_command shadow_cmd = {
    .name = "shadow",
    .run = run_nothing,
    .synopsis = "shadow [--token T]",
    .summary = "a command whose --token is its own",
    .opts = own_token,
    .globals = CLI_G_SERVER,
};

/* parse - cli_args_parse over the words of `line` (the subcommand first), with `before` (may be NULL); the words
 * live in a static buffer until the next call. */
static int parse(const cli_command *cmd, const char *line, const cli_globals *before, cli_args *a)
{
    static char buf[1024];
    static char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof(buf), "%s", line);
    for (char *save, *w = strtok_r(buf, " ", &save); w && argc < 63; w = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(w, "''") ? w : (char *)"";
    argv[argc] = NULL;
    return cli_args_parse(cmd, argc, argv, before, a);
}

static void test_both_value_forms(void **state)
{
    (void)state;
    cli_args a;
    const char *const lines[] = {"srv --value 7 x", "srv --value=7 x", "srv x --value 7", "srv x --value=7",
                                 "srv --val=7 x"};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        assert_int_equal(parse(&server_cmd, lines[i], NULL, &a), 0);
        assert_string_equal(cli_args_last(&a, K_VALUE), "7");
        assert_int_equal(a.npos, 1);
        assert_string_equal(a.pos[0], "x");
        cli_args_release(&a);
    }
    /* short options: -j 4, -j4, clustered with a switch */
    const char *const shorts[] = {"srv -j 4 x", "srv -j4 x", "srv -rj4 x", "srv x -r -j 4"};
    for (size_t i = 0; i < sizeof(shorts) / sizeof(shorts[0]); i++) {
        assert_int_equal(parse(&server_cmd, shorts[i], NULL, &a), 0);
        assert_string_equal(cli_args_last(&a, 'j'), "4");
        assert_string_equal(a.pos[0], "x");
        cli_args_release(&a);
    }
    /* the last of a repeated option wins; every one is kept in order */
    assert_int_equal(parse(&server_cmd, "srv --value 1 --switch --value=2 -n 3", NULL, &a), 0);
    assert_string_equal(cli_args_last(&a, K_VALUE), "2");
    assert_int_equal(cli_args_count(&a, K_VALUE), 2);
    assert_int_equal(cli_args_count(&a, K_SWITCH), 1);
    assert_int_equal(a.ngiven, 4);
    assert_int_equal(a.given[0].opt->key, K_VALUE);
    assert_string_equal(a.given[0].value, "1");
    assert_null(a.given[1].value);
    assert_string_equal(cli_args_last(&a, 'n'), "3");
    cli_args_release(&a);
    /* a value that starts with '-' is the value */
    assert_int_equal(parse(&server_cmd, "srv --value --switch", NULL, &a), 0);
    assert_string_equal(cli_args_last(&a, K_VALUE), "--switch");
    assert_int_equal(cli_args_count(&a, K_SWITCH), 0);
    cli_args_release(&a);
}

static void test_positionals_and_dashdash(void **state)
{
    (void)state;
    cli_args a;
    assert_int_equal(parse(&server_cmd, "srv a --switch b -- c --value -r", NULL, &a), 0);
    assert_int_equal(a.npos, 5);
    assert_int_equal(a.ndash, 2);
    assert_string_equal(a.pos[0], "a");
    assert_string_equal(a.pos[1], "b");
    assert_string_equal(a.pos[2], "c");
    assert_string_equal(a.pos[3], "--value");
    assert_string_equal(a.pos[4], "-r");
    assert_null(a.pos[5]);
    assert_int_equal(cli_args_count(&a, 'r'), 0);
    cli_args_release(&a);
    /* '-' (stdin) and negative numbers are arguments */
    assert_int_equal(parse(&server_cmd, "srv - -3 -12 -0.5 -r", NULL, &a), 0);
    assert_int_equal(a.npos, 4);
    assert_string_equal(a.pos[0], "-");
    assert_string_equal(a.pos[1], "-3");
    assert_string_equal(a.pos[2], "-12");
    assert_string_equal(a.pos[3], "-0.5");
    assert_int_equal(cli_args_count(&a, 'r'), 1);
    assert_int_equal(a.ndash, 4);
    cli_args_release(&a);
}

static void test_globals_anywhere(void **state)
{
    (void)state;
    char *argv[] = {"lockstep", "--server=http://a", "--json", "srv", "x", NULL};
    cli_globals g;
    int help, version;
    assert_int_equal(cli_globals_parse(5, argv, &g, &help, &version), 3);
    assert_string_equal(g.server, "http://a");
    assert_int_equal(g.json, 1);
    assert_int_equal(help + version, 0);
    cli_args a;
    assert_int_equal(parse(&server_cmd, "srv x --server http://b --token-file f", &g, &a), 0);
    assert_string_equal(a.g.server, "http://b"); /* the later wins */
    assert_string_equal(a.g.token_file, "f");
    assert_int_equal(a.g.json, 1);
    assert_int_equal(a.npos, 1);
    cli_args_release(&a);
    /* before the subcommand: --version, --help, and nothing but global options */
    char *v[] = {"lockstep", "--version", NULL};
    assert_int_equal(cli_globals_parse(2, v, &g, &help, &version), 2);
    assert_int_equal(version, 1);
    char *h[] = {"lockstep", "-h", "runs", NULL};
    assert_int_equal(cli_globals_parse(3, h, &g, &help, &version), 2);
    assert_int_equal(help, 1);
    char *bad[] = {"lockstep", "--limit", "2", "runs", NULL};
    assert_int_equal(cli_globals_parse(4, bad, &g, &help, &version), -1);
    /* a command that uses no server refuses the server's options, wherever they stand */
    assert_int_equal(parse(&local_cmd, "loc x --json", NULL, &a), CLI_BAD_INPUT);
    cli_globals none = {0};
    assert_int_equal(parse(&local_cmd, "loc x", &none, &a), 0);
    cli_args_release(&a);
    cli_globals json = {.json = 1};
    assert_int_equal(parse(&local_cmd, "loc x", &json, &a), CLI_BAD_INPUT);
    /* a command's own option of a global's name is the command's */
    assert_int_equal(parse(&shadow_cmd, "shadow --token t1", NULL, &a), 0);
    assert_string_equal(cli_args_last(&a, K_TOKEN), "t1");
    assert_null(a.g.token);
    cli_args_release(&a);
}

static void test_help_and_refusals(void **state)
{
    (void)state;
    cli_args a;
    const char *const help[] = {"srv --help", "srv x -h", "loc --help --json"};
    for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++) {
        assert_int_equal(parse(i == 2 ? &local_cmd : &server_cmd, help[i], NULL, &a), 0);
        assert_int_equal(a.help, 1);
        cli_args_release(&a);
    }
    /* each refused with exit 2 (CLI_BAD_INPUT), never run */
    const char *const bad[] = {"srv --bogus", "srv --bogus=1", "srv -x", "srv --value", "srv --switch=1", "srv -j"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(parse(&server_cmd, bad[i], NULL, &a), CLI_BAD_INPUT);
}

/* contains - 1 when `hay` holds `needle` as a whole word (between blanks, quotes, brackets or line ends). */
static int contains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        if ((p == hay || strchr(" '[\n", p[-1])) && strchr(" ']\n,", p[n]))
            return 1;
    return 0;
}

/* capture - what `fn` writes to a stream, as a string (free it). */
static char *capture(void (*fn)(FILE *, const void *), const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fn(f, arg);
    fclose(f);
    return buf;
}

static void usage_of(FILE *f, const void *cmd)
{
    cli_usage_print(cmd, f);
}

static void completion(FILE *f, const void *unused)
{
    (void)unused;
    assert_int_equal(cli_completion_bash(f), CLI_OK);
}

static void overview(FILE *f, const void *unused)
{
    (void)unused;
    cli_help_print(f);
}

/* Every command: its usage lists each of its options, and the completion script offers each of them. */
static void test_usage_and_completion_from_the_table(void **state)
{
    (void)state;
    char *script = capture(completion, NULL), *all = capture(overview, NULL);
    for (const cli_command *const *c = cli_commands; *c; c++) {
        char *u = capture(usage_of, *c), w[80];
        snprintf(w, sizeof(w), "  %.*s", (int)strcspn((*c)->synopsis, "\n"), (*c)->synopsis);
        assert_non_null(strstr(all, w)); /* the overview lists its first form */
        assert_true(contains(script, (*c)->name));
        snprintf(w, sizeof(w), "usage: lockstep %s", (*c)->name);
        assert_non_null(strstr(u, w));
        for (const cli_opt *o = (*c)->opts; o && (o->name || o->key); o++) {
            if (o->name)
                snprintf(w, sizeof(w), "--%s", o->name);
            else
                snprintf(w, sizeof(w), "-%c", o->key);
            if (!contains(u, w) || !contains(script, w))
                fail_msg("lockstep %s: option %s missing from its usage or the completion", (*c)->name, w);
            assert_null(o->complete ? strchr(o->complete, '\'') : NULL); /* the script quotes them with '' */
        }
        for (const cli_opt *o = cli_global_opts; o->name; o++) { /* those it takes, unless it has its own */
            int own = 0;
            for (const cli_opt *p = (*c)->opts; p && (p->name || p->key); p++)
                own |= p->name && !strcmp(p->name, o->name);
            snprintf(w, sizeof(w), "--%s", o->name);
            assert_int_equal(contains(u, w), cli_takes_global(*c, o) || own);
        }
        free(u);
    }
    assert_non_null(strstr(script, "complete -F _lockstep lockstep"));
    free(script);
    free(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_value_forms),
        cmocka_unit_test(test_positionals_and_dashdash),
        cmocka_unit_test(test_globals_anywhere),
        cmocka_unit_test(test_help_and_refusals),
        cmocka_unit_test(test_usage_and_completion_from_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
