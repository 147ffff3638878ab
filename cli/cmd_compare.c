/* cmd_compare.c - `lockstep compare BASE CHANGED [--noise NOISE]`: is a change's effect bigger than run-to-run noise?
 * (GET /api/v1/compare) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/absorbed.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/table.h"

enum { CMP_NOISE = CLI_KEY_LONG, CMP_RANK, CMP_FROM, CMP_TO, CMP_ALPHA };

/* g - a JSON member as short text for a cell ("-" when absent or null). */
static const char *g(json_t *o, const char *key, char *buf, size_t cap)
{
    const char *s = client_cell(o, key, 1, buf, cap);
    return s ? s : "-";
}

/* add_query - append "&key=escaped value" to `path`. */
static void add_query(char *path, size_t cap, const char *key, const char *value)
{
    char esc[2048];
    client_escape(value, esc, sizeof(esc));
    size_t n = strlen(path);
    snprintf(path + n, cap - n, "&%s=%s", key, esc);
}

static void print_set(const char *role, json_t *set, const char *extra)
{
    json_t *runs = json_object_get(set, "runs");
    size_t n = json_array_size(runs);
    printf("%-8s %s (%zu run%s%s)\n", role, json_string_value(json_object_get(set, "ref")), n, n == 1 ? "" : "s",
           extra ? extra : "");
}

static void print_cell(const char *who, json_t *c, json_t *ulp)
{
    if (!json_is_object(c)) {
        printf("  %-8s (no such record)\n", who);
        return;
    }
    char b[3][64];
    printf("  %-8s run %s  fp %s", who, g(c, "run_id", b[0], 64), g(c, "fp", b[1], 64));
    if (json_object_get(c, "value_bits"))
        printf("  value %s", client_cell(c, "value", 0, b[2], 64) ? b[2] : "(not finite)");
    if (json_is_integer(ulp))
        printf("  (%" JSON_INTEGER_FORMAT " ULP)", json_integer_value(ulp));
    printf("\n");
}

static void print_first(json_t *fe)
{
    if (!json_is_object(fe)) {
        printf("first effect: none (every record of CHANGED equals BASE's)\n");
        return;
    }
    char b[6][64];
    static const char *const kinds[][2] = {{"content", "contents differ"},
                                           {"dtype", "element types differ"},
                                           {"shape", "shapes differ"},
                                           {"missing", "CHANGED lacks it"},
                                           {"extra", "BASE lacks it"}};
    const char *kind = json_string_value(json_object_get(fe, "kind")), *why = kind ? kind : "?";
    for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(kind, kinds[i][0]))
            why = kinds[i][1];
    printf("first effect: step %s, rank %s, record \"%s\" occurrence %s, seq %s (%s)\n", g(fe, "step", b[0], 64),
           g(fe, "rank", b[1], 64), g(fe, "name", b[2], 64), g(fe, "occurrence", b[3], 64), g(fe, "seq", b[4], 64),
           why);
    json_t *ranks = json_object_get(fe, "ranks");
    if (json_array_size(ranks) > 1) {
        printf("  every rank that departs at that step:");
        size_t i;
        json_t *r;
        json_array_foreach(ranks, i, r) printf(" %" JSON_INTEGER_FORMAT, json_integer_value(r));
        printf("\n");
    }
    const char *cause = json_string_value(json_object_get(fe, "cause"));
    if (cause)
        printf("  cause: %s: %s\n", cause, json_string_value(json_object_get(fe, "cause_detail")) ?: "");
    json_t *origin = json_object_get(fe, "origin_ranks");
    if (json_array_size(origin)) {
        printf("  origin rank%s:", json_array_size(origin) > 1 ? "s" : "");
        size_t i;
        json_t *r;
        json_array_foreach(origin, i, r) printf(" %" JSON_INTEGER_FORMAT, json_integer_value(r));
        printf("\n");
    }
    const char *cfg = json_string_value(json_object_get(fe, "configuration"));
    if (cfg)
        printf("  configuration: %s\n", cfg);
    const char *site = json_string_value(json_object_get(json_object_get(fe, "site"), "text"));
    printf("  call site: %s\n", site ? site : "not recorded by this program");
    print_cell("BASE", json_object_get(fe, "base"), NULL);
    print_cell("CHANGED", json_object_get(fe, "changed"), json_object_get(fe, "ulp"));
}

/* print_metrics - one row per metric and changed run (the RUN column only when there are several). */
static void print_metrics(json_t *metrics, int noise, int many)
{
    static const char *const head_noise[] = {"METRIC", "RUN",        "VERDICT",   "SCORE",     "THRESHOLD",
                                             "RATIO",  "FIRST DIFF", "BEYOND AT", "MAX |DEV|", "MAX REL"};
    static const char *const head_plain[] = {"METRIC",    "RUN",     "VERDICT", "FIRST DIFF",
                                             "MAX |DEV|", "MAX REL", "MAX ULP"};
    const char *const *head = noise ? head_noise : head_plain;
    int cols = noise ? 10 : 7, skip = many ? -1 : 1, n = 0;
    const char *h[10];
    for (int k = 0; k < cols; k++)
        if (k != skip)
            h[n++] = head[k];
    table t;
    table_init(&t, n, h);
    size_t i, j;
    json_t *m, *r;
    json_array_foreach(metrics, i, m)
    {
        json_array_foreach(json_object_get(m, "changed"), j, r)
        {
            char b[10][64], run[16];
            snprintf(run, sizeof(run), "%.8s", json_string_value(json_object_get(r, "run_id")));
            const char *name = json_string_value(json_object_get(m, "name"));
            const char *full[10];
            if (noise) {
                const char *row[10] = {name,
                                       run,
                                       g(r, "verdict", b[0], 64),
                                       json_is_true(json_object_get(r, "nonfinite")) ? "inf" : g(r, "score", b[1], 64),
                                       g(m, "threshold", b[2], 64),
                                       g(r, "ratio", b[3], 64),
                                       g(r, "first_step_differs", b[4], 64),
                                       g(r, "first_step_beyond", b[5], 64),
                                       g(r, "max_abs_deviation", b[6], 64),
                                       g(r, "max_rel_deviation", b[7], 64)};
                memcpy(full, row, sizeof(row));
            } else {
                const char *row[7] = {name,
                                      run,
                                      g(r, "verdict", b[0], 64),
                                      g(r, "first_step_differs", b[1], 64),
                                      g(r, "max_abs_deviation", b[2], 64),
                                      g(r, "max_rel_deviation", b[3], 64),
                                      g(r, "max_ulp", b[4], 64)};
                memcpy(full, row, sizeof(row));
            }
            const char *out[10];
            for (int k = 0, o = 0; k < cols; k++)
                if (k != skip)
                    out[o++] = full[k];
            table_add(&t, out);
        }
    }
    table_print(&t, stdout);
    table_free(&t);
}

static int cmd_compare(const cli_args *a)
{
    if (a->npos != 2)
        return cli_args_fail(a, "compare needs BASE and CHANGED");
    const char *pos[2] = {a->pos[0], a->pos[1]};
    const char *noise = cli_args_last(a, CMP_NOISE), *rank = cli_args_last(a, CMP_RANK),
               *from = cli_args_last(a, CMP_FROM), *to = cli_args_last(a, CMP_TO), *alpha = cli_args_last(a, CMP_ALPHA);
    client_conf c;
    if (client_conf_load(&c, &a->g) < 0)
        return CLI_BAD_INPUT;
    char path[8192] = "/api/v1/compare?series=";
    strcat(path, c.json ? "1" : "0");
    add_query(path, sizeof(path), "base", pos[0]);
    add_query(path, sizeof(path), "changed", pos[1]);
    const char *const opts[][2] = {{"noise", noise}, {"rank", rank}, {"from", from}, {"to", to}, {"alpha", alpha}};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        if (opts[i][1])
            add_query(path, sizeof(path), opts[i][0], opts[i][1]);
    json_t *d;
    int rc = client_get(&c, path, &d, "cannot compare");
    if (rc)
        return rc;
    const char *verdict = json_string_value(json_object_get(d, "verdict"));
    int code = verdict && (!strcmp(verdict, "identical") || !strcmp(verdict, "within-noise")) ? CLI_OK : CLI_DIVERGED;
    if (c.json) {
        client_print_json(d);
        return code;
    }

    json_t *base = json_object_get(d, "base"), *nz = json_object_get(d, "noise");
    json_t *ident = json_object_get(base, "identical");
    const char *bstatus = json_string_value(json_object_get(base, "status"));
    char bx[64] = "";
    if (bstatus)
        snprintf(bx, sizeof(bx), ", %s", bstatus);
    print_set("BASE", base,
              json_is_true(ident)    ? ", bit-identical"
              : json_is_false(ident) ? ", NOT bit-identical"
                                     : bx);
    char absorbed[1200];
    if (absorbed_text(json_object_get(base, "absorbed"), absorbed, sizeof(absorbed)))
        printf("         absorbed: %s\n", absorbed);
    print_set("CHANGED", json_object_get(d, "changed"), NULL);
    if (json_is_object(nz))
        print_set("NOISE", nz, NULL);
    else
        printf("NOISE    none\n");
    char b[4][64];
    json_t *rule = json_object_get(d, "rule");
    printf("rank %s, steps %s-%s", g(d, "rank", b[0], 64), g(d, "from", b[1], 64), g(d, "to", b[2], 64));
    if (json_is_object(nz))
        printf(", alpha %s over %s judgements", g(rule, "alpha", b[3], 64),
               client_cell(rule, "judgements", 1, b[0], 64) ? b[0] : "?");
    printf("\n\n");
    char up[64];
    snprintf(up, sizeof(up), "%s", verdict ? verdict : "?");
    for (char *p = up; *p; p++)
        *p = *p == '-' ? ' ' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    printf("verdict: %s\n\n", up);
    print_first(json_object_get(d, "first_effect"));
    json_t *metrics = json_object_get(d, "metrics");
    if (json_array_size(metrics)) {
        printf("\n");
        print_metrics(metrics, json_is_object(nz),
                      json_array_size(json_object_get(json_object_get(d, "changed"), "runs")) > 1);
    }
    size_t i;
    json_t *n;
    json_t *notes = json_object_get(d, "notes");
    if (json_array_size(notes))
        printf("\n");
    json_array_foreach(notes, i, n) printf("note: %s\n", json_string_value(n));
    if (json_is_object(nz))
        printf("\nscore: root mean square over the steps of a run's deviation from BASE, in units of the noise; "
               "threshold: the upper prediction bound for one more noise replica's score (docs/compare.md)\n");
    json_decref(d);
    return code;
}

static const cli_opt compare_opts[] = {
    {"noise", CMP_NOISE, "NOISE", NULL, "the noise replicas: a twin group or run ids (comma-separated)"},
    {"rank", CMP_RANK, "R", NULL, "compare rank R's metrics (default 0)"},
    {"from", CMP_FROM, "STEP", NULL, "from step STEP"},
    {"to", CMP_TO, "STEP", NULL, "up to step STEP"},
    {"alpha", CMP_ALPHA, "A", NULL, "the noise band's false-alarm rate (docs/compare.md)"},
    {0},
};

const cli_command cli_cmd_compare = {
    .name = "compare",
    .run = cmd_compare,
    .synopsis = "compare BASE CHANGED [--noise NOISE] [--rank R] [--from S] [--to S] [--alpha A]",
    .summary = "the effect of a change against the run-to-run noise band; BASE, CHANGED,\n"
               "NOISE: twin groups or run ids (comma-separated)",
    .opts = compare_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
};
