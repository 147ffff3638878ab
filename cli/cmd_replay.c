/* cmd_replay.c - `lockstep replay DIR`: send what agents left in a spool directory to lockstepd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/replay.h"
#include "cli/cli.h"
#include "cli/client.h"

static const char *const usage =
    "usage: lockstep replay [--server URL] [--token T] [--ca-file F] [--steps LIST|asked] [--force] [--quiet] DIR";

int cmd_replay(int argc, char **argv)
{
    replay_opts o = {.timeout_ms = 10000, .wait_ms = 10000, .log = stderr};
    const char *dir = NULL;
    /* The spool's job token (--token) is this command's own; the server and CA file are the user's, as every
     * command finds them (client_conf_load), never what a spool names. */
    char *rest[64];
    int nrest = 0;
    if (argc >= 64) {
        cli_error("too many arguments", NULL, usage);
        return CLI_BAD_INPUT;
    }
    for (int i = 0; i < argc; i++) {
        if (i > 0 && !strcmp(argv[i], "--token") && i + 1 < argc)
            o.token = argv[++i];
        else
            rest[nrest++] = argv[i];
    }
    rest[nrest] = NULL;
    client_conf c;
    if (client_conf_load(&c, &nrest, rest) < 0)
        return CLI_BAD_INPUT;
    for (int i = 1; i < nrest; i++) {
        if (!strcmp(rest[i], "--quiet"))
            o.log = NULL;
        else if (!strcmp(rest[i], "--force"))
            o.force = 1;
        else if (!strcmp(rest[i], "--steps") && i + 1 < nrest && replay_steps_valid(rest[i + 1]))
            o.steps = rest[++i];
        else if (rest[i][0] != '-' && !dir)
            dir = rest[i];
        else {
            cli_errorf(usage, "unexpected argument '%s'", rest[i]);
            return CLI_BAD_INPUT;
        }
    }
    if (!dir) {
        cli_error("no spool directory given", NULL, usage);
        return CLI_BAD_INPUT;
    }
    o.server = c.server;
    o.ca_file = c.ca_file[0] ? c.ca_file : NULL;
    if (!o.token) {
        const char *t = getenv("LOCKSTEP_TOKEN");
        if (t && *t)
            o.token = t;
    }
    replay_stats st;
    int rc = replay_tree(dir, &o, &st);
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
