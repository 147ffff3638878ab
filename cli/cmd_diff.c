/* cmd_diff.c - `lockstep diff A B`: where two runs' traces part, for people (text) or machines (--json). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/remote.h"
#include "cli/diff.h"
#include "cli/logical.h"
#include "cli/recjson.h"
#include "common/dtype.h"
#include "common/json/mdiff.h"
#include "common/lsfp1.h"
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
    case DIFF_SCALES: return "scales differ (the values match)";
    case DIFF_RESTORE: return "restored state differs";
    default: return "match";
    }
}

/* restore_text - what a restore difference is, in words. */
static const char *restore_text(const diff_rank *d)
{
    switch (d->restore.status) {
    case REC_RESTORE_NOT_RESTORED: return "was saved but not restored";
    case REC_RESTORE_NOT_SAVED: return "was restored but never saved";
    default: break;
    }
    switch (d->restore.diff) {
    case REC_DIFF_DTYPE: return "was restored with another dtype";
    case REC_DIFF_SHAPE: return "was restored with another shape or size";
    case REC_DIFF_SCALES: return "was restored with other scales";
    default: return "was restored with other contents";
    }
}

/* print_chunk - where the first differing chunk `c` of `r` lies. */
static void print_chunk(const rec_record *r, int64_t c)
{
    uint64_t cb = rec_chunk_bytes(r);
    if (cb == FP_CHUNK_BYTES)
        printf("      first differing bytes in MiB %" PRId64 " of the tensor\n", c);
    else
        printf("      first differing bytes in chunk %" PRId64 " of the tensor (bytes %" PRIu64 "..%" PRIu64
               ", %" PRIu64 "-byte chunks)\n",
               c, (uint64_t)c * cb, (uint64_t)(c + 1) * cb - 1, cb);
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
    if ((res->cause.kind != CAUSE_EVERY_RANK && !res->cause.local) || !f)
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
    printf("      %s  seq %-6" PRIu64 " fp %s  %s %s %s", label, r->seq, fp,
           (r->flags & REC_STATE_SAVED)      ? "saved"
           : (r->flags & REC_STATE_RESTORED) ? "restored"
                                             : level_name(r->level),
           dtype_name(r->dtype), shape);
    rec_ext x;
    rec_ext_of(r, &x);
    if (x.has_scales) {
        char sfp[17];
        rec_fp_hex(x.scales_fp, sfp);
        printf("  scales %s %s", sfp, dtype_name(x.scales_dtype));
    }
    if (x.has_shard)
        printf("  shard @%" PRIu64 "/%" PRIu64, x.shard_offset, x.shard_total);
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

/* tensor_of - the logical tensor behind record `r` of logical run `lg`, or NULL. */
static const shard_tensor *tensor_of(const lg_run *lg, const rec_record *r)
{
    if (!lg || !r || !lg->run.n_ranks)
        return NULL;
    const td_rank *k = &lg->run.ranks[0];
    if (r < k->recs || r >= k->recs + k->n)
        return NULL;
    return &lg->tensors[r - k->recs];
}

/* print_holders - which ranks of each run hold the differing chunk `c`. */
static void print_holders(const char *label, const shard_tensor *t, int64_t c)
{
    uint32_t ranks[64];
    if (!t)
        return;
    size_t n = shard_holders(t, (uint64_t)c * FP_CHUNK_BYTES, (uint64_t)(c + 1) * FP_CHUNK_BYTES, ranks, 64);
    printf("      %s holds it on rank%s", label, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++)
        printf("%s%u", i ? "," : " ", ranks[i]);
    printf(" (%zu shard%s in all)\n", t->n_pieces, t->n_pieces == 1 ? "" : "s");
}

static void print_text(const td_run *a, const td_run *b, const diff_result *res, const char *config, const lg_run *la,
                       const lg_run *lb)
{
    if (res->diverged)
        printf("DIVERGED: first divergence at step %" PRId64 "%s\n", res->first_step, la ? " (logical tensors)" : "");
    else if (!res->compared)
        printf("INCOMPLETE: the runs share no %s to compare (nothing says they would agree)\n",
               la ? "logical tensors" : "records");
    else
        printf("MATCH: every compared %s is bit-identical (%zu %s)\n", la ? "logical tensor" : "record", res->compared,
               la ? "tensors" : "records");
    if (la) {
        printf("  A  %s  run %s  %zu ranks  %zu logical tensors (%zu per-rank records not compared)\n", la->run.path,
               run_label(a), la->n_ranks, la->run.n_records, la->n_plain);
        printf("  B  %s  run %s  %zu ranks  %zu logical tensors (%zu per-rank records not compared)\n", lb->run.path,
               run_label(b), lb->n_ranks, lb->run.n_records, lb->n_plain);
    } else {
        printf("  A  %s  run %s  %zu ranks  %zu records\n", a->path, run_label(a), a->n_ranks, a->n_records);
        printf("  B  %s  run %s  %zu ranks  %zu records\n", b->path, run_label(b), b->n_ranks, b->n_records);
    }
    if (res->overlap)
        printf("  compared steps both runs hold: %" PRId64 "..%" PRId64 "\n", res->overlap_lo, res->overlap_hi);
    print_rank_notes("A", la ? la->src : a);
    print_rank_notes("B", lb ? lb->src : b);
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
            printf("  %s: LOCKSTEP_IGNORE='%s' (srun/sbatch --lockstep-ignore='%s')\n", cause_ignore_why(&res->cause),
                   pat, pat);
        if (config)
            printf("  configuration: %s\n", config);
    }
    printf("\n");
    for (size_t i = 0; i < res->n_ranks; i++) {
        const diff_rank *d = &res->ranks[i];
        char who[32];
        snprintf(who, sizeof(who), la ? "logical  " : "rank %-4u", d->rank);
        if (d->kind == DIFF_MATCH) {
            printf("%s match (%zu %s", who, d->compared, la ? "tensors" : "records");
            if (d->restores)
                printf("; %zu restored state block%s: %zu verified, %zu with nothing to compare", d->restores,
                       d->restores == 1 ? "" : "s", d->restores_same, d->restores_unverified);
            printf(")\n");
            continue;
        }
        const rec_record *r = d->a ? d->a : d->b;
        int both_scales = d->kind == DIFF_CONTENT && d->a && d->b && rec_scales_differ(d->a, d->b);
        if (d->kind == DIFF_RESTORE) {
            printf("%s RESTORE DIFFERENCE at step %" PRId64 ": %s%s\n", who, d->step, kind_text(d->kind),
                   is_origin(res, d->rank)      ? "  <- origin"
                   : d->step == res->first_step ? "  <- first"
                                                : "");
            printf("      state entry \"%.*s\" occurrence %u %s\n", (int)r->name_len, r->name, r->occurrence,
                   restore_text(d));
            if (d->restore.not_restored || d->restore.not_saved) /* the whole block's account, as lockstepd's */
                printf("      %zu saved entr%s not restored, %zu restored entr%s never saved\n",
                       d->restore.not_restored, d->restore.not_restored == 1 ? "y" : "ies", d->restore.not_saved,
                       d->restore.not_saved == 1 ? "y" : "ies");
            printf("      %s restored step %" PRId64 "; compared with %s's %s\n", d->restored_by ? "B" : "A", d->step,
                   d->restored_by ? "A" : "B", d->restore_ref_saved ? "saved state" : "records of that step");
        } else {
            printf("%s DIVERGED at step %" PRId64 ": %s%s\n", who, d->step,
                   both_scales ? "values and scales differ" : kind_text(d->kind),
                   !la && is_origin(res, d->rank) ? "  <- origin"
                   : d->step == res->first_step   ? "  <- first"
                                                  : "");
            if (r)
                printf("      %s \"%.*s\" occurrence %u\n", la ? "tensor" : "record", (int)r->name_len, r->name,
                       r->occurrence);
        }
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
        if (d->first_chunk >= 0) {
            print_chunk(d->a, d->first_chunk);
            print_holders("A", tensor_of(la, d->a), d->first_chunk);
            print_holders("B", tensor_of(lb, d->b), d->first_chunk);
        }
    }
}

static json_t *run_json(const td_run *r)
{
    size_t state = 0;
    for (size_t i = 0; i < r->n_ranks; i++)
        for (size_t k = 0; k < r->ranks[i].n; k++)
            state += rec_is_state(&r->ranks[i].recs[k]);
    json_t *notes = json_array();
    for (size_t i = 0; i < r->n_ranks; i++) {
        const td_rank *x = &r->ranks[i];
        if (x->status != REC_OK)
            json_array_append_new(notes, json_pack("{s:I, s:s, s:I, s:s}", "rank", (json_int_t)x->hdr.rank, "stopped",
                                                   rec_status_name(x->status), "offset", (json_int_t)x->err_off,
                                                   "detail", x->err));
    }
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:o}", "path", r->path, "run_id", run_label(r), "ranks",
                     (json_int_t)r->n_ranks, "records", (json_int_t)r->n_records, "state_entries", (json_int_t)state,
                     "notes", notes);
}

/* holders_json - the ranks of `t` that hold chunk `c`, as a JSON array. */
static json_t *holders_json(const shard_tensor *t, int64_t c)
{
    uint32_t ranks[64];
    json_t *a = json_array();
    size_t n = t ? shard_holders(t, (uint64_t)c * FP_CHUNK_BYTES, (uint64_t)(c + 1) * FP_CHUNK_BYTES, ranks, 64) : 0;
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ranks[i]));
    return a;
}

static int print_json(const td_run *a, const td_run *b, const diff_result *res, const char *config, const lg_run *la,
                      const lg_run *lb)
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
            if (d->first_chunk >= 0) {
                json_object_set_new(o, "first_chunk", json_integer(d->first_chunk));
                json_object_set_new(o, "chunk_bytes", json_integer((json_int_t)rec_chunk_bytes(d->a)));
                if (la)
                    json_object_set_new(o, "chunk_holders",
                                        json_pack("{s:o, s:o}", "a", holders_json(tensor_of(la, d->a), d->first_chunk),
                                                  "b", holders_json(tensor_of(lb, d->b), d->first_chunk)));
            }
            if (d->kind == DIFF_CONTENT && d->a && d->b && rec_scales_differ(d->a, d->b))
                json_object_set_new(o, "scales_differ", json_true());
            if (d->kind == DIFF_RESTORE) {
                const rec_record *e = d->a ? d->a : d->b;
                json_object_set_new(
                    o, "restore",
                    json_pack("{s:s, s:s%, s:I, s:s, s:s, s:s}", "restored_by", d->restored_by ? "b" : "a", "entry",
                              e->name, (size_t)e->name_len, "occurrence", (json_int_t)e->occurrence, "difference",
                              d->restore.status == REC_RESTORE_DIFFERS ? rec_diff_name(d->restore.diff)
                                                                       : rec_restore_status_name(d->restore.status),
                              "reference", d->restore_ref_saved ? "saved" : "records", "text", restore_text(d)));
                json_t *rs = json_object_get(o, "restore");
                json_object_set_new(rs, "not_restored", json_integer((json_int_t)d->restore.not_restored));
                json_object_set_new(rs, "not_saved", json_integer((json_int_t)d->restore.not_saved));
            }
        }
        if (d->restores)
            json_object_set_new(o, "restores",
                                json_pack("{s:I, s:I, s:I}", "checked", (json_int_t)d->restores, "verified",
                                          (json_int_t)d->restores_same, "unverified",
                                          (json_int_t)d->restores_unverified));
        json_array_append_new(ranks, o);
    }
    json_t *top = json_pack("{s:b, s:o, s:o, s:o, s:o}", "match", !res->diverged, "first_step",
                            res->diverged ? json_integer(res->first_step) : json_null(), "a", run_json(a), "b",
                            run_json(b), "ranks", ranks);
    if (la)
        json_object_set_new(top, "logical",
                            json_pack("{s:I, s:I, s:I, s:I}", "a_tensors", (json_int_t)la->run.n_records, "b_tensors",
                                      (json_int_t)lb->run.n_records, "a_plain", (json_int_t)la->n_plain, "b_plain",
                                      (json_int_t)lb->n_plain));
    if (res->overlap)
        json_object_set_new(
            top, "overlap",
            json_pack("{s:I, s:I}", "from", (json_int_t)res->overlap_lo, "to", (json_int_t)res->overlap_hi));
    json_object_set_new(top, "status",
                        json_string(res->diverged   ? "diverged"
                                    : res->compared ? "match"
                                                    : "incomplete"));
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
    return (md_run){
        json_string_value(json_object_get(run, "run_id")),       json_string_value(json_object_get(run, "job_id")),
        json_string_value(json_object_get(run, "step_id")),      json_string_value(json_object_get(run, "user")),
        json_string_value(json_object_get(run, "nodes")),        json_string_value(json_object_get(run, "command")),
        (long)json_integer_value(json_object_get(run, "ranks")), json_object_get(info, "manifests")};
}

enum { DIFF_OVERLAP = CLI_KEY_LONG, DIFF_LOGICAL };

static int cmd_diff(const cli_args *args)
{
    int json = args->g.json, overlap = cli_args_count(args, DIFF_OVERLAP) > 0,
        logical = cli_args_count(args, DIFF_LOGICAL) > 0;
    if (args->npos != 2)
        return cli_args_fail(args, "diff takes two runs");
    const char *paths[2] = {args->pos[0], args->pos[1]};

    /* A server is used for arguments that are not local paths. */
    client_conf conf, *c = NULL;
    if (getenv("LOCKSTEP_SERVER") || args->g.server) {
        if (client_conf_load(&conf, &args->g) < 0)
            return CLI_BAD_INPUT;
        c = &conf;
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
    lg_run la = {0}, lb = {0};
    const td_run *ca = &a, *cb = &b;
    if (logical) {
        char why[600];
        const char *side = "A";
        if (lg_build(&a, &la, why, sizeof(why)) < 0 || (side = "B", lg_build(&b, &lb, why, sizeof(why)) < 0)) {
            char fact[64];
            snprintf(fact, sizeof(fact), "cannot assemble the logical tensors of run %s", side);
            cli_error(fact, why,
                      "every shard of a tensor must be recorded with ls_tensor_shard at offsets that tile it "
                      "exactly once (docs/api.md)");
            lg_release(&la);
            json_decref(md);
            json_decref(info_a);
            json_decref(info_b);
            td_release(&a);
            td_release(&b);
            return CLI_BAD_INPUT;
        }
        la.src = &a;
        lb.src = &b;
        ca = &la.run;
        cb = &lb.run;
    }
    if (diff_runs(ca, cb, overlap, &res) < 0 || diff_cause(&res, config != NULL, logical) < 0) {
        cli_error("out of memory comparing the runs", NULL, NULL);
        rc = CLI_BAD_INPUT;
    } else {
        if (json)
            print_json(&a, &b, &res, config, logical ? &la : NULL, logical ? &lb : NULL);
        else
            print_text(&a, &b, &res, config, logical ? &la : NULL, logical ? &lb : NULL);
        rc = res.diverged || !res.compared ? CLI_DIVERGED : CLI_OK;
    }
    diff_release(&res);
    json_decref(md);
    json_decref(info_a);
    json_decref(info_b);
    lg_release(&la);
    lg_release(&lb);
    td_release(&a);
    td_release(&b);
    return rc;
}

static const cli_opt diff_opts[] = {
    {"overlap", DIFF_OVERLAP, NULL, NULL, "compare only the steps both runs hold (a run resumed from a checkpoint)"},
    {"logical", DIFF_LOGICAL, NULL, NULL, "compare logical tensors, shards combined: runs of any rank counts"},
    {0},
};

const cli_command cli_cmd_diff = {
    .name = "diff",
    .run = cmd_diff,
    .synopsis = "diff [--json] [--overlap] [--logical] A B",
    .summary = "compare two runs' trace directories (or files), or run ids on the server;\n"
               "--logical: their logical tensors, whatever their rank counts",
    .opts = diff_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
    .complete = {"@dir", "@dir"},
};
