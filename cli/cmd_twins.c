/* cmd_twins.c - `lockstep twins [GROUP]`: the twin groups, or one group's status, runs, first divergence and
 * classification, as tables (or --json). */
#include <stdio.h>
#include <string.h>

#include "cli/absorbed.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/table.h"

enum { Q_STATUS = CLI_KEY_LONG, Q_USER, Q_NODE, Q_SINCE, Q_LIMIT, Q_CURSOR };

/* str - a JSON member as exact text for a table cell (see client_cell). */
static const char *str(json_t *o, const char *key, char *buf, size_t cap)
{
    return client_cell(o, key, 0, buf, cap);
}

static void print_divergence(json_t *d)
{
    char b[5][64];
    const char *kind = str(d, "kind", b[4], 64);
    int restore = kind && strcmp(kind, "restore") == 0;
    const char *name = json_string_value(json_object_get(d, "name")) ?: "?";
    if (restore)
        printf("first divergence: RESTORE DIFFERENCE at step %s, rank %s: state entry \"%s\" occurrence %s of a "
               "resumed run is not what its twin saved\n",
               str(d, "step", b[0], 64), str(d, "rank", b[1], 64), name, str(d, "occurrence", b[3], 64));
    else if (json_is_true(json_object_get(d, "logical")))
        printf("first divergence: step %s, logical tensor \"%s\" occurrence %s (%s; its shards combined across the "
               "ranks of runs of different rank counts)\n",
               str(d, "step", b[0], 64), name, str(d, "occurrence", b[3], 64),
               kind && strcmp(kind, "missing") == 0 ? "missing in some run" : "contents differ");
    else
        printf("first divergence: step %s, rank %s, record \"%s\" occurrence %s (%s)\n", str(d, "step", b[0], 64),
               str(d, "rank", b[1], 64), name, str(d, "occurrence", b[3], 64),
               kind && strcmp(kind, "missing") == 0 ? "missing in some run" : "contents differ");
    const char *cause = json_string_value(json_object_get(d, "cause"));
    if (cause)
        printf("  cause: %s: %s\n", cause, json_string_value(json_object_get(d, "cause_detail")) ?: "");
    json_t *origin = json_object_get(d, "origin_ranks");
    if (json_array_size(origin)) {
        printf("  origin rank%s:", json_array_size(origin) > 1 ? "s" : "");
        size_t i;
        json_t *x;
        json_array_foreach(origin, i, x) printf(" %lld", (long long)json_integer_value(x));
        printf("\n");
    }
    const char *site = json_string_value(json_object_get(json_object_get(d, "site"), "text"));
    if (site)
        printf("  call site: %s\n", site);
    const char *ignore = json_string_value(json_object_get(d, "suggest_ignore"));
    if (ignore) {
        const char *why = json_string_value(json_object_get(d, "suggest_why"));
        printf("  %s: --lockstep-ignore='%s' (LOCKSTEP_IGNORE='%s' outside Slurm)\n",
               why ? why : "if these are run-specific values (timings, process ids), leave them out", ignore, ignore);
    }
    const char *config = json_string_value(json_object_get(d, "configuration"));
    if (config)
        printf("  configuration: %s (lockstep manifest-diff shows every difference)\n", config);
    if (json_is_true(json_object_get(d, "thin_evidence")))
        printf("  (the records cannot tell more: they carry no input fingerprints)\n");
    const char *odd = json_string_value(json_object_get(d, "odd_run_id"));
    static const char *const head[] = {"RUN", "SEQ", "FP", "VALUE", ""};
    table t;
    table_init(&t, 5, head);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(d, "runs"), i, r)
    {
        char x[4][64];
        const char *id = str(r, "run_id", x[0], 64);
        int present = !json_is_false(json_object_get(r, "present"));
        char note[128];
        const char *role = json_string_value(json_object_get(r, "role"));
        const json_t *holders = json_object_get(r, "chunk_holders");
        if (role)
            snprintf(note, sizeof(note), "%s%s", role, restore && !strcmp(role, "restored") ? "  <- resumed" : "");
        else if (json_is_array(holders)) {
            size_t n = (size_t)snprintf(note, sizeof(note), "MiB %s on rank", str(r, "first_chunk", x[3], 64));
            size_t k;
            json_t *h;
            json_array_foreach(holders, k, h) if (n < sizeof(note)) n +=
                (size_t)snprintf(note + n, sizeof(note) - n, "%s%lld", k ? "," : " ", (long long)json_integer_value(h));
        } else
            snprintf(note, sizeof(note), "%s", odd && id && strcmp(odd, id) == 0 ? "<- odd one out" : "");
        const char *row[5] = {id, str(r, "seq", x[1], 64), present ? str(r, "fp", x[2], 64) : "(absent)",
                              str(r, "value", x[3], 64), note};
        table_add(&t, row);
    }
    table_print(&t, stdout);
    table_free(&t);
}

/* print_restores - every restored state block the server checked, and against whom. */
static void print_restores(json_t *restores)
{
    if (!json_array_size(restores))
        return;
    printf("\nrestored state blocks:\n");
    static const char *const head[] = {"RUN", "RANK", "STEP", "AGAINST", "REFERENCE", "STATUS", "ENTRY"};
    table t;
    table_init(&t, 7, head);
    size_t i;
    json_t *r;
    json_array_foreach(restores, i, r)
    {
        char b[7][64];
        const char *row[7] = {str(r, "run_id", b[0], 64),    str(r, "rank", b[1], 64),
                              str(r, "step", b[2], 64),      str(r, "reference_run_id", b[3], 64),
                              str(r, "reference", b[4], 64), str(r, "status", b[5], 64),
                              str(r, "entry", b[6], 64)};
        table_add(&t, row);
    }
    table_print(&t, stdout);
    table_free(&t);
}

/* exit_text - a run's exit as the twins table shows it: "0", "3 (ranks 0, 1)", "3 (rank 1 aborted, others
 * killed)" after an MPI_Abort, or "-" while none ended. */
static void exit_text(json_t *run, char *out, size_t cap)
{
    json_t *code = json_object_get(run, "exit_code"), *failed = json_object_get(run, "failed_ranks"),
           *aborted = json_object_get(run, "aborted_rank");
    if (!json_is_integer(code)) {
        snprintf(out, cap, "-");
        return;
    }
    if (json_is_integer(aborted)) {
        snprintf(out, cap, "%lld (rank %lld aborted, others killed)", (long long)json_integer_value(code),
                 (long long)json_integer_value(aborted));
        return;
    }
    size_t n = (size_t)snprintf(out, cap, "%lld", (long long)json_integer_value(code));
    size_t i;
    json_t *x;
    json_array_foreach(failed, i, x)
    {
        if (n >= cap)
            break;
        if (i == 4) {
            n += (size_t)snprintf(out + n, cap - n, ", ...");
            break;
        }
        n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? ", " : " (rank ", (long long)json_integer_value(x));
    }
    if (json_array_size(failed) && n < cap)
        snprintf(out + n, cap - n, ")");
}

/* first_divergence_text - "step S, rank R, NAME" of a group's first divergence (or "-") into `out`. */
static const char *first_divergence_text(json_t *fd, char *out, size_t cap)
{
    if (!json_is_object(fd))
        return "-";
    char b[3][64];
    snprintf(out, cap, "step %s, rank %s, %s", str(fd, "step", b[0], 64), str(fd, "rank", b[1], 64),
             str(fd, "name", b[2], 64));
    return out;
}

/* twins_list - `lockstep twins` without a group: the server's twin groups, newest first, with their status. */
static int twins_list(client_conf *c, const cli_args *a)
{
    static const client_filter filters[] = {{Q_STATUS, "status"}, {Q_USER, "user"},   {Q_NODE, "node"},
                                            {Q_SINCE, "since"},   {Q_LIMIT, "limit"}, {Q_CURSOR, "cursor"}};
    char path[2048];
    client_query("/api/v1/twins", filters, sizeof(filters) / sizeof(filters[0]), a, path, sizeof(path));
    json_t *reply;
    int rc = client_get(c, path, &reply, "cannot list the twin groups");
    if (rc)
        return rc;
    if (c->json) {
        client_print_json(reply);
        return CLI_OK;
    }
    static const char *const head[] = {"GROUP", "STATUS", "RUNS",    "USERS",   "FIRST DIVERGENCE",
                                       "CAUSE", "CLASS",  "VERDICT", "LAST RUN"};
    table t;
    table_init(&t, 9, head);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(reply, "items"), i, g)
    {
        char b[4][64], users[256] = "", fd[200];
        size_t k, ul = 0;
        json_t *u;
        json_array_foreach(json_object_get(g, "users"), k, u) ul += (size_t)snprintf(
            users + ul, ul < sizeof(users) ? sizeof(users) - ul : 0, "%s%s", k ? "," : "", json_string_value(u));
        json_t *first = json_object_get(g, "first_divergence");
        /* the fleet's classification (hardware, software; none when it matched), "-" until evaluated */
        const char *klass = json_string_value(json_object_get(json_object_get(g, "classification"), "class"));
        /* the newest replay verdict of lockstep narrow (its node for a hardware one), "-" when never narrowed */
        json_t *rp = json_object_get(g, "replay");
        const char *rv = json_string_value(json_object_get(rp, "verdict")),
                   *rn = json_string_value(json_object_get(rp, "node"));
        char verdict[128];
        snprintf(verdict, sizeof(verdict), "%s%s%s",
                 !json_is_object(rp) ? "-"
                 : rv                ? rv
                                     : "running",
                 rn ? " " : "", rn ? rn : "");
        const char *row[9] = {str(g, "group", b[0], 64),
                              str(g, "status", b[1], 64),
                              str(g, "run_count", b[2], 64),
                              users,
                              first_divergence_text(first, fd, sizeof(fd)),
                              json_is_object(first) ? str(first, "cause", b[3], 64) : "-",
                              klass ? klass : "-",
                              verdict,
                              json_string_value(json_object_get(g, "last_run_at"))};
        table_add(&t, row);
    }
    if (t.rows == 0)
        printf(
            "no twin group matches (runs join one with srun --lockstep-twin=NAME, or the filters exclude them all)\n");
    else
        table_print(&t, stdout);
    json_t *total = json_object_get(reply, "total");
    const char *next = json_string_value(json_object_get(reply, "next_cursor"));
    if (next && json_is_integer(total))
        printf("(%zu of %" JSON_INTEGER_FORMAT " groups; the next page: --cursor %s)\n", t.rows,
               json_integer_value(total), next);
    else if (next)
        printf("(more groups may match: the next page is --cursor %s)\n", next);
    table_free(&t);
    json_decref(reply);
    return CLI_OK;
}

/* print_ownership - a twin group's owner, and (when there are) the other owners' groups of its name and the runs
 * set aside when its owner claimed it (docs/server.md, "Twin groups and owners"). */
static void print_ownership(json_t *reply)
{
    json_t *own = json_object_get(reply, "owner");
    const char *user = json_string_value(json_object_get(own, "user")),
               *name = json_string_value(json_object_get(reply, "name"));
    const char *key = json_string_value(json_object_get(reply, "group"));
    if (user)
        printf("owner: %s (%s)%s%s\n", *user ? user : "(none)",
               json_is_true(json_object_get(own, "attested")) ? "attested" : "reported, not attested",
               name && key && strcmp(name, key) ? ", name " : "", name && key && strcmp(name, key) ? name : "");
    json_t *same = json_object_get(reply, "same_name");
    if (json_array_size(same)) {
        printf("other owners' groups named %s:", name ? name : "so");
        size_t i;
        json_t *g;
        json_array_foreach(same, i, g) printf("%s %s", i ? "," : "", json_string_value(g));
        printf(" (name one as OWNER/NAME)\n");
    }
    size_t aside = json_array_size(json_object_get(reply, "set_aside"));
    if (aside)
        printf("runs set aside when its owner claimed it: %zu (not compared, no evidence; --json says why)\n", aside);
}

static int cmd_twins(const cli_args *a)
{
    client_conf conf, *c = &conf;
    if (a->npos > 1)
        return cli_args_fail(a, "twins takes one group");
    if (a->npos == 1 && a->ngiven)
        return cli_args_fail(a, "the filters list groups: give them without GROUP");
    if (client_conf_load(c, &a->g) < 0)
        return CLI_BAD_INPUT;
    if (a->npos == 0)
        return twins_list(c, a);
    json_t *reply;
    const char *group = a->pos[0];
    char esc[600], path[700];
    client_escape(group, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/api/v1/twins/%s", esc);
    int rc = client_get(c, path, &reply, "cannot show the twin group");
    if (rc)
        return rc;
    const char *status = json_string_value(json_object_get(reply, "status"));
    /* 0 only for a match: a group that diverged or is incomplete is 1, one still pending 5 */
    int code = !status                      ? CLI_SERVER_ERROR
               : !strcmp(status, "match")   ? CLI_OK
               : !strcmp(status, "pending") ? CLI_PENDING
                                            : CLI_DIVERGED;
    if (c->json) {
        client_print_json(reply); /* takes the reply */
        return code;
    }
    const char *key = json_string_value(json_object_get(reply, "group"));
    printf("twin group %s: %s", key ? key : group, status ? status : "?");
    const char *why = json_string_value(json_object_get(reply, "status_reason"));
    printf("%s%s\n", why ? ": " : "", why ? why : "");
    print_ownership(reply);
    /* what the fleet concluded (hardware or software) and why: the classification, null until evaluated */
    json_t *cls = json_object_get(reply, "classification");
    const char *klass = json_string_value(json_object_get(cls, "class"));
    if (klass && strcmp(klass, "none"))
        printf("classification: %s: %s\n", klass, json_string_value(json_object_get(cls, "reason")) ?: "");
    /* collectives whose inputs differed while their outputs matched: no divergence, but worth a look */
    char absorbed[1200];
    if (absorbed_text(json_object_get(reply, "absorbed"), absorbed, sizeof(absorbed)))
        printf("absorbed: %s (no evidence; lockstep narrow tells a fault from a value read from outside)\n", absorbed);
    printf("\n");
    static const char *const head[] = {"RUN", "JOB", "USER", "NODES", "STATUS", "EXIT"};
    table t;
    table_init(&t, 6, head);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(reply, "runs"), i, r)
    {
        char b[6][64];
        exit_text(r, b[5], 64);
        const char *row[6] = {str(r, "run_id", b[0], 64), str(r, "job_id", b[1], 64), str(r, "user", b[2], 64),
                              str(r, "nodes", b[3], 64),  str(r, "status", b[4], 64), b[5]};
        table_add(&t, row);
    }
    table_print(&t, stdout);
    table_free(&t);
    /* Digest streaming: records lockstepd asked for and has not received (an ended agent keeps them in its spool) */
    json_t *aw = json_object_get(reply, "awaiting_records");
    if (json_array_size(aw)) {
        printf("\nrecords asked for, not received yet (held back by the agents; `lockstep replay --steps asked DIR` on "
               "the node of an ended run sends them):\n");
        static const char *const h3[] = {"RUN", "RANK", "STEP", "ASKED AT"};
        table_init(&t, 4, h3);
        json_array_foreach(aw, i, r)
        {
            if (i == 20)
                break;
            char b[4][64];
            const char *row[4] = {str(r, "run_id", b[0], 64), str(r, "rank", b[1], 64), str(r, "step", b[2], 64),
                                  str(r, "requested_at", b[3], 64)};
            table_add(&t, row);
        }
        table_print(&t, stdout);
        table_free(&t);
        if (json_array_size(aw) > 20)
            printf("(and %zu more: lockstep twins %s --json lists them under awaiting_records)\n",
                   json_array_size(aw) - 20, group);
    }
    json_t *fd = json_object_get(reply, "first_divergence");
    if (json_is_object(fd)) {
        printf("\n");
        print_divergence(fd);
    }
    /* Replays: the newest verdict of lockstep narrow, or the group this one replays. */
    json_t *rp = json_object_get(reply, "replay"), *of = json_object_get(reply, "narrow_of");
    if (json_is_object(rp)) {
        const char *v = json_string_value(json_object_get(rp, "verdict")),
                   *node = json_string_value(json_object_get(rp, "node"));
        printf("\nreplay verdict: %s%s%s (narrow %lld of %lld; lockstep narrow %s --show)\n",
               v ? v : "pending: the replays still run", node ? " on " : "", node ? node : "",
               (long long)json_integer_value(json_object_get(rp, "id")),
               (long long)json_integer_value(json_object_get(reply, "replays")), group);
        const char *reason = json_string_value(json_object_get(rp, "reason"));
        if (v && reason && *reason)
            printf("  %s\n", reason);
        /* what the verdict did to the suspects score's evidence (the classification above stays the rules') */
        json_t *ev = json_object_get(reply, "evidence");
        const char *from = json_string_value(json_object_get(ev, "from"));
        if (from && !strcmp(from, "replay"))
            printf("  evidence: %s\n", json_string_value(json_object_get(ev, "reason")) ?: "");
    }
    if (json_is_object(of))
        printf("\nthese runs are the replays of narrow %lld of group %s (lockstep narrow %s --show %lld)\n",
               (long long)json_integer_value(json_object_get(of, "id")),
               json_string_value(json_object_get(of, "group")), json_string_value(json_object_get(of, "group")),
               (long long)json_integer_value(json_object_get(of, "id")));
    json_t *per = json_object_get(reply, "per_rank");
    if (json_array_size(per)) {
        printf("\n");
        printf("first divergence per rank:\n");
        static const char *const h2[] = {"RANK", "STEP", "SEQ", "RECORD", "OCC", "KIND", "CALL SITE"};
        table_init(&t, 7, h2);
        json_array_foreach(per, i, r)
        {
            char b[6][64], site[128];
            const char *st = json_string_value(json_object_get(json_object_get(r, "site"), "text"));
            snprintf(site, sizeof(site), "%s", st ? st : "");
            const char *row[7] = {str(r, "rank", b[0], 64),
                                  str(r, "step", b[1], 64),
                                  str(r, "seq", b[2], 64),
                                  str(r, "name", b[3], 64),
                                  str(r, "occurrence", b[4], 64),
                                  str(r, "kind", b[5], 64),
                                  site};
            table_add(&t, row);
        }
        table_print(&t, stdout);
        table_free(&t);
    }
    print_restores(json_object_get(reply, "restores"));
    json_decref(reply);
    return code;
}

static const cli_opt twins_opts[] = {
    {"status", Q_STATUS, "STATUS", "pending diverged incomplete match", "only the groups with this status"},
    {"user", Q_USER, "USER", NULL, "only the groups USER ran in"},
    {"node", Q_NODE, "NODE", NULL, "only the groups that ran on NODE"},
    {"since", Q_SINCE, "DAY", NULL, "only the groups with a run since DAY (YYYY-MM-DD, or a time)"},
    {"limit", Q_LIMIT, "N", NULL, "at most N groups (newest first)"},
    {"cursor", Q_CURSOR, "C", NULL, "the next page (the cursor the previous page printed)"},
    {0},
};

const cli_command cli_cmd_twins = {
    .name = "twins",
    .run = cmd_twins,
    .synopsis = "twins [--status S] [--user U] [--node N] [--since DAY] [--limit N] [--cursor C]\ntwins GROUP",
    .summary = "without GROUP: the twin groups, newest first; with it: its status and\n"
               "classification, runs, first divergence (cause, call site), per rank",
    .opts = twins_opts,
    .globals = CLI_G_SERVER | CLI_G_JSON,
};
