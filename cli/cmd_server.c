/* cmd_server.c - `lockstep runs|run|manifest-diff`: lockstepd's read API as tables (or --json). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/consensus.h"
#include "cli/table.h"

enum { Q_USER = CLI_KEY_LONG, Q_JOB, Q_GROUP, Q_STATUS, Q_NODE, Q_LIMIT, Q_OFFSET };

/* str - a JSON member as exact text for a table cell (see client_cell). */
static const char *str(json_t *o, const char *key, char *buf, size_t cap)
{
    return client_cell(o, key, 0, buf, cap);
}

static int cmd_runs(const cli_args *a)
{
    if (a->npos)
        return cli_args_fail(a, "unexpected argument '%s'", a->pos[0]);
    client_conf c;
    if (client_conf_load(&c, &a->g) < 0)
        return CLI_BAD_INPUT;
    static const client_filter filters[] = {{Q_USER, "user"},     {Q_JOB, "job"},   {Q_GROUP, "group"},
                                            {Q_STATUS, "status"}, {Q_NODE, "node"}, {Q_LIMIT, "limit"},
                                            {Q_OFFSET, "offset"}};
    char path[2048];
    client_query("/api/v1/runs", filters, sizeof(filters) / sizeof(filters[0]), a, path, sizeof(path));
    json_t *reply;
    int rc = client_get(&c, path, &reply, "cannot list runs");
    if (rc)
        return rc;
    if (c.json) {
        client_print_json(reply);
        return CLI_OK;
    }
    json_t *runs = json_object_get(reply, "items");
    static const char *const head[] = {"RUN", "JOB", "STEP", "USER", "GROUP", "RANKS", "NODES", "STATUS", "STARTED"};
    table t;
    table_init(&t, 9, head);
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r)
    {
        char b[9][64];
        const char *row[9] = {
            str(r, "run_id", b[0], 64), str(r, "job_id", b[1], 64),     str(r, "step_id", b[2], 64),
            str(r, "user", b[3], 64),   str(r, "twin_group", b[4], 64), str(r, "ranks", b[5], 64),
            str(r, "nodes", b[6], 64),  str(r, "status", b[7], 64),     str(r, "created_at", b[8], 64),
        };
        table_add(&t, row);
    }
    if (t.rows == 0)
        printf("no runs match (the server holds none yet, or the filters exclude them all)\n");
    else
        table_print(&t, stdout);
    json_t *total = json_object_get(reply, "total");
    if (json_is_integer(total) && (json_int_t)t.rows < json_integer_value(total))
        printf("(%zu of %" JSON_INTEGER_FORMAT " runs; use --limit and --offset for more)\n", t.rows,
               json_integer_value(total));
    table_free(&t);
    json_decref(reply);
    return CLI_OK;
}

static int cmd_run(const cli_args *a)
{
    client_conf c;
    json_t *reply;
    const char *id;
    int rc = client_fetch(&c, a, "/api/v1/runs/%s", "cannot show the run", &reply, &id);
    if (rc)
        return rc;
    if (c.json) {
        client_print_json(reply);
        return CLI_OK;
    }
    json_t *run = json_object_get(reply, "run");
    if (!run)
        run = reply;
    const char *keys[] = {"run_id", "job_id",     "step_id", "user",   "partition", "twin_group", "mode",
                          "ranks",  "start_step", "nodes",   "status", "command",   "created_at", "ended_at"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char b[64];
        const char *v = str(run, keys[i], b, sizeof(b));
        if (v)
            printf("%-11s %s\n", keys[i], v);
    }
    if (json_object_get(reply, "consensus")) {
        char line[1024];
        consensus_format_line(json_object_get(reply, "consensus"), line, sizeof(line));
        printf("%s\n", line);
    }
    json_t *mans = json_object_get(reply, "manifests");
    if (json_array_size(mans)) {
        printf("\n");
        static const char *const head[] = {"RANK", "HOST", "NODE", "GPU", "GPU UUID", "CUDA", "NCCL", "MPI"};
        table t;
        table_init(&t, 8, head);
        size_t i;
        json_t *m;
        json_array_foreach(mans, i, m)
        {
            json_t *body = json_object_get(m, "manifest");
            json_t *gpu = json_array_get(json_object_get(body, "gpus"), 0);
            char b[8][64];
            const char *row[8] = {str(m, "rank", b[0], 64),
                                  str(body, "host", b[1], 64),
                                  str(body, "slurm_node", b[2], 64),
                                  str(gpu, "name", b[3], 64),
                                  str(gpu, "uuid", b[4], 64),
                                  str(body, "cuda_runtime", b[5], 64),
                                  str(body, "nccl_version", b[6], 64),
                                  str(body, "mpi_version", b[7], 64)};
            table_add(&t, row);
        }
        table_print(&t, stdout);
        table_free(&t);
    }
    json_t *ranks = json_object_get(reply, "rank_status");
    if (json_array_size(ranks)) {
        printf("\n");
        static const char *const head[] = {"RANK", "RECORDS", "STEPS", "LAST SEQ", "EXIT"};
        table t;
        table_init(&t, 5, head);
        size_t i;
        json_t *r;
        json_array_foreach(ranks, i, r)
        {
            char b[6][64], steps[140];
            const char *lo = str(r, "min_step", b[2], 64), *hi = str(r, "max_step", b[3], 64);
            snprintf(steps, sizeof(steps), "%s..%s", lo ? lo : "-", hi ? hi : "-");
            const char *ex = str(r, "exit_code", b[5], 64);
            const char *row[5] = {str(r, "rank", b[0], 64), str(r, "records", b[1], 64), steps,
                                  str(r, "max_seq", b[4], 64),
                                  ex ? ex : (json_is_true(json_object_get(r, "ended")) ? "ended" : "running")};
            table_add(&t, row);
        }
        table_print(&t, stdout);
        table_free(&t);
    }
    json_decref(reply);
    return CLI_OK;
}
/* print_entries - a manifest diff's entries (differences or identities) as a table. */
static void print_entries(json_t *entries, int with_class)
{
    static const char *const head[] = {"RANKS", "KEY", "CLASS", "RUN", "VALUE"};
    static const char *const head2[] = {"RANKS", "KEY", "RUN", "VALUE"};
    table t;
    table_init(&t, with_class ? 5 : 4, with_class ? head : head2);
    size_t i, k;
    json_t *d, *v;
    json_array_foreach(entries, i, d)
    {
        char ranks[64] = "run", key[300];
        json_t *rk = json_object_get(d, "ranks");
        if (json_is_array(rk)) {
            size_t n = json_array_size(rk);
            long long lo = json_integer_value(json_array_get(rk, 0)),
                      hi = json_integer_value(json_array_get(rk, n - 1));
            if (n == 1)
                snprintf(ranks, sizeof(ranks), "%lld", lo);
            else if (hi - lo + 1 == (long long)n)
                snprintf(ranks, sizeof(ranks), "%lld-%lld", lo, hi);
            else
                snprintf(ranks, sizeof(ranks), "%lld,... (%zu)", lo, n);
        }
        const char *change = json_string_value(json_object_get(d, "change"));
        snprintf(key, sizeof(key), "%s%s%s%s", json_string_value(json_object_get(d, "key")) ?: "?", change ? " (" : "",
                 change ? change : "", change ? ")" : "");
        json_array_foreach(json_object_get(d, "values"), k, v)
        {
            json_t *val = json_object_get(v, "value");
            char *txt = json_is_string(val)         ? strdup(json_string_value(val))
                        : json_is_null(val) || !val ? strdup("(absent)")
                                                    : json_dumps(val, JSON_ENCODE_ANY);
            if (txt && strlen(txt) > 120)
                strcpy(txt + 117, "...");
            char b[64];
            const char *cls = json_string_value(json_object_get(d, "class"));
            const char *row5[5] = {k ? "" : ranks, k ? "" : key,
                                   k     ? ""
                                   : cls ? cls
                                         : "",
                                   str(v, "run_id", b, 64), txt ? txt : "?"};
            const char *row4[4] = {k ? "" : ranks, k ? "" : key, str(v, "run_id", b, 64), txt ? txt : "?"};
            table_add(&t, with_class ? row5 : row4);
            free(txt);
        }
    }
    table_print(&t, stdout);
    table_free(&t);
}

static int cmd_manifest_diff(const cli_args *a)
{
    client_conf c;
    json_t *reply;
    const char *group;
    int rc = client_fetch(&c, a, "/api/v1/twins/%s/manifest-diff", "cannot diff the manifests", &reply, &group);
    if (rc)
        return rc;
    if (c.json) {
        client_print_json(reply); /* takes the reply */
        return CLI_OK;
    }
    json_t *diffs = json_object_get(reply, "diffs"), *ids = json_object_get(reply, "identities");
    printf("%s%s\n",
           json_is_true(json_object_get(reply, "explains")) ? "the configurations differ where it can change "
                                                              "results: "
                                                            : "",
           json_string_value(json_object_get(reply, "summary")) ?: "");
    if (json_array_size(diffs)) {
        printf("\n");
        print_entries(diffs, 1);
    }
    if (json_array_size(ids)) {
        printf("\nidentities (they differ between runs by nature and explain nothing):\n");
        print_entries(ids, 0);
    }
    json_decref(reply);
    return CLI_OK;
}

static const cli_opt runs_opts[] = {
    {"user", Q_USER, "USER", NULL, "only the runs of USER"},
    {"job", Q_JOB, "JOBID", NULL, "only the runs (steps) of Slurm job JOBID"},
    {"group", Q_GROUP, "GROUP", NULL, "only the runs of twin group GROUP"},
    {"status", Q_STATUS, "STATUS", "running ended failed", "only the runs in this state: running, ended, failed"},
    {"node", Q_NODE, "NODE", NULL, "only the runs that ran on NODE"},
    {"limit", Q_LIMIT, "N", NULL, "at most N runs (newest first)"},
    {"offset", Q_OFFSET, "N", NULL, "skip the first N runs (the next page)"},
    {0},
};

const cli_command cli_cmd_runs = {
    .name = "runs",
    .run = cmd_runs,
    .synopsis = "runs [--user U] [--job J] [--group G] [--status S] [--node N] [--limit N] [--offset N]",
    .summary = "list runs on the server",
    .opts = runs_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
};

const cli_command cli_cmd_run = {
    .name = "run",
    .run = cmd_run,
    .synopsis = "run RUN_ID",
    .summary = "one run: job, ranks, nodes, manifests",
    .globals = CLI_G_SERVER | CLI_G_JSON,
};
const cli_command cli_cmd_manifest_diff = {
    .name = "manifest-diff",
    .run = cmd_manifest_diff,
    .synopsis = "manifest-diff GROUP",
    .summary = "what differs between the twins' manifests",
    .globals = CLI_G_SERVER | CLI_G_JSON,
};
