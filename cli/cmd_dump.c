/* cmd_dump.c - `lockstep dump TRACE`: a trace file's records as JSON lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/recjson.h"
#include "common/fsutil.h"

int cmd_dump(int argc, char **argv)
{
    if (argc != 2) {
        cli_error("dump needs one trace file", NULL, "usage: lockstep dump TRACE ('-' reads stdin)");
        return CLI_BAD_INPUT;
    }
    const char *path = argv[1];
    fs_blob blob;
    if (fs_blob_load(&blob, path) < 0) {
        char detail[512];
        snprintf(detail, sizeof(detail), "%s: %s", path, strerror(errno));
        cli_error("cannot read the trace", detail,
                  errno == EISDIR ? "dump takes one rank's file, e.g. DIR/rank-00000.lstrace" : NULL);
        return CLI_BAD_INPUT;
    }
    int rc = CLI_OK;
    rec_reader rd;
    if (rec_reader_init(&rd, blob.data, blob.len) < 0) {
        char detail[600];
        snprintf(detail, sizeof(detail), "%s: %s", path, rd.err);
        cli_error("not a readable trace", detail, "lockstep dump reads the .lstrace files an agent writes");
        rc = CLI_BAD_INPUT;
        goto out_release;
    }
    rec_record r;
    int got;
    while ((got = rec_reader_next(&rd, &r)) == 1) {
        json_t *o = rec_to_json(&r);
        if (!o || json_dumpf(o, stdout, JSON_COMPACT) < 0 || fputc('\n', stdout) == EOF) {
            json_decref(o);
            cli_error("cannot write the output", NULL, NULL);
            rc = CLI_BAD_INPUT;
            goto out_reader;
        }
        json_decref(o);
    }
    if (got < 0) {
        cli_error("out of memory", NULL, NULL);
        rc = CLI_BAD_INPUT;
    } else if (rd.status != REC_OK) {
        char fact[700], detail[300];
        snprintf(fact, sizeof(fact), "%s: reading stopped after %llu records at byte %zu (%s)", path,
                 (unsigned long long)rd.count, rd.err_off, rec_status_name(rd.status));
        snprintf(detail, sizeof(detail), "%s", rd.err);
        cli_error(fact, detail,
                  rd.status == REC_TORN ? "the writer stopped mid-record (a crash?); the records above are whole"
                                        : "the file is damaged after this point; the records above are intact");
        rc = CLI_BAD_INPUT;
    }
out_reader:
    rec_reader_release(&rd);
out_release:
    fs_blob_release(&blob);
    return rc;
}
