/* cmd_dump.c - `lockstep dump TRACE`: a trace file's records as JSON lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/logical.h"
#include "cli/recjson.h"
#include "common/fsutil.h"

/* dump_logical - the logical tensors of the run at `path` (a trace directory) as JSON lines. */
static int dump_logical(const char *path)
{
    td_run run;
    lg_run lg;
    char why[700];
    if (td_load(&run, path, why, sizeof(why)) < 0) {
        cli_error("cannot read the run", why, "dump --logical takes a trace directory (every rank's file)");
        return CLI_BAD_INPUT;
    }
    if (lg_build(&run, &lg, why, sizeof(why)) < 0) {
        cli_error("cannot assemble the logical tensors", why,
                  "every shard of a tensor must be recorded with ls_tensor_shard at offsets that tile it exactly once");
        td_release(&run);
        return CLI_BAD_INPUT;
    }
    int rc = CLI_OK;
    for (size_t i = 0; i < lg.run.ranks[0].n; i++) {
        const shard_tensor *t = &lg.tensors[i];
        json_t *o = rec_to_json(&lg.run.ranks[0].recs[i]);
        json_t *shards = json_array();
        if (!o || !shards) {
            json_decref(o);
            json_decref(shards);
            rc = CLI_BAD_INPUT;
            break;
        }
        json_object_del(o, "rank");
        json_object_del(o, "seq");
        json_object_del(o, "t_ns");
        for (size_t k = 0; k < t->n_pieces; k++)
            json_array_append_new(shards, json_pack("{s:I, s:I, s:I}", "rank", (json_int_t)t->pieces[k].rank, "offset",
                                                    (json_int_t)t->pieces[k].offset, "nbytes",
                                                    (json_int_t)t->pieces[k].r->nbytes));
        json_object_set_new(o, "shards", shards);
        if (json_dumpf(o, stdout, JSON_COMPACT) < 0 || fputc('\n', stdout) == EOF)
            rc = CLI_BAD_INPUT;
        json_decref(o);
        if (rc)
            break;
    }
    if (rc)
        cli_error("cannot write the output", NULL, NULL);
    else if (lg.n_plain)
        fprintf(stderr, "lockstep: %zu per-rank records that are not shards were left out\n", lg.n_plain);
    lg_release(&lg);
    td_release(&run);
    return rc;
}

enum { DUMP_LOGICAL = CLI_KEY_LONG };

static int cmd_dump(const cli_args *a)
{
    if (a->npos != 1)
        return cli_args_fail(a, cli_args_count(a, DUMP_LOGICAL) ? "dump --logical needs one trace directory"
                                                                : "dump needs one trace file");
    if (cli_args_count(a, DUMP_LOGICAL))
        return dump_logical(a->pos[0]);
    const char *path = a->pos[0];
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

static const cli_opt dump_opts[] = {
    {"logical", DUMP_LOGICAL, NULL, NULL, "a run's logical tensors (DIR: its trace directory), shards combined"},
    {0},
};

const cli_command cli_cmd_dump = {
    .name = "dump",
    .run = cmd_dump,
    .synopsis = "dump TRACE\ndump --logical DIR",
    .summary = "a trace file's records as JSON lines ('-' reads stdin); --logical: a run's logical\n"
               "tensors, its shards combined across ranks",
    .opts = dump_opts,
    .complete = {"@file"},
};
