/* divergence_alert.c - the alert a twin group's first divergence raises: its summary, text, details, recipients and
 * Alertmanager labels; a new one when a re-evaluation changes what it reports, which supersedes the old. */
#include "server/fleet/divergence_alert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cause.h"
#include "server/alerts/alerts.h"
#include "server/store/db.h"

/* add_unique - append `v` to the ','-separated list `out` unless it is empty or there already. */
static void add_unique(char *out, size_t cap, const char *v)
{
    if (!v || !*v)
        return;
    size_t l = strlen(v);
    for (const char *p = out; *p;) {
        const char *e = strchr(p, ',');
        size_t pl = e ? (size_t)(e - p) : strlen(p);
        if (pl == l && !strncmp(p, v, l))
            return;
        p += pl + (e ? 1 : 0);
    }
    size_t n = strlen(out);
    if (n + l + 2 < cap)
        snprintf(out + n, cap - n, "%s%s", n ? "," : "", v);
}

/* earlier_alerts - the group's earlier divergence alerts: when one already reports `facts`, nothing is raised
 * (returns 1); else returns 0 with how many there are in *count and the open ones' ids in `open` (at most
 * `cap`, *nopen of them), which the new alert supersedes, together with an open replay verdict's follow-up
 * (server/replay/verdict_alert.h: it was reached on the older facts). -1 on a database error. */
static int earlier_alerts(const char *group, const char *facts, int *count, long long *open, int cap, int *nopen,
                          char *err, size_t ecap)
{
    const char *p[] = {group};
    PGresult *r = db_exec_once("dalert_earlier", 1, p, err, ecap);
    if (!r)
        return -1;
    *count = 0;
    *nopen = 0;
    int same = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int diverged = PQgetvalue(r, i, 3)[0] == 't';
        *count += diverged;
        same |= diverged && !strcmp(PQgetvalue(r, i, 1), facts);
        if (PQgetvalue(r, i, 2)[0] == 't' && *nopen < cap)
            open[(*nopen)++] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
    }
    PQclear(r);
    return same;
}

/* run_of - the findings' entry of run `id` (its exit), or NULL. */
static json_t *run_of(const grp_findings *vd, const char *id)
{
    size_t i;
    json_t *r;
    json_array_foreach(vd->runs, i, r) if (!strcmp(json_string_value(json_object_get(r, "run_id")) ?: "", id)) return r;
    return NULL;
}

/* The first divergence as the alert tells it (borrowed from the findings), and what the alert reports. */
typedef struct fdiv {
    const div_entry *entries; /* borrowed: the runs' entries of the first divergence, nentries of them */
    int nentries;
    json_t *site; /* borrowed: its call site as the twin API gives it */
    const char *name, *kind, *cause, *site_text;
    json_int_t step, occ, seq;
    int rank;
    int diverged, restore, logical;  /* the group diverged (else incomplete); a restore difference; a logical tensor */
    const char *nodes, *gpus, *jobs; /* who diverged (who_diverged) */
    const char *facts;               /* what the alert reports: a new alert when it changes */
} fdiv;

/* fdiv_of - the first divergence of `vd` (vd->first_div, set) into `f`; who diverged and the facts are left unset. */
static void fdiv_of(const grp_findings *vd, fdiv *f)
{
    memset(f, 0, sizeof(*f));
    const divergence *first = vd->first_div;
    f->entries = first->entries;
    f->nentries = first->nentries;
    f->diverged = !strcmp(vd->status, "diverged");
    f->name = first->name;
    f->kind = first->kind;
    f->cause = cause_name(vd->cause);
    f->step = first->step;
    f->occ = first->occurrence;
    f->seq = first->seq;
    f->rank = first->rank;
    f->site = json_object_get(vd->first, "site"); /* as the twin API gives it */
    f->site_text = json_string_value(json_object_get(f->site, "text"));
    f->restore = !strcmp(f->kind, "restore");
    f->logical = first->logical;
}

/* who_diverged - the odd run out when a majority names one, else every run: their node, GPU and job on the first
 * divergence's rank as ','-separated lists into `nodes`, `gpus` and `jobs` (512 bytes each), the alert's
 * identifying labels. */
static void who_diverged(const grp *g, const fdiv *f, char *nodes, char *gpus, char *jobs)
{
    int with_majority = 0;
    for (int a = 0; a < g->nruns; a++) {
        const div_entry *e = div_entry_of(f->entries, f->nentries, g->runs[a].id);
        with_majority |= e && e->majority == DIV_MAJORITY_IN;
    }
    for (int a = 0; a < g->nruns; a++) {
        const div_entry *e = div_entry_of(f->entries, f->nentries, g->runs[a].id);
        if (with_majority && !(e && e->majority == DIV_MAJORITY_OUT))
            continue;
        const hw_slot *s = group_slot(g, a, f->rank);
        add_unique(nodes, 512, s->node);
        add_unique(gpus, 512, s->gpu);
        add_unique(jobs, 512, g->runs[a].job);
    }
}

/* alert_summary - the alert's one line. One story: the findings' first divergence and cause
 * (server/twins/findings.h); a restore difference and a logical tensor of runs of different rank counts say what
 * they are; a group found incomplete after an alert says so. */
static void alert_summary(const grp *g, const grp_findings *vd, const fdiv *f, char *summary, size_t cap)
{
    if (!f->diverged)
        snprintf(summary, cap,
                 "twin group %s is %s after all (runs failed; first difference at step "
                 "%lld, rank %d, %s: %s)",
                 g->name, vd->status, (long long)f->step, f->rank, f->name, f->cause);
    else if (f->restore)
        snprintf(summary, cap,
                 "twin group %s: a resumed run restored step %lld with other state (rank %d, "
                 "%s): %s",
                 g->name, (long long)f->step, f->rank, f->name, f->cause);
    else if (f->logical)
        snprintf(summary, cap,
                 "twin group %s diverged at step %lld (logical tensor %s, runs of different "
                 "rank counts): %s",
                 g->name, (long long)f->step, f->name, f->cause);
    else
        snprintf(summary, cap, "twin group %s diverged at step %lld (rank %d, %s): %s", g->name, (long long)f->step,
                 f->rank, f->name, f->cause);
}

/* body_head - the body's first lines: where the runs parted and why, and the ignore rule when one is suggested.
 * Returns how long the text would be (as snprintf). */
static size_t body_head(const grp *g, const grp_findings *vd, const fdiv *f, char *body, size_t cap)
{
    size_t bl;
    if (f->diverged && f->restore)
        bl =
            (size_t)snprintf(body, cap,
                             "Twin group %s: restore difference at step %lld, rank %d: state entry %s (occurrence "
                             "%lld) of the resumed run is not what its twin saved in the checkpoint of that step; "
                             "every later step is suspect.\n"
                             "Cause: %s: %s.\n",
                             g->name, (long long)f->step, f->rank, f->name, (long long)f->occ, f->cause, vd->cause_why);
    else if (f->diverged && f->logical)
        bl =
            (size_t)snprintf(body, cap,
                             "Twin group %s diverged: first divergence at step %lld in logical tensor %s (occurrence "
                             "%lld, %s), its shards combined across ranks (the runs have different rank counts).\n"
                             "Cause: %s: %s.\n",
                             g->name, (long long)f->step, f->name, (long long)f->occ, f->kind, f->cause, vd->cause_why);
    else
        bl = (size_t)snprintf(body, cap,
                              "Twin group %s %s: first divergence at step %lld, rank %d, record %s "
                              "(occurrence %lld, seq %lld, %s)%s%s.\n"
                              "Cause: %s: %s.\n",
                              g->name, f->diverged ? "diverged" : "is incomplete", (long long)f->step, f->rank, f->name,
                              (long long)f->occ, (long long)f->seq, f->kind, f->site_text ? ", called at " : "",
                              f->site_text ? f->site_text : "", f->cause, vd->cause_why);
    if (vd->suggest[0] && bl < cap)
        bl += (size_t)snprintf(body + bl, cap - bl, "%s: --lockstep-ignore='%s' (LOCKSTEP_IGNORE='%s').\n",
                               cause_ignore_why(&(cause_result){.local = vd->local}), vd->suggest, vd->suggest);
    return bl;
}

/* value_json - the scalar value of entry `e` as the details carry it (a new reference), or NULL when it has none. */
static json_t *value_json(const div_entry *e)
{
    switch (e ? e->value_kind : DIV_VALUE_NONE) {
    case DIV_VALUE_NULL: return json_null();
    case DIV_VALUE_INT: return json_integer((json_int_t)e->value_int);
    case DIV_VALUE_REAL: return json_real(e->value);
    default: return NULL;
    }
}

/* body_runs - a line of the body per run (its job, user, node, exit and what it held at the first divergence),
 * appended at *bl; returns the same as the details' "runs" array (new reference). */
static json_t *body_runs(const grp *g, const grp_findings *vd, const fdiv *f, char *body, size_t cap, size_t *bl)
{
    json_t *runs = json_array();
    for (int a = 0; a < g->nruns; a++) {
        const div_entry *mine = div_entry_of(f->entries, f->nentries, g->runs[a].id);
        const hw_slot *s = group_slot(g, a, f->rank);
        json_t *val = value_json(mine);
        char vtxt[64] = "none", exit_txt[48] = "running";
        if (json_is_number(val))
            snprintf(vtxt, sizeof(vtxt), "%.17g", json_number_value(val));
        json_t *run = run_of(vd, g->runs[a].id), *code = json_object_get(run, "exit_code");
        if (json_is_integer(code))
            snprintf(exit_txt, sizeof(exit_txt), "exit %lld", (long long)json_integer_value(code));
        const char *fp = mine ? mine->fp : NULL, *vb = mine ? mine->value_bits : NULL;
        int present = mine && mine->present;
        const char *role = mine ? mine->role : NULL;
        char where[300];
        if (s->node)
            snprintf(where, sizeof(where), "%s", s->node);
        else if (s->reported && *s->reported)
            snprintf(where, sizeof(where), "%.200s, reported, not attested", s->reported);
        else
            snprintf(where, sizeof(where), "?");
        if (*bl < cap)
            *bl += (size_t)snprintf(body + *bl, cap - *bl, "  run %s (job %s, user %s, node %s, %s)%s%s: %s\n",
                                    g->runs[a].id, g->runs[a].job, g->runs[a].user, where, exit_txt, role ? ", " : "",
                                    role ? role : "",
                                    present                                           ? ""
                                    : f->restore && role && !strcmp(role, "restored") ? "not restored"
                                                                                      : "record missing");
        if (present && *bl < cap) {
            (*bl)--; /* replace the newline */
            *bl += (size_t)snprintf(body + *bl, cap - *bl, "fp %s, value %s%s%s%s\n", fp ? fp : "?", vtxt,
                                    vb ? " (bits " : "", vb ? vb : "", vb ? ")" : "");
        }
        json_array_append_new(runs, json_pack("{s:s, s:s, s:s, s:s?, s:b, s:s?, s:o?, s:s?, s:O?, s:s?}", "run_id",
                                              g->runs[a].id, "job_id", g->runs[a].job, "user", g->runs[a].user, "node",
                                              s->node, "present", present, "fp", fp, "value", val, "value_bits", vb,
                                              "exit_code", code, "role", role));
    }
    return runs;
}

/* alert_description - Alertmanager's description, in a line: why, whose fault, where. */
static void alert_description(const grp_findings *vd, const grp_class *v, const fdiv *f, char *description, size_t cap)
{
    const char *nodes = f->nodes, *jobs = f->jobs;
    char why_s[1024], reason_s[1024];
    snprintf(why_s, sizeof(why_s), "%s", vd->cause_why);
    snprintf(reason_s, sizeof(reason_s), "%s", v->reason);
    for (char *t = why_s; t; t = t == why_s ? reason_s : NULL) /* the sentences' own full stops: one is enough */
        for (size_t l = strlen(t); l && (t[l - 1] == '.' || t[l - 1] == ' ' || t[l - 1] == '\n'); l--)
            t[l - 1] = 0;
    snprintf(description, cap, "%s: %s. Classified as %s: %s.%s%s%s%s%s", f->cause, why_s, v->cls, reason_s,
             *nodes ? " Diverged on " : "", nodes, *nodes ? " (job " : "", *nodes ? jobs : "", *nodes ? ")." : "");
}

/* raise_alert - enqueue the alert of `f` (after `count` divergence alerts of the group: its dedup key says how
 * many) and resolve the `nopen` open ones it supersedes. 0, or -1 with the database's message. */
static int raise_alert(const grp *g, const grp_findings *vd, const grp_class *v, const fdiv *f, int count,
                       const long long *open, int nopen, char *err, size_t cap)
{
    char summary[600], body[8192];
    alert_summary(g, vd, f, summary, sizeof(summary));
    char *url = alert_group_url(g->name);
    size_t bl = body_head(g, vd, f, body, sizeof(body));
    json_t *runs = body_runs(g, vd, f, body, sizeof(body), &bl);
    if (bl < sizeof(body))
        bl += (size_t)snprintf(body + bl, sizeof(body) - bl,
                               "Group status: %s (%s).\nClassified as %s: %s.\nDashboard: %s\n", vd->status,
                               vd->status_why, v->cls, v->reason, url);
    json_t *origin = json_array();
    for (int k = 0; k < vd->norigin; k++)
        json_array_append_new(origin, json_integer(vd->origin[k]));
    json_t *details =
        json_pack("{s:s, s:I, s:i, s:s, s:I, s:I, s:s, s:s, s:s, s:o, s:O, s:s?, s:s, s:s, s:s, s:o}", "group", g->name,
                  "step", f->step, "rank", f->rank, "name", f->name, "occurrence", f->occ, "seq", f->seq, "kind",
                  f->kind, "cause", f->cause, "cause_detail", vd->cause_why, "origin_ranks", origin, "site",
                  f->site ? f->site : json_null(), "suggest_ignore", vd->suggest[0] ? vd->suggest : NULL, "status",
                  vd->status, "classification", v->cls, "reason", v->reason, "runs", runs);
    /* The nodes it blames (a repair of one resolves it): those of a hardware classification only. */
    const char *blames[64];
    int nblames = 0;
    char implicated[sizeof(v->implicated)];
    snprintf(implicated, sizeof(implicated), "%s", v->implicated);
    if (!strcmp(v->cls, "hardware"))
        for (char *save = NULL, *t = strtok_r(implicated, ",", &save); t && nblames < 64;
             t = strtok_r(NULL, ",", &save))
            blames[nblames++] = t;
    char key[300];
    if (count == 0)
        snprintf(key, sizeof(key), "group:%s", g->name);
    else
        snprintf(key, sizeof(key), "group:%s#%d", g->name, count + 1);
    char step_s[32], rank_s[16], record[600];
    snprintf(step_s, sizeof(step_s), "%lld", (long long)f->step);
    snprintf(rank_s, sizeof(rank_s), "%d", f->rank);
    snprintf(record, sizeof(record), "%s (occurrence %lld, seq %lld, %s)", f->name, (long long)f->occ,
             (long long)f->seq, f->kind);
    json_t *labels =
        json_pack("{s:s, s:s, s:s, s:s}", "group", g->name, "node", f->nodes, "gpu", f->gpus, "job_id", f->jobs);
    char description[3072];
    alert_description(vd, v, f, description, sizeof(description));
    /* Annotations (empty ones are left out): where (first step, rank, record, call site), how (the cause, in a
     * word and in sentences), the group's status, and the fleet's classification. */
    json_t *ann = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "first_step", step_s, "rank", rank_s, "record",
                            record, "site", f->site_text ? f->site_text : "", "cause", f->cause, "cause_detail",
                            vd->cause_why, "status", vd->status, "classification", v->cls);
    alert_spec a = {.dedup_key = key,
                    .kind = "divergence",
                    .group = g->name,
                    .severity = "warning",
                    .summary = summary,
                    .description = description,
                    .body = body,
                    .url = url,
                    .details = details,
                    .mail_users = 1, /* the group's attested users, at the addresses the site maps */
                    .labels = labels,
                    .annotations = ann,
                    .blames = blames,
                    .nblames = nblames,
                    .facts = f->facts};
    int rc = alert_enqueue_superseding(&a, open, nopen, err, cap);
    json_decref(details);
    json_decref(labels);
    json_decref(ann);
    free(url);
    return rc;
}

int divergence_alert_enqueue(const grp *g, const grp_findings *vd, const grp_class *v, char *err, size_t cap)
{
    if (!vd->first_div)
        return 0; /* nothing diverged: nothing to report */
    fdiv f;
    fdiv_of(vd, &f);
    char nodes[512] = "", gpus[512] = "", jobs[512] = "";
    who_diverged(g, &f, nodes, gpus, jobs);
    /* What the alert reports: a re-evaluation that changes any of it raises a new alert, which supersedes the
     * open one (a third run naming the odd one, the spread rule turning hardware into software, a cause that
     * changed, a group found incomplete after all). */
    char facts[2048];
    snprintf(facts, sizeof(facts), "step %lld|rank %d|%s#%lld|%s|%s|%s|%s|%s|%s|%s", (long long)f.step, f.rank, f.name,
             (long long)f.occ, vd->status, f.cause, v->cls, v->implicated, nodes, gpus, jobs);
    f.nodes = nodes;
    f.gpus = gpus;
    f.jobs = jobs;
    f.facts = facts;
    long long open[16];
    int count = 0, nopen = 0;
    int same = earlier_alerts(g->name, facts, &count, open, 16, &nopen, err, cap);
    if (same != 0) /* reported already (1), or a database error (-1) */
        return same < 0 ? -1 : 0;
    if (!f.diverged && count == 0)
        return 0; /* an incomplete group raises no alert of its own; it only corrects one raised before */
    return raise_alert(g, vd, v, &f, count, open, nopen, err, cap);
}

void divergence_alert_register(void)
{
    db_register("dalert_earlier",
                "SELECT id, facts, resolved_at IS NULL, kind = 'divergence' FROM alerts WHERE kind IN "
                "('divergence', 'verdict') AND twin_group = $1 ORDER BY id");
}
