/* cmd_checkpoint.c - `lockstep checkpoint STEP [PATH]`: from inside a job, declare a checkpoint it wrote, so that a
 * replay of a later step starts there (docs/cli.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

enum { CK_RUN = CLI_KEY_LONG, CK_RANK };

static int cmd_checkpoint(const cli_args *a)
{
    const char *tok = getenv("LOCKSTEP_TOKEN");
    int given_token = a->g.token || a->g.token_file;
    if (a->npos > 2)
        return cli_args_fail(a, "unexpected argument '%s'", a->pos[2]);
    const char *run = cli_args_last(a, CK_RUN) ?: getenv("LOCKSTEP_RUN_ID"), *rank_s = cli_args_last(a, CK_RANK);
    const char *step_s = a->npos ? a->pos[0] : NULL, *path = a->npos > 1 ? a->pos[1] : NULL;
    char *end = NULL;
    long long step = step_s ? strtoll(step_s, &end, 10) : -1;
    if (!step_s || *end || step < 0)
        return cli_args_fail(a, "checkpoint needs the step it holds, a number >= 0");
    if (!run || !*run) {
        cli_error("no run to declare the checkpoint for", "LOCKSTEP_RUN_ID is not set and no --run was given",
                  "run it inside a task of a job under --lockstep (the plugin sets LOCKSTEP_RUN_ID), or give --run "
                  "RUN_ID");
        return CLI_BAD_INPUT;
    }
    client_conf c;
    if (client_conf_load(&c, &a->g) < 0)
        return CLI_BAD_INPUT;
    /* A job writes with its own token: LOCKSTEP_TOKEN, which the plugin sets, before any admin token. */
    if (!given_token && tok && *tok)
        snprintf(c.token, sizeof(c.token), "%s", tok);
    if (!rank_s)
        rank_s = getenv("LOCKSTEP_RANK") ? getenv("LOCKSTEP_RANK") : getenv("SLURM_PROCID");
    json_t *body = json_pack("{s:I}", "step", (json_int_t)step);
    if (path)
        json_object_set_new(body, "path", json_string(path));
    if (rank_s && *rank_s)
        json_object_set_new(body, "rank", json_integer(atoi(rank_s)));
    char esc[200], url[400];
    client_escape(run, esc, sizeof(esc));
    snprintf(url, sizeof(url), "/api/v1/runs/%s/checkpoints", esc);
    json_t *reply;
    int rc = client_post(&c, url, body, &reply, "cannot declare the checkpoint");
    json_decref(body);
    if (rc)
        return rc;
    if (c.json)
        client_print_json(reply);
    else {
        printf("run %s: checkpoint of step %lld%s%s declared\n", run, step, path ? " at " : "", path ? path : "");
        json_decref(reply);
    }
    return CLI_OK;
}

static const cli_opt checkpoint_opts[] = {
    {"run", CK_RUN, "RUN_ID", NULL, "the run (default: LOCKSTEP_RUN_ID, which the plugin sets)"},
    {"rank", CK_RANK, "R", NULL, "the rank that wrote it (default: LOCKSTEP_RANK, else SLURM_PROCID)"},
    {0},
};

const cli_command cli_cmd_checkpoint = {
    .name = "checkpoint",
    .run = cmd_checkpoint,
    .synopsis = "checkpoint STEP [PATH] [--run RUN_ID] [--rank R]",
    .summary = "declare, from inside a job, a checkpoint it wrote (STEP: the last step\n"
               "it holds; the run, its token and the server come from LOCKSTEP_RUN_ID,\n"
               "LOCKSTEP_TOKEN and LOCKSTEP_SERVER)",
    .opts = checkpoint_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
    .complete = {NULL, "@file"},
};
