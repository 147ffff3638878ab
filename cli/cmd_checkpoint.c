/* cmd_checkpoint.c - `lockstep checkpoint STEP [PATH]`: from inside a job, declare a checkpoint it wrote, so that a replay of a later step starts there (docs/cli.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

static const char *const usage = "usage: lockstep checkpoint STEP [PATH] [--run RUN_ID] [--rank R] [--server URL] "
                                 "[--token T]\n"
                                 "  STEP: the last step the checkpoint holds; inside a job the run, its token and "
                                 "the server come from LOCKSTEP_RUN_ID, LOCKSTEP_TOKEN and LOCKSTEP_SERVER";

int cmd_checkpoint(int argc, char **argv)
{
    const char *tok = getenv("LOCKSTEP_TOKEN");
    int given_token = 0;
    for (int i = 1; i < argc; i++)
        given_token |= !strcmp(argv[i], "--token") || !strcmp(argv[i], "--token-file");
    client_conf c;
    if (client_conf_load(&c, &argc, argv) < 0)
        return CLI_BAD_INPUT;
    /* A job writes with its own token: LOCKSTEP_TOKEN, which the plugin sets, before any admin token. */
    if (!given_token && tok && *tok)
        snprintf(c.token, sizeof(c.token), "%s", tok);
    const char *run = getenv("LOCKSTEP_RUN_ID"), *step_s = NULL, *path = NULL, *rank_s = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--run") && i + 1 < argc)
            run = argv[++i];
        else if (!strcmp(argv[i], "--rank") && i + 1 < argc)
            rank_s = argv[++i];
        else if ((argv[i][0] != '-' || (argv[i][1] >= '0' && argv[i][1] <= '9')) && !step_s)
            step_s = argv[i]; /* a negative number is a (wrong) step, not an option */
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            cli_errorf(usage, "unexpected argument '%s'", argv[i]);
            return CLI_BAD_INPUT;
        }
    }
    char *end = NULL;
    long long step = step_s ? strtoll(step_s, &end, 10) : -1;
    if (!step_s || *end || step < 0) {
        cli_error("checkpoint needs the step it holds, a number >= 0", NULL, usage);
        return CLI_BAD_INPUT;
    }
    if (!run || !*run) {
        cli_error("no run to declare the checkpoint for", "LOCKSTEP_RUN_ID is not set and no --run was given",
                  "run it inside a task of a job under --lockstep (the plugin sets LOCKSTEP_RUN_ID), or give --run "
                  "RUN_ID");
        return CLI_BAD_INPUT;
    }
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
