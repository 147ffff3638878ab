/* findings.c - a twin group's findings: its status, cause, origin ranks, call site and manifest diff, read from
 * PostgreSQL and judged by the pure rules (server/twins/findings.h). */
#include "server/twins/findings.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json/mdiff.h"
#include "common/site.h"
#include "server/twins/first_json.h"
#include "server/twins/glance.h"
#include "server/rules/members.h"
#include "server/rules/status.h"
#include "server/core/limits.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"

/* A rank's comparison is not finished (x: its newest record, pe: its newest rank end, re: the group's newest run
 * end, c: its group_checks row, written by server/twins/compare.c). */
#define VD_UNCHECKED                                                                                                   \
    "c.rank IS NULL OR c.checked_at < x.t OR lockstep_checked_before_end(c.checked_at, pe.t, re.t) OR "                \
    "(c.target IS NOT NULL AND (c.checked_upto IS NULL OR c.checked_upto < c.target))"
/* The ranks of group G whose comparison waits for records an agent held back (digest streaming) and lockstepd
 * asked for: not received yet. */
#define VD_AWAITING(G)                                                                                                 \
    "(SELECT count(DISTINCT q.rank) FROM record_requests q JOIN runs r USING (run_key) WHERE r.twin_group = " G        \
    " AND NOT q.answered)"

/* The ranks of group G whose comparison stopped at a step whose records retention removed from a run. */
#define VD_REMOVED(G)                                                                                                  \
    "(SELECT count(DISTINCT q.rank) FROM record_requests q JOIN runs r USING (run_key) WHERE r.twin_group = " G        \
    " AND q.removed)"

/* VD_MPI_UNSEEN(G) - two columns: how many runs of group G have a rank that ended saying its MPI calls went
 * unrecorded, for each reason (rank_ends.mpi_unseen, agent/mpiseen.h): "unloaded", then "unseen". */
#define VD_MPI_UNSEEN_AS(G, WHY)                                                                                       \
    "(SELECT count(DISTINCT e.run_key) FROM rank_ends e JOIN runs r USING (run_key) WHERE r.twin_group = " G           \
    " AND e.mpi_unseen = '" WHY "')"
#define VD_MPI_UNSEEN(G) VD_MPI_UNSEEN_AS(G, "unloaded") ", " VD_MPI_UNSEEN_AS(G, "unseen")

void findings_register(void)
{
    glance_register();
    db_register(
        "vd_runs",
        "SELECT run_key, run_id, job_id, step_id, user_name, nodes, command, ranks, status, "
        "start_step, mode, " DB_TS("created_at") ", " DB_TS(
            "ended_at") ", attested_user, "
                        "(SELECT max(p.max_step) FROM rank_progress p WHERE p.run_key = runs.run_key) FROM runs "
                        "WHERE twin_group = $1 ORDER BY run_key");
    /* Per run: ranks ended, the failed ones, the lowest failed rank's code, and the first abort (MPI_Abort: its
     * rank and code: the lowest rank that aborted, so that twins whose ranks all abort at once say the same),
     * which is the run's exit when there is one. */
    db_register("vd_exits", "SELECT e.run_key, count(*), (array_agg(e.rank ORDER BY e.rank) FILTER "
                            "(WHERE e.exit_code <> 0))::text, (array_agg(e.exit_code ORDER BY e.rank) FILTER "
                            "(WHERE e.exit_code <> 0))[1], (array_agg(e.rank ORDER BY e.rank) FILTER "
                            "(WHERE e.aborted))[1], (array_agg(e.exit_code ORDER BY e.rank) FILTER "
                            "(WHERE e.aborted))[1] FROM rank_ends e JOIN runs r USING (run_key) "
                            "WHERE r.twin_group = $1 GROUP BY e.run_key");
    db_register(
        "vd_divs",
        "SELECT rank, step, seq, name, occ, kind, odd_run_key, runs::text, " DB_TS("committed_at") ", " DB_TS(
            "detected_at") ", " DB_MS("committed_at",
                                      "detected_at") " "
                                                     "FROM divergences WHERE twin_group = $1 ORDER BY step, rank");
    /* The manifests the diff reads, bounded whatever a job uploaded (65,536 ranks of 256 KiB each would be 16 GiB a
     * run): the lowest ranks of every run together, rank by rank, up to MDIFF_MANIFESTS manifests (the lowest rank
     * always), so that every run is compared on the same ranks; a stored manifest larger than a manifest may be now
     * (MANIFEST_BODY_MAX) is left out. Only keys are read to find the cut (each run's first MDIFF_MANIFESTS by its
     * primary key). */
    db_register(
        "vd_manifests",
        "WITH k AS (SELECT m1.rank FROM runs r CROSS JOIN LATERAL (SELECT m2.rank FROM manifests m2 WHERE "
        "m2.run_key = r.run_key ORDER BY m2.rank LIMIT " MDIFF_MANIFESTS_TEXT ") m1 WHERE r.twin_group = $1), "
        "cut AS (SELECT max(c.rank) AS last FROM (SELECT k.rank, count(*) OVER (ORDER BY k.rank) AS upto "
        "FROM k) c WHERE c.upto <= " MDIFF_MANIFESTS_TEXT " OR c.rank = (SELECT min(rank) FROM k)) "
        "SELECT m.run_key, m.rank, m.manifest::text FROM manifests m JOIN runs r USING (run_key), cut "
        "WHERE r.twin_group = $1 AND m.rank <= cut.last AND pg_column_size(m.manifest) <= " MANIFEST_BODY_MAX_TEXT
        " ORDER BY m.run_key, m.rank");
    /* What the manifest diff depends on besides the runs (which do not change once registered): how many
     * manifests, and the newest (a manifest posted again gets a new received_at). */
    db_register("vd_mstate", "SELECT count(*), coalesce(max(m.received_at)::text, '') FROM manifests m JOIN runs r "
                             "USING (run_key) WHERE r.twin_group = $1");
    /* The facts twin_status decides from, for a set of groups ($1: a JSON array of names; $2: GROUP_MAX_RUNS), in
     * the order given. Per group: runs (the first $2 by run_key), failed ones (status failed, or a rank's non-zero
     * exit), running ones (not failed); per rank the runs recorded, whether its comparison is not finished
     * (unchecked: no check yet, one short of its target, or one older than the rank's last record or end, or the
     * group's last run end: cmp_check marks checked_at under the lock those commit under, so late records re-open
     * it), whether the comparison found two runs or more with steps they share (comparable: a target), how many
     * ranks recorded at all, and how many wait for records agents held back or lost to retention; whether a
     * divergence is stored; why nothing may be shared: runs that recorded nothing (no rank's progress), the runs'
     * rank counts, and, where those differ, runs without a shard record (kind 3 frames hold them); how many runs made
     * MPI calls their agent did not see. Facts only: the rules that read them are C's (twin_status, cause_judge). */
    db_register(
        "vd_facts",
        "WITH g AS (SELECT name, i FROM jsonb_array_elements_text($1::jsonb) WITH ORDINALITY AS t(name, i)), "
        "rr AS (SELECT r.twin_group, r.run_key, r.status, r.ranks, row_number() OVER (PARTITION BY r.twin_group "
        "ORDER BY r.run_key) AS k, EXISTS (SELECT 1 FROM rank_ends e WHERE e.run_key = r.run_key AND "
        "e.exit_code <> 0) AS bad, EXISTS (SELECT 1 FROM rank_progress p WHERE p.run_key = r.run_key) AS rec "
        "FROM runs r WHERE r.twin_group IN (SELECT name FROM g)), "
        "ru AS (SELECT twin_group, count(*) AS nruns, count(*) FILTER (WHERE status = 'failed' OR bad) AS failed, "
        "count(*) FILTER (WHERE NOT (status = 'failed' OR bad) AND status = 'running') AS running, "
        "count(*) FILTER (WHERE NOT rec) AS silent, min(ranks) AS min_ranks, max(ranks) AS max_ranks "
        "FROM rr WHERE k <= $2::int GROUP BY twin_group), "
        "sh AS (SELECT rr.twin_group, count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM record_frames f WHERE "
        "f.run_key = rr.run_key AND f.kind = 3)) AS shardless FROM rr JOIN ru USING (twin_group) WHERE rr.k <= "
        "$2::int AND ru.max_ranks > ru.min_ranks GROUP BY rr.twin_group), "
        /* per group, its ranks' progress, ends and marks read by the group's key (a LATERAL subquery a group: the
         * planner, which cannot know which groups $1 names, joined every group's rows instead) */
        "pr AS (SELECT g.name AS twin_group, y.unchecked, y.comparable, y.nranks FROM g CROSS JOIN LATERAL ("
        "SELECT count(*) FILTER (WHERE " VD_UNCHECKED ") AS unchecked, "
        "count(*) FILTER (WHERE c.target IS NOT NULL) AS comparable, count(*) AS nranks "
        "FROM (SELECT p.rank, max(p.updated_at) AS t FROM runs r JOIN rank_progress p ON p.run_key = r.run_key "
        "WHERE r.twin_group = g.name GROUP BY p.rank) x "
        "LEFT JOIN (SELECT e.rank, max(e.ended_at) AS t FROM runs r JOIN rank_ends e ON e.run_key = r.run_key "
        "WHERE r.twin_group = g.name GROUP BY e.rank) pe ON pe.rank = x.rank "
        "LEFT JOIN group_checks c ON c.twin_group = g.name AND c.rank = x.rank "
        "CROSS JOIN (SELECT max(r.ended_at) AS t FROM runs r WHERE r.twin_group = g.name) re) y) "
        "SELECT g.name, coalesce(ru.nruns, 0), coalesce(ru.running, 0), coalesce(ru.failed, 0), "
        "EXISTS (SELECT 1 FROM divergences d WHERE d.twin_group = g.name), coalesce(pr.unchecked, 0), "
        "coalesce(pr.comparable, 0), coalesce(pr.nranks, 0), " VD_AWAITING("g.name") ", " VD_REMOVED(
            "g.name") ", coalesce(ru.silent, 0), coalesce(ru.min_ranks, 0), coalesce(ru.max_ranks, 0), "
                      "coalesce(sh.shardless, 0), " VD_MPI_UNSEEN(
                          "g.name") " FROM g LEFT JOIN ru ON ru.twin_group = "
                                    "g.name LEFT JOIN pr ON pr.twin_group = g.name LEFT JOIN sh ON sh.twin_group = "
                                    "g.name ORDER BY g.i");
    /* The divergences of each group of $1 (a JSON array of names) at its first diverging step: what the cause rule
     * (common/cause.h) needs to say whether the group's first divergence is a record some run lacks. */
    db_register("vd_early", "SELECT d.twin_group, d.rank, d.step, d.seq, d.name, d.occ, d.kind FROM divergences d "
                            "WHERE d.twin_group IN (SELECT jsonb_array_elements_text($1::jsonb)) AND d.step = (SELECT "
                            "min(x.step) FROM divergences x WHERE x.twin_group = d.twin_group) "
                            "ORDER BY d.twin_group, d.step, d.seq, d.rank");
}

static json_t *str_or_null(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? json_null() : json_string(PQgetvalue(r, row, col));
}

/* site_from_json - a stored site object as a rec_site (strings borrowed from `o`); 0 when `o` is no site. */
static int site_from_json(json_t *o, rec_site *s)
{
    memset(s, 0, sizeof(*s));
    if (!json_is_object(o))
        return 0;
    const char *m = json_string_value(json_object_get(o, "module")),
               *f = json_string_value(json_object_get(o, "function")),
               *c = json_string_value(json_object_get(o, "caller"));
    s->module = m;
    s->module_len = (uint16_t)(m ? strnlen(m, REC_SITE_MODULE_MAX) : 0);
    s->function = f;
    s->function_len = (uint16_t)(f ? strnlen(f, REC_SITE_NAME_MAX) : 0);
    s->caller = c;
    s->caller_len = (uint16_t)(c ? strnlen(c, REC_SITE_NAME_MAX) : 0);
    s->offset = (uint64_t)json_integer_value(json_object_get(o, "offset"));
    s->function_offset = (uint64_t)json_integer_value(json_object_get(o, "function_offset"));
    return rec_has_site(&(rec_record){.site = *s});
}

/* site_out - a stored site object with its "text", as the API shows it (a new reference), or null. */
static json_t *site_out(json_t *o)
{
    rec_site s;
    if (!site_from_json(o, &s))
        return json_null();
    char text[SITE_TEXT_MAX];
    site_format(&s, text, sizeof(text));
    json_t *c = json_deep_copy(o);
    json_object_set_new(c, "text", json_string(text));
    return c;
}

/* entry_site - the site of a divergence: the first run's that holds the record. */
static json_t *entry_site(json_t *runs)
{
    size_t i;
    json_t *e;
    json_array_foreach(runs, i, e) if (json_is_object(json_object_get(e, "site"))) return json_object_get(e, "site");
    return NULL;
}

/* comm_state - the communicator of a divergence's record (the first run that holds it states it: twins build the
 * same communicators) into c (its ranks borrowed from the entry). */
static void comm_state(const div_entry *e, int n, cause_rank *c)
{
    for (int i = 0; i < n; i++) {
        if (!e[i].present || !e[i].comm_size)
            continue;
        c->comm_size = e[i].comm_size;
        if (e[i].comm_nranks) {
            c->comm_ranks = e[i].comm_ranks;
            c->comm_nlisted = e[i].comm_nranks;
        }
        return;
    }
}

/* set_members - each run's "compared" and "left_out" (why not), by the rule the comparison applies to each rank
 * (server/rules/members.h), here to whole runs: whether it recorded anything, how far, whether it ended. */
static void set_members(PGresult *runs, grp_findings *v)
{
    int n = (int)json_array_size(v->runs);
    cmp_member m[GROUP_MAX_RUNS];
    for (int i = 0; i < n; i++) {
        int has = !PQgetisnull(runs, i, 14);
        m[i] = (cmp_member){strtoll(PQgetvalue(runs, i, 9), NULL, 10),
                            has,
                            has,
                            has ? strtoll(PQgetvalue(runs, i, 14), NULL, 10) : 0,
                            strcmp(PQgetvalue(runs, i, 8), "running") != 0,
                            0,
                            NULL};
    }
    int64_t lo;
    cmp_members_pick(m, n, &lo);
    for (int i = 0; i < n; i++) {
        json_t *o = json_array_get(v->runs, (size_t)i);
        json_object_set_new(o, "compared", json_boolean(m[i].in));
        json_object_set_new(o, "left_out", m[i].in ? json_null() : json_string(m[i].why));
        v->left_out += !m[i].in;
    }
}

/* load_runs - the runs and their exits into v->runs. */
static void load_runs(PGresult *runs, PGresult *exits, grp_findings *v)
{
    v->runs = json_array();
    for (int i = 0; i < PQntuples(runs) && i < GROUP_MAX_RUNS; i++) {
        const char *key = PQgetvalue(runs, i, 0);
        json_t *o = json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:i, s:s, s:s, s:o}", "run_id", PQgetvalue(runs, i, 1), "job_id",
            PQgetvalue(runs, i, 2), "step_id", PQgetvalue(runs, i, 3), "user", PQgetvalue(runs, i, 4), "nodes",
            PQgetvalue(runs, i, 5), "command", PQgetvalue(runs, i, 6), "status", PQgetvalue(runs, i, 8), "start_step",
            (json_int_t)strtoll(PQgetvalue(runs, i, 9), NULL, 10), "ranks", atoi(PQgetvalue(runs, i, 7)), "mode",
            PQgetvalue(runs, i, 10), "created_at", PQgetvalue(runs, i, 11), "ended_at", str_or_null(runs, i, 12));
        json_t *code = json_null(), *failed = json_array(), *aborted = json_null(), *detail = json_null();
        int ended = 0;
        for (int k = 0; k < PQntuples(exits); k++) {
            if (strcmp(PQgetvalue(exits, k, 0), key))
                continue;
            ended = atoi(PQgetvalue(exits, k, 1));
            json_decref(code);
            code = PQgetisnull(exits, k, 3) ? json_integer(0) : json_integer(atoi(PQgetvalue(exits, k, 3)));
            if (!PQgetisnull(exits, k, 4)) { /* an abort: its code is the run's exit, whichever rank failed first */
                int ar = atoi(PQgetvalue(exits, k, 4)), ac = atoi(PQgetvalue(exits, k, 5));
                char t[160];
                snprintf(t, sizeof(t), "rank %d called MPI_Abort with code %d; the other ranks were killed after it",
                         ar, ac);
                json_decref(code);
                code = json_integer(ac);
                aborted = json_integer(ar);
                detail = json_string(t);
            }
            if (!PQgetisnull(exits, k, 2)) {
                int64_t rk[64];
                int n = db_int_array_parse(PQgetvalue(exits, k, 2), rk, 64);
                for (int j = 0; j < n; j++)
                    json_array_append_new(failed, json_integer(rk[j]));
            }
        }
        json_object_set_new(o, "attested_user", str_or_null(runs, i, 13));
        json_object_set_new(o, "exit_code", code);
        json_object_set_new(o, "failed_ranks", failed);
        json_object_set_new(o, "aborted_rank", aborted);
        json_object_set_new(o, "exit_detail", detail);
        json_object_set_new(o, "ended_ranks", json_integer(ended));
        json_array_append_new(v->runs, o);
    }
}

int findings_md_runs(PGresult *runs, PGresult *man, md_run *rs, int max)
{
    int n = PQntuples(runs) < max ? PQntuples(runs) : max;
    for (int i = 0; i < n; i++) {
        rs[i] = (md_run){
            PQgetvalue(runs, i, 1), PQgetvalue(runs, i, 2), PQgetvalue(runs, i, 3),       PQgetvalue(runs, i, 4),
            PQgetvalue(runs, i, 5), PQgetvalue(runs, i, 6), atol(PQgetvalue(runs, i, 7)), json_array()};
        for (int k = 0; k < PQntuples(man); k++) {
            if (strcmp(PQgetvalue(man, k, 0), PQgetvalue(runs, i, 0)))
                continue;
            json_t *doc = json_loads(PQgetvalue(man, k, 2), 0, NULL);
            if (doc)
                json_array_append_new(rs[i].manifests,
                                      json_pack("{s:i, s:o}", "rank", atoi(PQgetvalue(man, k, 1)), "manifest", doc));
        }
    }
    return n;
}

/* load_mdiff - the manifest diff of the group's runs. */
static json_t *load_mdiff(PGresult *runs, PGresult *man)
{
    md_run rs[GROUP_MAX_RUNS];
    int n = findings_md_runs(runs, man, rs, GROUP_MAX_RUNS);
    json_t *d = md_diff(rs, n);
    for (int i = 0; i < n; i++)
        json_decref(rs[i].manifests);
    return d ? d : json_pack("{s:b, s:s, s:[], s:[]}", "explains", 0, "summary", "", "diffs", "identities");
}

/* The manifest diff of a group is the costly part of its findings (every rank's manifest of every run, read and
 * parsed: megabytes for a large job) and changes only when a run joins or a manifest arrives; the twin-group
 * list reads the findings of every diverged group of a page. So the last diff of each group is kept, with the
 * state it was computed from (mdiff_key), in a small direct-mapped table shared by the database workers. */
#define MDIFF_SLOTS 256
static struct {
    char *group, *key;
    json_t *mdiff;
} s_mdiff[MDIFF_SLOTS];
static pthread_mutex_t s_mdiff_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t mdiff_slot(const char *group)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)group; *c; c++)
        h = (h ^ *c) * 1099511628211ULL;
    return (size_t)(h % MDIFF_SLOTS);
}

/* mdiff_key - the state a group's manifest diff is computed from: its runs (keys, in order; at most
 * GROUP_MAX_RUNS) and its manifests' count and newest arrival (a new string). */
static char *mdiff_key(PGresult *runs, PGresult *mstate)
{
    int n = PQntuples(runs) < GROUP_MAX_RUNS ? PQntuples(runs) : GROUP_MAX_RUNS;
    size_t cap = (size_t)n * 24 + 128, len = 0;
    char *k = xmalloc(cap);
    len += (size_t)snprintf(k, cap, "%s|%s|", PQgetvalue(mstate, 0, 0), PQgetvalue(mstate, 0, 1));
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(k + len, cap - len, "%s,", PQgetvalue(runs, i, 0));
    return k;
}

/* mdiff_cached - a copy of group's diff if it was computed from `key`, else NULL. */
static json_t *mdiff_cached(const char *group, const char *key)
{
    size_t i = mdiff_slot(group);
    json_t *d = NULL;
    pthread_mutex_lock(&s_mdiff_lock);
    if (s_mdiff[i].group && !strcmp(s_mdiff[i].group, group) && !strcmp(s_mdiff[i].key, key))
        d = json_deep_copy(s_mdiff[i].mdiff);
    pthread_mutex_unlock(&s_mdiff_lock);
    return d;
}

/* mdiff_keep - remember group's diff `d` (copied) as computed from `key`. */
static void mdiff_keep(const char *group, const char *key, json_t *d)
{
    size_t i = mdiff_slot(group);
    json_t *c = json_deep_copy(d);
    char *g = xstrdup(group), *k = xstrdup(key);
    pthread_mutex_lock(&s_mdiff_lock);
    char *og = s_mdiff[i].group, *ok = s_mdiff[i].key;
    json_t *od = s_mdiff[i].mdiff;
    s_mdiff[i].group = g;
    s_mdiff[i].key = k;
    s_mdiff[i].mdiff = c;
    pthread_mutex_unlock(&s_mdiff_lock);
    free(og);
    free(ok);
    json_decref(od);
}

/* read_divergence - row `i` of vd_divs (rank, step, seq, name, occurrence, kind, odd run key, runs) into `d`, the
 * odd run named by its id from `runs` (vd_runs: key, id), and its run entries typed: the one place a stored
 * divergence's JSON is read. */
static void read_divergence(PGresult *divs, int i, PGresult *runs, divergence *d)
{
    d->rank = atoi(PQgetvalue(divs, i, 0));
    d->step = strtoll(PQgetvalue(divs, i, 1), NULL, 10);
    d->seq = strtoll(PQgetvalue(divs, i, 2), NULL, 10);
    d->name = xstrdup(PQgetvalue(divs, i, 3));
    d->occurrence = atoi(PQgetvalue(divs, i, 4));
    d->kind = xstrdup(PQgetvalue(divs, i, 5));
    d->logical = d->rank < 0;
    if (!PQgetisnull(divs, i, 6))
        for (int k = 0; k < PQntuples(runs) && !d->odd_run_id; k++)
            if (!strcmp(PQgetvalue(runs, k, 0), PQgetvalue(divs, i, 6)))
                d->odd_run_id = xstrdup(PQgetvalue(runs, k, 1));
    d->runs = json_loads(PQgetvalue(divs, i, 7), 0, NULL);
    if (!d->runs)
        d->runs = json_array();
    div_entries_read(d->runs, &d->entries, &d->nentries);
}

/* judge - the cause of the first divergence over the per-rank divergences; fills v->first. */
static void judge(grp_findings *v)
{
    size_t n = (size_t)v->ndivs;
    if (!n) {
        v->first = json_null();
        return;
    }
    cause_rank *cr = xcalloc(n, sizeof(*cr));
    for (size_t i = 0; i < n; i++) {
        const divergence *d = &v->divs[i];
        cr[i].rank = d->rank;
        cr[i].step = d->step;
        cr[i].seq = d->seq;
        cr[i].name = d->name;
        cr[i].name_len = strlen(d->name);
        cr[i].occurrence = (uint32_t)d->occurrence;
        cr[i].restore = !strcmp(d->kind, "restore"); /* server/twins/restore.c */
        cr[i].logical = d->logical;
        cr[i].missing = !strcmp(d->kind, "missing");
        cr[i].inputs = cr[i].restore || cr[i].logical ? CAUSE_IN_UNKNOWN : div_inputs_state(d->entries, d->nentries);
        comm_state(d->entries, d->nentries, &cr[i]);
        for (int k = 0; cr[i].restore && k < d->nentries; k++) {
            const div_entry *e = &d->entries[k];
            if (!e->role || strcmp(e->role, "restored"))
                continue;
            cr[i].restore_status = e->restore_status;
            cr[i].not_restored = e->not_restored;
            cr[i].not_saved = e->not_saved;
        }
    }
    cause_facts f = {cr, n, v->nranks, json_is_true(json_object_get(v->mdiff, "explains"))};
    cause_result cv;
    cause_judge(&f, &cv);
    v->cause = cv.kind;
    v->norigin = cv.norigin;
    memcpy(v->origin, cv.origin, sizeof(cv.origin));
    snprintf(v->cause_why, sizeof(v->cause_why), "%s", cv.why);
    v->first_rank = cv.first ? cv.first->rank : -1;
    v->first_missing = cv.first && cv.first->missing;
    size_t at = cv.first ? (size_t)(cv.first - cr) : 0;
    v->first_div = &v->divs[at];
    json_t *first = json_deep_copy(json_array_get(v->per_rank, at));
    first_json_judge(first, &cv, json_object_get(v->mdiff, "summary"));
    rec_site s;
    int has_site = site_from_json(entry_site(json_object_get(first, "runs")), &s);
    if (cv.kind == CAUSE_EVERY_RANK || cv.local) {
        site_suggest_ignore(has_site ? &s : NULL, cv.first->name, cv.first->name_len, v->suggest, sizeof(v->suggest));
        json_object_set_new(first, "suggest_ignore", json_string(v->suggest));
        json_object_set_new(first, "suggest_why", json_string(cause_ignore_why(&cv)));
    } else {
        json_object_set_new(first, "suggest_ignore", json_null());
    }
    v->first = first;
    v->local = cv.local;
    v->root_input = cv.root_input;
    free(cr);
}

/* facts_read - the status facts of `n` groups (names[i] into out[i], `missing` left 0) and the ranks each recorded
 * (nranks[i]), in one statement. Returns 0, or -1 with the database's message in `err`. */
static int facts_read(const char *const *names, int n, twin_facts *out, int *nranks, char *err, size_t cap)
{
    memset(out, 0, (size_t)n * sizeof(*out));
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(names[i]));
    char *arr = json_dumps(a, JSON_COMPACT), maxruns[16];
    json_decref(a);
    snprintf(maxruns, sizeof(maxruns), "%d", GROUP_MAX_RUNS);
    const char *p[] = {arr, maxruns};
    PGresult *r = db_exec("vd_facts", 2, p, err, cap);
    free(arr);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r) && i < n; i++) {
        twin_facts *f = &out[i];
        f->nruns = atoi(PQgetvalue(r, i, 1));
        f->running = atoi(PQgetvalue(r, i, 2));
        f->failed = atoi(PQgetvalue(r, i, 3));
        f->diverged = PQgetvalue(r, i, 4)[0] == 't';
        f->unchecked = strtol(PQgetvalue(r, i, 5), NULL, 10);
        f->comparable = strtol(PQgetvalue(r, i, 6), NULL, 10);
        nranks[i] = atoi(PQgetvalue(r, i, 7));
        f->awaiting = strtol(PQgetvalue(r, i, 8), NULL, 10);
        f->removed = strtol(PQgetvalue(r, i, 9), NULL, 10);
        f->silent = atoi(PQgetvalue(r, i, 10));
        f->min_ranks = atoi(PQgetvalue(r, i, 11));
        f->max_ranks = atoi(PQgetvalue(r, i, 12));
        f->shardless = atoi(PQgetvalue(r, i, 13));
        f->mpi_unloaded = atoi(PQgetvalue(r, i, 14));
        f->mpi_unseen = atoi(PQgetvalue(r, i, 15));
    }
    PQclear(r);
    return 0;
}

/* load - findings_load's reads, in the caller's snapshot. */
static int load(const char *group, grp_findings *v, char *err, size_t cap)
{
    memset(v, 0, sizeof(*v));
    v->first_rank = -1;
    v->status = "pending";
    const char *p[] = {group};
    PGresult *runs = db_exec("vd_runs", 1, p, err, cap);
    if (!runs)
        return -1;
    if (PQntuples(runs) == 0) {
        PQclear(runs);
        return 0;
    }
    PGresult *exits = db_exec("vd_exits", 1, p, err, cap);
    PGresult *divs = exits ? db_exec("vd_divs", 1, p, err, cap) : NULL;
    PGresult *mstate = divs ? db_exec("vd_mstate", 1, p, err, cap) : NULL;
    twin_facts f;
    int got = mstate ? facts_read(&group, 1, &f, &v->nranks, err, cap) : -1;
    /* the manifest diff: the one kept for this state of the group, else computed from the manifests */
    char *mkey = got == 0 ? mdiff_key(runs, mstate) : NULL;
    json_t *mdiff = mkey ? mdiff_cached(group, mkey) : NULL;
    PGresult *man = mkey && !mdiff ? db_exec("vd_manifests", 1, p, err, cap) : NULL;
    if (got < 0 || (!mdiff && !man)) {
        PQclear(runs);
        PQclear(exits);
        PQclear(divs);
        PQclear(mstate);
        free(mkey);
        return -1;
    }
    load_runs(runs, exits, v);
    v->runs_total = PQntuples(runs);
    set_members(runs, v);

    /* The per-rank divergences, as stored, each with its call site. */
    v->per_rank = json_array();
    v->ndivs = PQntuples(divs);
    v->divs = xcalloc((size_t)v->ndivs + 1, sizeof(*v->divs));
    for (int i = 0; i < v->ndivs; i++) {
        divergence *d = &v->divs[i];
        read_divergence(divs, i, runs, d);
        json_t *o =
            json_pack("{s:I, s:i, s:s, s:i, s:I, s:s, s:s?, s:O, s:s, s:s, s:f}", "step", (json_int_t)d->step, "rank",
                      d->rank, "name", d->name, "occurrence", d->occurrence, "seq", (json_int_t)d->seq, "kind", d->kind,
                      "odd_run_id", d->odd_run_id, "runs", d->runs, "committed_at", PQgetvalue(divs, i, 8),
                      "detected_at", PQgetvalue(divs, i, 9), "detection_ms", atof(PQgetvalue(divs, i, 10)));
        if (!d->odd_run_id)
            json_object_set_new(o, "odd_run_id", json_null());
        if (d->logical) /* runs of different rank counts: their logical tensors parted */
            json_object_set_new(o, "logical", json_true());
        json_object_set_new(o, "site", site_out(entry_site(d->runs)));
        json_array_append_new(v->per_rank, o);
    }
    if (!mdiff) {
        mdiff = load_mdiff(runs, man);
        long stored = strtol(PQgetvalue(mstate, 0, 0), NULL, 10);
        if (PQntuples(man) < stored) { /* the diff's bound: say how much of the group's manifests it read */
            json_object_set_new(mdiff, "manifests_read", json_integer(PQntuples(man)));
            json_object_set_new(mdiff, "manifests_stored", json_integer(stored));
            int through = -1; /* the highest rank read (every run is read through the same rank) */
            for (int k = 0; k < PQntuples(man); k++)
                through = atoi(PQgetvalue(man, k, 1)) > through ? atoi(PQgetvalue(man, k, 1)) : through;
            json_object_set_new(mdiff, "ranks_through", json_integer(through));
        }
        mdiff_keep(group, mkey, mdiff);
    }
    v->mdiff = mdiff;
    free(mkey);
    judge(v);
    f.missing = v->first_missing;
    v->status = twin_status(&f, v->status_why, sizeof(v->status_why));
    glance_outcomes(v->runs, v->divs, v->ndivs, v->status);
    PQclear(runs);
    PQclear(exits);
    PQclear(divs);
    PQclear(mstate);
    PQclear(man);
    return 1;
}

int findings_load(const char *group, grp_findings *v, char *err, size_t cap)
{
    /* One snapshot: the status facts, the divergences and the runs are read apart, and a divergence committed
     * between two of those reads would give a "diverged" group no first divergence. */
    int snap = db_snapshot_begin(err, cap);
    if (snap < 0) {
        memset(v, 0, sizeof(*v));
        return -1;
    }
    int got = load(group, v, err, cap);
    if (snap)
        db_rollback();
    return got;
}

/* missing_of - whether the cause rule (common/cause.h) makes the first divergence of a group a record some run
 * lacks, over its divergences at its first step (`cr`, n): 1 or 0, or -1 when the answer turns on whether the
 * manifest diff explains the divergence (configuration). */
static int missing_of(const cause_rank *cr, size_t n, int nranks)
{
    cause_facts f = {cr, n, nranks, 0};
    cause_result plain, configured;
    cause_judge(&f, &plain);
    f.configuration = 1;
    cause_judge(&f, &configured);
    int a = plain.first && plain.first->missing, b = configured.first && configured.first->missing;
    return a == b ? a : -1;
}

/* early_missing - out[i].missing for the groups whose status turns on it (diverged, and a run failed), by the cause
 * rule over their divergences at the first step (vd_early), asking findings_load only where the manifest diff
 * decides it. Returns 0, or -1 with the database's message in `err`. */
static int early_missing(const char *const *names, int n, twin_facts *out, const int *nranks, char *err, size_t cap)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        if (out[i].diverged && out[i].failed)
            json_array_append_new(a, json_string(names[i]));
    if (!json_array_size(a)) {
        json_decref(a);
        return 0;
    }
    char *arr = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    const char *p[] = {arr};
    PGresult *r = db_exec("vd_early", 1, p, err, cap);
    free(arr);
    if (!r)
        return -1;
    int rows = PQntuples(r), rc = 0;
    cause_rank *cr = xcalloc((size_t)rows + 1, sizeof(*cr));
    for (int i = 0; i < n && rc == 0; i++) {
        if (!out[i].diverged || !out[i].failed)
            continue;
        size_t k = 0;
        for (int j = 0; j < rows; j++) {
            if (strcmp(PQgetvalue(r, j, 0), names[i]))
                continue;
            const char *kind = PQgetvalue(r, j, 6);
            cr[k++] = (cause_rank){.rank = atoi(PQgetvalue(r, j, 1)),
                                   .step = strtoll(PQgetvalue(r, j, 2), NULL, 10),
                                   .seq = strtoll(PQgetvalue(r, j, 3), NULL, 10),
                                   .name = PQgetvalue(r, j, 4),
                                   .name_len = (size_t)PQgetlength(r, j, 4),
                                   .occurrence = (uint32_t)strtoul(PQgetvalue(r, j, 5), NULL, 10),
                                   .missing = !strcmp(kind, "missing"),
                                   .restore = !strcmp(kind, "restore"),
                                   .logical = atoi(PQgetvalue(r, j, 1)) < 0};
        }
        int m = missing_of(cr, k, nranks[i]);
        if (m < 0) {
            grp_findings v;
            int got = findings_load(names[i], &v, err, cap);
            if (got < 0)
                rc = -1;
            m = got > 0 && v.first_missing;
            findings_release(&v);
        }
        out[i].missing = m;
    }
    free(cr);
    PQclear(r);
    return rc;
}

int findings_facts(const char *const *names, int n, twin_facts *out, char *err, size_t cap)
{
    if (n <= 0)
        return 0;
    int *nranks = xcalloc((size_t)n, sizeof(int));
    int rc = facts_read(names, n, out, nranks, err, cap);
    if (rc == 0)
        rc = early_missing(names, n, out, nranks, err, cap);
    free(nranks);
    return rc;
}

void findings_release(grp_findings *v)
{
    json_decref(v->runs);
    json_decref(v->per_rank);
    json_decref(v->first);
    json_decref(v->mdiff);
    v->runs = v->per_rank = v->first = v->mdiff = NULL;
    divergences_free(v->divs, v->ndivs);
    v->divs = NULL;
    v->ndivs = 0;
    v->first_div = NULL;
}
