/* cmd_narrow.c - `lockstep narrow GROUP`: re-run a diverged twin group with a fine trace window and name the record. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/proc.h"
#include "common/dtype.h"

#define MAX_RUNS 16
#define MAX_ARGS 256

static const char *const usage =
    "usage: lockstep narrow GROUP [--level modules|ops] [--window K] [--timeout SECONDS] [--server URL] [--json]";

/* A run of the group, as needed to submit it again. */
typedef struct nrun {
    char run_id[64];
    char command[4096];
    char nodes[512];
    char mode[16];
    long ranks;
} nrun;

static int get_json(const client_conf *c, const char *fmt, const char *arg, json_t **out, const char *what)
{
    char esc[600], path[900];
    client_escape(arg, esc, sizeof(esc));
    snprintf(path, sizeof(path), fmt, esc);
    return client_get(c, path, out, what);
}

/* resubmit - run `r` again on its nodes, as a member of `group`, traced with `spec`. */
static int resubmit(const nrun *r, const char *group, const char *spec)
{
    char cmd[4096], ntasks[32], nodelist[600], twin[240], trace[640], mode[40];
    snprintf(cmd, sizeof(cmd), "%s", r->command);
    snprintf(ntasks, sizeof(ntasks), "--ntasks=%ld", r->ranks);
    snprintf(nodelist, sizeof(nodelist), "--nodelist=%s", r->nodes);
    snprintf(twin, sizeof(twin), "--lockstep-twin=%s", group);
    snprintf(trace, sizeof(trace), "--lockstep-trace=%s", spec);
    snprintf(mode, sizeof(mode), "--lockstep=%s", r->mode[0] ? r->mode : "fp");
    char *av[MAX_ARGS];
    int k = 0;
    av[k++] = "srun";
    av[k++] = "--immediate=60";
    av[k++] = "--mpi=pmix";
    av[k++] = ntasks;
    if (r->nodes[0])
        av[k++] = nodelist;
    av[k++] = mode;
    av[k++] = twin;
    av[k++] = trace;
    /* The stored command is the step's argv joined by spaces. */
    for (char *save, *tok = strtok_r(cmd, " ", &save); tok && k < MAX_ARGS - 1; tok = strtok_r(NULL, " ", &save))
        av[k++] = tok;
    av[k] = NULL;
    static char out[1 << 16];
    return proc_run(av, out, sizeof(out));
}

/* A record of one run at one step and rank, from the records endpoint. */
static json_t *records_at(const client_conf *c, const char *run_id, long rank, int64_t step)
{
    char esc[200], path[600];
    client_escape(run_id, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=%ld&step=%" PRId64 "&limit=100000", esc, rank, step);
    json_t *reply;
    if (client_get(c, path, &reply, "cannot fetch records"))
        return NULL;
    return reply;
}

static json_t *find(json_t *recs, const char *name, json_int_t occ)
{
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        const char *n = json_string_value(json_object_get(r, "name"));
        if (n && !strcmp(n, name) && json_integer_value(json_object_get(r, "occurrence")) == occ)
            return r;
    }
    return NULL;
}

static int same_str(json_t *a, json_t *b, const char *key)
{
    const char *x = json_string_value(json_object_get(a, key)), *y = json_string_value(json_object_get(b, key));
    return (!x && !y) || (x && y && !strcmp(x, y));
}

/* The verdict for one rank: the first differing record, and the first whose
 * output differs while its input fingerprints match. */
typedef struct verdict {
    json_t *first, *first_ref;   /* borrowed from the record arrays */
    json_t *clean, *clean_ref;   /* inputs matched, output differs */
} verdict;

static void compare_rank(json_t *odd, json_t *ref, verdict *v)
{
    size_t i;
    json_t *r;
    memset(v, 0, sizeof(*v));
    json_array_foreach(odd, i, r)
    {
        json_t *m = find(ref, json_string_value(json_object_get(r, "name")),
                         json_integer_value(json_object_get(r, "occurrence")));
        int differs = !m || !same_str(r, m, "fp") || !same_str(r, m, "dtype");
        if (!differs)
            continue;
        if (!v->first) {
            v->first = r;
            v->first_ref = m;
        }
        json_t *in = json_object_get(r, "inputs");
        if (m && json_array_size(in) && json_equal(in, json_object_get(m, "inputs"))) {
            v->clean = r;
            v->clean_ref = m;
            return;
        }
    }
}

static void print_record(const char *label, json_t *r, json_t *ref, long rank)
{
    printf("%s:\n  step %" JSON_INTEGER_FORMAT ", rank %ld, \"%s\" occurrence %" JSON_INTEGER_FORMAT " (%s %s)\n", label,
           json_integer_value(json_object_get(r, "step")), rank, json_string_value(json_object_get(r, "name")),
           json_integer_value(json_object_get(r, "occurrence")), json_string_value(json_object_get(r, "level")),
           json_string_value(json_object_get(r, "dtype")));
    size_t nin = json_array_size(json_object_get(r, "inputs"));
    if (nin)
        printf("  inputs: %zu fingerprint%s, %s\n", nin, nin == 1 ? "" : "s",
               ref && json_equal(json_object_get(r, "inputs"), json_object_get(ref, "inputs")) ? "equal in both runs"
                                                                                                 : "different");
    printf("  odd run fp %s", json_string_value(json_object_get(r, "fp")));
    if (json_object_get(r, "value_bits"))
        printf("  value %.17g", json_real_value(json_object_get(r, "value")));
    printf("\n  reference fp %s", ref ? json_string_value(json_object_get(ref, "fp")) : "(absent)");
    if (ref && json_object_get(ref, "value_bits"))
        printf("  value %.17g", json_real_value(json_object_get(ref, "value")));
    printf("\n");
}

int cmd_narrow(int argc, char **argv)
{
    client_conf c;
    if (client_conf_load(&c, &argc, argv) < 0)
        return CLI_BAD_INPUT;
    const char *group = NULL, *level = "modules";
    long window = 1, timeout = 180;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--level") && i + 1 < argc)
            level = argv[++i];
        else if (!strcmp(argv[i], "--window") && i + 1 < argc)
            window = atol(argv[++i]);
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
            timeout = atol(argv[++i]);
        else if (argv[i][0] != '-' && !group)
            group = argv[i];
        else {
            cli_errorf(usage, "unexpected argument '%s'", argv[i]);
            return CLI_BAD_INPUT;
        }
    }
    if (!group || level_parse(level) < LS_LEVEL_MODULE || window < 0) {
        cli_error("narrow needs a group, and a level of modules or ops", NULL, usage);
        return CLI_BAD_INPUT;
    }

    json_t *tw;
    int rc = get_json(&c, "/api/v1/twins/%s", group, &tw, "cannot read the twin group");
    if (rc)
        return rc;
    const char *status = json_string_value(json_object_get(tw, "status"));
    json_t *fd = json_object_get(tw, "first_divergence");
    if (!status || strcmp(status, "diverged") || !json_is_object(fd)) {
        cli_errorf("narrow works on a diverged group; see lockstep twins GROUP", "group %s is %s: nothing to narrow",
                   group, status ? status : "unknown");
        json_decref(tw);
        return CLI_BAD_INPUT;
    }
    int64_t step = json_integer_value(json_object_get(fd, "step"));
    char ranks[512] = "";
    size_t i;
    json_t *pr;
    json_array_foreach(json_object_get(tw, "per_rank"), i, pr)
    {
        if (json_integer_value(json_object_get(pr, "step")) > step + window)
            continue;
        size_t n = strlen(ranks);
        snprintf(ranks + n, sizeof(ranks) - n, "%s%" JSON_INTEGER_FORMAT, n ? "," : "",
                 json_integer_value(json_object_get(pr, "rank")));
    }

    nrun runs[MAX_RUNS];
    size_t n_runs = 0;
    json_t *r;
    json_array_foreach(json_object_get(tw, "runs"), i, r)
    {
        if (n_runs == MAX_RUNS)
            break;
        json_t *d;
        const char *id = json_string_value(json_object_get(r, "run_id"));
        if (!id || (rc = get_json(&c, "/api/v1/runs/%s", id, &d, "cannot read a run of the group"))) {
            json_decref(tw);
            return rc ? rc : CLI_SERVER_ERROR;
        }
        nrun *x = &runs[n_runs++];
        snprintf(x->run_id, sizeof(x->run_id), "%s", id);
        snprintf(x->command, sizeof(x->command), "%s", json_string_value(json_object_get(d, "command")) ?: "");
        snprintf(x->nodes, sizeof(x->nodes), "%s", json_string_value(json_object_get(d, "nodes")) ?: "");
        snprintf(x->mode, sizeof(x->mode), "%s", json_string_value(json_object_get(d, "mode")) ?: "fp");
        x->ranks = (long)json_integer_value(json_object_get(d, "ranks"));
        json_decref(d);
        if (!x->command[0] || x->ranks < 1) {
            cli_errorf("runs registered by the SPANK plugin carry their command", "run %s has no stored command", id);
            json_decref(tw);
            return CLI_BAD_INPUT;
        }
    }
    json_decref(tw);

    char group2[200], spec[600];
    snprintf(group2, sizeof(group2), "%.150s.narrow-%ld", group, (long)time(NULL));
    snprintf(spec, sizeof(spec), "collectives;%s:steps=%" PRId64 "-%" PRId64 "%s%s", level,
             step - window > 0 ? step - window : 0, step + window, ranks[0] ? ":ranks=" : "", ranks);
    printf("narrowing %s: first divergence at step %" PRId64 " (ranks %s); re-running its %zu runs on their nodes\n",
           group, step, ranks[0] ? ranks : "?", n_runs);
    printf("  as group %s with LOCKSTEP_TRACE='%s'\n", group2, spec);
    fflush(stdout);
    for (size_t k = 0; k < n_runs; k++) {
        int st = resubmit(&runs[k], group2, spec);
        if (st != 0)
            fprintf(stderr, "lockstep: the re-run of %s exited %d; comparing what it recorded\n", runs[k].run_id, st);
    }

    /* Wait for the new group's verdict. */
    json_t *t2 = NULL;
    const char *st2 = NULL;
    for (long waited = 0; waited <= timeout * 5; waited++) {
        json_decref(t2);
        if ((rc = get_json(&c, "/api/v1/twins/%s", group2, &t2, "cannot read the re-run group")))
            return rc;
        st2 = json_string_value(json_object_get(t2, "status"));
        if (st2 && strcmp(st2, "pending"))
            break;
        usleep(200000);
    }
    if (!st2 || strcmp(st2, "diverged")) {
        printf("the re-runs %s: the divergence did not reproduce within %ld s (nondeterministic software?)\n",
               st2 && !strcmp(st2, "match") ? "matched" : "are still pending", timeout);
        if (c.json) {
            json_dumpf(t2, stdout, JSON_INDENT(2));
            printf("\n");
        }
        json_decref(t2);
        return CLI_DIVERGED;
    }

    /* The odd run against a majority (or the first) run, on each rank that diverged first. */
    json_t *fd2 = json_object_get(t2, "first_divergence");
    int64_t s2 = json_integer_value(json_object_get(fd2, "step"));
    const char *odd = json_string_value(json_object_get(fd2, "odd_run_id")), *ref = NULL;
    json_array_foreach(json_object_get(fd2, "runs"), i, r)
    {
        const char *id = json_string_value(json_object_get(r, "run_id"));
        if (odd && strcmp(id, odd) && json_is_true(json_object_get(r, "majority")) && !ref)
            ref = id;
    }
    if (!odd || !ref) {
        ref = json_string_value(json_object_get(json_array_get(json_object_get(fd2, "runs"), 0), "run_id"));
        odd = json_string_value(json_object_get(json_array_get(json_object_get(fd2, "runs"), 1), "run_id"));
    }
    json_t *best = NULL, *best_ref = NULL, *first = NULL, *first_ref = NULL, *keep = json_array();
    long best_rank = -1, first_rank = -1;
    json_array_foreach(json_object_get(t2, "per_rank"), i, pr)
    {
        if (json_integer_value(json_object_get(pr, "step")) != s2)
            continue;
        long rank = (long)json_integer_value(json_object_get(pr, "rank"));
        json_t *a = records_at(&c, odd, rank, s2), *b = records_at(&c, ref, rank, s2);
        if (!a || !b) {
            json_decref(a);
            json_decref(b);
            continue;
        }
        json_array_append_new(keep, a);
        json_array_append_new(keep, b);
        verdict v;
        compare_rank(json_object_get(a, "items"), json_object_get(b, "items"), &v);
        if (v.clean && (!best || json_integer_value(json_object_get(v.clean, "seq")) <
                                     json_integer_value(json_object_get(best, "seq")))) {
            best = v.clean, best_ref = v.clean_ref, best_rank = rank;
        }
        if (v.first && !first)
            first = v.first, first_ref = v.first_ref, first_rank = rank;
    }
    printf("\nre-run group %s diverged at step %" PRId64 "; odd run %s, reference %s\n", group2, s2, odd, ref);
    if (best)
        print_record("first record whose output differs while its inputs matched", best, best_ref, best_rank);
    else if (first)
        print_record("first differing record at the finest level traced (no input fingerprints to clear it)", first,
                     first_ref, first_rank);
    else
        printf("the records of step %" PRId64 " could not be compared\n", s2);
    json_decref(keep);
    json_decref(t2);
    return CLI_OK;
}
