/* cmd_diff.c - `lockstep diff A B`: where two runs' traces part, for people (text) or machines (--json). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/remote.h"
#include "cli/diff.h"
#include "cli/recjson.h"
#include "common/dtype.h"
#include "common/json/mdiff.h"
#include "common/site.h"

static void fmt_shape(const rec_record *r, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "[");
    for (unsigned i = 0; i < r->ndim && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%" PRId64, i ? "," : "", r->shape[i]);
    if (n < cap)
        snprintf(out + n, cap - n, "]");
}

static const char *kind_text(diff_kind k)
{
    switch (k) {
    case DIFF_CONTENT: return "fingerprints differ";
    case DIFF_DTYPE: return "dtype differs";
    case DIFF_SHAPE: return "shape or size differs";
    case DIFF_MISSING: return "record missing in B";
    case DIFF_EXTRA: return "extra record in B";
    case DIFF_ONLY_A: return "rank present in A only";
    case DIFF_ONLY_B: return "rank present in B only";
    default: return "match";
    }
}

/* is_origin - 1 when `rank` is one of the cause's origin ranks. */
static int is_origin(const diff_result *res, uint32_t rank)
{
    for (int i = 0; i < res->cause.norigin; i++)
        if (res->cause.origin[i] == (int)rank)
            return 1;
    return 0;
}

/* suggestion - the ignore rule for the first divergence's call site (every-rank), into `out`. */
static void suggestion(const diff_result *res, char *out, size_t cap)
{
    out[0] = 0;
    const cause_rank *f = res->cause.first;
    if (res->cause.kind != CAUSE_EVERY_RANK || !f)
        return;
    const diff_rank *d = diff_rank_of(res, (uint32_t)f->rank);
    const rec_record *r = d ? (d->a ? d->a : d->b) : NULL;
    site_suggest_ignore(r && rec_has_site(r) ? &r->site : NULL, f->name, f->name_len, out, cap);
}

static void print_side(const char *label, const rec_record *r)
{
    char fp[17], shape[160], val[64];
    if (!r) {
        printf("      %s  (absent)\n", label);
        return;
    }
    rec_fp_hex(r->fp, fp);
    fmt_shape(r, shape, sizeof(shape));
    printf("      %s  seq %-6" PRIu64 " fp %s  %s %s %s", label, r->seq, fp, level_name(r->level),
           dtype_name(r->dtype), shape);
    if (r->flags & REC_HAS_VALUE) {
        dtype_format_value(r->dtype, r->value, val, sizeof(val));
        printf("  value %s (0x%llx)", val, (unsigned long long)r->value);
    }
    if (r->n_inputs)
        printf("  inputs %016llx%s", (unsigned long long)r->inputs[0], r->n_inputs > 1 ? " ..." : "");
    printf("\n");
    if (rec_has_site(r)) {
        char site[SITE_TEXT_MAX];
        site_format(&r->site, site, sizeof(site));
        printf("         at %s\n", site);
    }
}

static void print_rank_notes(const char *label, const td_run *run)
{
    for (size_t i = 0; i < run->n_ranks; i++) {
        const td_rank *r = &run->ranks[i];
        if (r->status != REC_OK)
            printf("note: %s rank %u: reading stopped at byte %zu after %zu records (%s: %s)\n", label, r->hdr.rank,
                   r->err_off, r->n, rec_status_name(r->status), r->err);
    }
}

/* run_label - a run's id for the report ("" when it holds no rank). */
static const char *run_label(const td_run *r)
{
    return r->n_ranks ? r->ranks[0].hdr.run_id : "";
}

static void print_text(const td_run *a, const td_run *b, const diff_result *res, const char *config)
{
    if (res->diverged)
        printf("DIVERGED: first divergence at step %" PRId64 "\n", res->first_step);
    else if (!res->compared)
        printf("INCOMPLETE: the runs share no records to compare (nothing says they would agree)\n");
    else
        printf("MATCH: every compared record is bit-identical (%zu records)\n", res->compared);
    printf("  A  %s  run %s  %zu ranks  %zu records\n", a->path, run_label(a), a->n_ranks, a->n_records);
    printf("  B  %s  run %s  %zu ranks  %zu records\n", b->path, run_label(b), b->n_ranks, b->n_records);
    if (res->overlap)
        printf("  compared steps both runs hold: %" PRId64 "..%" PRId64 "\n", res->overlap_lo, res->overlap_hi);
    print_rank_notes("A", a);
    print_rank_notes("B", b);
    if (res->diverged) {
        printf("  cause: %s: %s\n", cause_name(res->cause.kind), res->cause.why);
        if (res->cause.norigin) {
            printf("  origin rank%s:", res->cause.norigin > 1 ? "s" : "");
            for (int i = 0; i < res->cause.norigin; i++)
                printf(" %d", res->cause.origin[i]);
            printf("\n");
        }
        char pat[SITE_PATTERN_MAX + 1];
        suggestion(res, pat, sizeof(pat));
        if (pat[0])
            printf("  if these are run-specific values (timings, process ids), leave them out: LOCKSTEP_IGNORE='%s' "
                   "(srun/sbatch --lockstep-ignore='%s')\n",
                   pat, pat);
        if (config)
            printf("  configuration: %s\n", config);
    }
    printf("\n");
    for (size_t i = 0; i < res->n_ranks; i++) {
        const diff_rank *d = &res->ranks[i];
        if (d->kind == DIFF_MATCH) {
            printf("rank %-4u match (%zu records)\n", d->rank, d->compared);
            continue;
        }
        const rec_record *r = d->a ? d->a : d->b;
        printf("rank %-4u DIVERGED at step %" PRId64 ": %s%s\n", d->rank, d->step, kind_text(d->kind),
               is_origin(res, d->rank) ? "  <- origin" : d->step == res->first_step ? "  <- first" : "");
        if (r)
            printf("      record \"%.*s\" occurrence %u\n", (int)r->name_len, r->name, r->occurrence);
        if (d->kind != DIFF_ONLY_B)
            print_side("A", d->a);
        if (d->kind != DIFF_ONLY_A)
            print_side("B", d->b);
        if (d->has_ulp) {
            if (d->ulp == UINT64_MAX)
                printf("      distance: NaN involved\n");
            else
                printf("      distance: %" PRIu64 " ulp\n", d->ulp);
        }
        if (d->first_chunk >= 0)
            printf("      first differing bytes in MiB %" PRId64 " of the tensor\n", d->first_chunk);
    }
}

static json_t *run_json(const td_run *r)
{
    json_t *notes = json_array();
    for (size_t i = 0; i < r->n_ranks; i++) {
        const td_rank *x = &r->ranks[i];
        if (x->status != REC_OK)
            json_array_append_new(notes, json_pack("{s:I, s:s, s:I, s:s}", "rank", (json_int_t)x->hdr.rank,
                                                   "stopped", rec_status_name(x->status), "offset",
                                                   (json_int_t)x->err_off, "detail", x->err));
    }
    return json_pack("{s:s, s:s, s:I, s:I, s:o}", "path", r->path, "run_id", run_label(r), "ranks",
                     (json_int_t)r->n_ranks, "records", (json_int_t)r->n_records, "notes", notes);
}

static int print_json(const td_run *a, const td_run *b, const diff_result *res, const char *config)
{
    json_t *ranks = json_array();
    for (size_t i = 0; i < res->n_ranks; i++) {
        const diff_rank *d = &res->ranks[i];
        json_t *o = json_pack("{s:I, s:s, s:I}", "rank", (json_int_t)d->rank, "status",
                              d->kind == DIFF_MATCH ? "match" : "diverged", "compared", (json_int_t)d->compared);
        if (d->kind != DIFF_MATCH) {
            json_object_set_new(o, "kind", json_string(diff_kind_name(d->kind)));
            json_object_set_new(o, "step", json_integer(d->step));
            json_object_set_new(o, "a", d->a ? rec_to_json(d->a) : json_null());
            json_object_set_new(o, "b", d->b ? rec_to_json(d->b) : json_null());
            if (d->has_ulp)
                json_object_set_new(o, "ulp", d->ulp == UINT64_MAX ? json_null() : json_integer((json_int_t)d->ulp));
            if (d->first_chunk >= 0)
                json_object_set_new(o, "first_chunk", json_integer(d->first_chunk));
        }
        json_array_append_new(ranks, o);
    }
    json_t *top = json_pack("{s:b, s:o, s:o, s:o, s:o}", "match", !res->diverged, "first_step",
                            res->diverged ? json_integer(res->first_step) : json_null(), "a", run_json(a), "b",
                            run_json(b), "ranks", ranks);
    if (res->overlap)
        json_object_set_new(top, "overlap", json_pack("{s:I, s:I}", "from", (json_int_t)res->overlap_lo, "to",
                                                      (json_int_t)res->overlap_hi));
    json_object_set_new(top, "status",
                        json_string(res->diverged ? "diverged" : res->compared ? "match" : "incomplete"));
    json_object_set_new(top, "compared", json_integer((json_int_t)res->compared));
    if (res->diverged) {
        json_t *origin = json_array();
        for (int i = 0; i < res->cause.norigin; i++)
            json_array_append_new(origin, json_integer(res->cause.origin[i]));
        char pat[SITE_PATTERN_MAX + 1];
        suggestion(res, pat, sizeof(pat));
        json_object_set_new(top, "cause", json_string(cause_name(res->cause.kind)));
        json_object_set_new(top, "cause_detail", json_string(res->cause.why));
        json_object_set_new(top, "origin_ranks", origin);
        json_object_set_new(top, "thin_evidence", json_boolean(res->cause.thin));
        json_object_set_new(top, "suggest_ignore", pat[0] ? json_string(pat) : json_null());
        json_object_set_new(top, "configuration", config ? json_string(config) : json_null());
    }
    int rc = top ? json_dumpf(top, stdout, JSON_INDENT(2)) : -1;
    printf("\n");
    json_decref(top);
    return rc;
}

/* is_path - 1 when `p` names something on this machine. */
static int is_path(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* load_side - load one run: a trace directory or file when the path exists,
 * else a run id on the server (when one is configured). */
static int load_side(const char *label, const char *arg, const client_conf *c, td_run *run, json_t **info)
{
    char why[1024];
    if (is_path(arg) || !c) {
        if (td_load(run, arg, why, sizeof(why)) == 0)
            return 0;
        char fact[64];
        snprintf(fact, sizeof(fact), "cannot read run %s", label);
        cli_error(fact, why,
                  "pass a trace directory (LOCKSTEP_TRACE_DIR of a run), a .lstrace file, or a run id with --server");
        return CLI_BAD_INPUT;
    }
    return remote_load_run(c, arg, run, info);
}

/* run_of_info - a run document (GET /api/v1/runs/{id}) as the manifest diff's input (strings borrowed). */
static md_run run_of_info(json_t *info)
{
    json_t *run = json_object_get(info, "run");
    if (!run)
        run = info;
    return (md_run){json_string_value(json_object_get(run, "run_id")),
                    json_string_value(json_object_get(run, "job_id")),
                    json_string_value(json_object_get(run, "step_id")),
                    json_string_value(json_object_get(run, "user")),
                    json_string_value(json_object_get(run, "nodes")),
                    json_string_value(json_object_get(run, "command")),
                    (long)json_integer_value(json_object_get(run, "ranks")),
                    json_object_get(info, "manifests")};
}

int cmd_diff(int argc, char **argv)
{
    int json = 0, overlap = 0;
    const char *paths[2];
    int n = 0;
    const char *usage = "usage: lockstep diff [--json] [--overlap] A B   (trace directories, or run ids with --server)";

    /* A server is used for arguments that are not local paths. */
    client_conf conf, *c = NULL;
    int remote_wanted = getenv("LOCKSTEP_SERVER") != NULL;
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--server", 8) == 0)
            remote_wanted = 1;
    if (remote_wanted) {
        if (client_conf_load(&conf, &argc, argv) < 0)
            return CLI_BAD_INPUT;
        c = &conf;
        json = conf.json;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--overlap") == 0) {
            overlap = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_errorf(usage, "unknown option '%s'", argv[i]);
            return CLI_BAD_INPUT;
        } else if (n < 2) {
            paths[n++] = argv[i];
        } else {
            cli_error("diff takes two runs", NULL, usage);
            return CLI_BAD_INPUT;
        }
    }
    if (n != 2) {
        cli_error("diff takes two runs", NULL, usage);
        return CLI_BAD_INPUT;
    }

    td_run a, b;
    json_t *info_a = NULL, *info_b = NULL, *md = NULL;
    int rc = load_side("A", paths[0], c, &a, &info_a);
    if (rc)
        return rc;
    if ((rc = load_side("B", paths[1], c, &b, &info_b))) {
        td_release(&a);
        json_decref(info_a);
        return rc;
    }
    /* Runs on the server come with their manifests: the one manifest diff says whether their configurations
     * differ (trace files carry no manifest: there the cause rule goes without it). */
    const char *config = NULL;
    if (info_a && info_b) {
        md_run runs[2] = {run_of_info(info_a), run_of_info(info_b)};
        md = md_diff(runs, 2);
        if (json_is_true(json_object_get(md, "explains")))
            config = json_string_value(json_object_get(md, "summary"));
    }
    diff_result res;
    if (diff_runs(&a, &b, overlap, &res) < 0 || diff_cause(&res, config != NULL) < 0) {
        cli_error("out of memory comparing the runs", NULL, NULL);
        rc = CLI_BAD_INPUT;
    } else {
        if (json)
            print_json(&a, &b, &res, config);
        else
            print_text(&a, &b, &res, config);
        rc = res.diverged || !res.compared ? CLI_DIVERGED : CLI_OK;
    }
    diff_release(&res);
    json_decref(md);
    json_decref(info_a);
    json_decref(info_b);
    td_release(&a);
    td_release(&b);
    return rc;
}
