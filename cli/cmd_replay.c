/* cmd_replay.c - `lockstep replay DIR`: send what agents left in a spool directory to lockstepd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/replay.h"
#include "cli/cli.h"

int cmd_replay(int argc, char **argv)
{
    replay_opts o = {.timeout_ms = 10000, .wait_ms = 10000, .log = stderr};
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--server") && i + 1 < argc)
            o.server = argv[++i];
        else if (!strcmp(argv[i], "--token") && i + 1 < argc)
            o.token = argv[++i];
        else if (!strcmp(argv[i], "--ca-file") && i + 1 < argc)
            o.ca_file = argv[++i];
        else if (!strcmp(argv[i], "--quiet"))
            o.log = NULL;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc && replay_steps_valid(argv[i + 1]))
            o.steps = argv[++i];
        else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else {
            cli_errorf("usage: lockstep replay [--server URL] [--token T] [--ca-file F] [--steps LIST|asked] [--quiet] DIR",
                       "unexpected argument '%s'", argv[i]);
            return CLI_BAD_INPUT;
        }
    }
    if (!dir) {
        cli_error("no spool directory given", NULL,
                  "usage: lockstep replay [--server URL] [--token T] [--ca-file F] [--steps LIST|asked] [--quiet] DIR");
        return CLI_BAD_INPUT;
    }
    if (!o.token) {
        const char *t = getenv("LOCKSTEP_TOKEN");
        if (t && *t)
            o.token = t;
    }
    replay_stats st;
    int rc = replay_tree(dir, &o, &st);
    printf("replayed %llu batch(es), %llu record(s) from %u of %u spool(s) in %s", (unsigned long long)st.batches,
           (unsigned long long)st.records, st.dirs_done, st.dirs, dir);
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
                  "check that lockstepd is up (--server URL), then run lockstep replay again");
        return 3;
    }
    return CLI_OK;
}
