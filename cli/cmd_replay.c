/* cmd_replay.c - `lockstep replay DIR`: send what agents left in a spool directory to lockstepd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/spool_send.h"
#include "cli/cli.h"
#include "cli/client.h"

enum { RP_STEPS = CLI_KEY_LONG, RP_FORCE, RP_QUIET, RP_TOKEN };

static int cmd_replay(const cli_args *a)
{
    spool_send_opts o = {.timeout_ms = 10000, .wait_ms = 10000, .log = stderr};
    if (a->npos != 1)
        return cli_args_fail(a, a->npos ? "replay takes one spool directory" : "no spool directory given");
    const char *dir = a->pos[0];
    if (cli_args_count(a, RP_QUIET))
        o.log = NULL;
    o.force = cli_args_count(a, RP_FORCE) > 0;
    o.steps = cli_args_last(a, RP_STEPS);
    if (o.steps && !spool_send_steps_valid(o.steps))
        return cli_args_fail(a, "--steps takes a list of steps (3,7-9) or 'asked', not '%s'", o.steps);
    /* The spool's job token (--token, before or after the command) is this command's own; the server and CA file
     * are the user's, as every command finds them (client_conf_load), never what a spool names. */
    o.token = cli_args_last(a, RP_TOKEN) ?: a->g.token;
    cli_globals g = a->g;
    g.token = NULL;
    client_conf c;
    if (client_conf_load(&c, &g) < 0)
        return CLI_BAD_INPUT;
    o.server = c.server;
    o.ca_file = c.ca_file[0] ? c.ca_file : NULL;
    if (!o.token) {
        const char *t = getenv("LOCKSTEP_TOKEN");
        if (t && *t)
            o.token = t;
    }
    spool_send_stats st;
    int rc = spool_send_tree(dir, &o, &st);
    printf("replayed %llu batch(es), %llu record(s) from %u of %u spool(s) in %s to %s", (unsigned long long)st.batches,
           (unsigned long long)st.records, st.dirs_done, st.dirs, dir, o.server);
    if (st.dirs_busy)
        printf("; %u in use by running agents", st.dirs_busy);
    if (st.dirs_failed)
        printf("; %u left for later", st.dirs_failed);
    if (st.rejected)
        printf("; %llu batch(es) refused", (unsigned long long)st.rejected);
    if (o.steps)
        printf("; %llu held record(s) of steps %s in %llu block(s)", (unsigned long long)st.held_records, o.steps,
               (unsigned long long)st.held_batches);
    printf("\n");
    if (rc < 0 && st.dirs_failed) {
        cli_error("some spooled data could not be sent", "it stays in the spool directory",
                  "check that lockstepd is up (--server URL), and that the spools are yours (--force sends "
                  "another user's), then run lockstep replay again");
        return 3;
    }
    return CLI_OK;
}

static const cli_opt replay_opts_table[] = {
    {"steps", RP_STEPS, "LIST", "asked",
     "also send the held records (digest streaming) of these steps, or of those "
     "lockstepd asks for (asked)"},
    {"force", RP_FORCE, NULL, NULL, "also another user's spools"},
    {"quiet", RP_QUIET, NULL, NULL, "say nothing but the summary"},
    {"token", RP_TOKEN, "TOKEN", NULL, "the job's token (default: LOCKSTEP_TOKEN)"},
    {0},
};

const cli_command cli_cmd_replay = {
    .name = "replay",
    .run = cmd_replay,
    .synopsis = "replay [--steps LIST|asked] [--force] [--quiet] DIR",
    .summary = "send what agents left in a spool directory to lockstepd",
    .opts = replay_opts_table,
    .globals = CLI_G_SERVER,
    .complete = {"@dir"},
};
