/* divergence_alert.c - the alert a twin group's first divergence raises: its summary, text, details and recipients. */
#include "server/fleet/divergence_alert.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/fleet/alerts.h"

/* run_of - the verdict's entry of run `id` (its exit), or NULL. */
static json_t *run_of(const grp_verdict *vd, const char *id)
{
    size_t i;
    json_t *r;
    json_array_foreach(vd->runs, i, r) if (!strcmp(json_string_value(json_object_get(r, "run_id")) ?: "", id)) return r;
    return NULL;
}

int divergence_alert_enqueue(const grp *g, const grp_verdict *vd, const verdict *v, char *err, size_t cap)
{
    json_t *first = vd->first, *entries = json_object_get(first, "runs");
    const char *name = json_string_value(json_object_get(first, "name")) ?: "";
    const char *kind = json_string_value(json_object_get(first, "kind")) ?: "";
    const char *cause = json_string_value(json_object_get(first, "cause")) ?: "";
    json_int_t step = json_integer_value(json_object_get(first, "step"));
    int rank = (int)json_integer_value(json_object_get(first, "rank"));
    json_t *site = json_object_get(first, "site");
    const char *site_text = json_string_value(json_object_get(site, "text"));
    char summary[600], frag[600], body[8192];
    size_t i;
    /* One story: the verdict's first divergence and cause (server/compare/verdict.h); a restore difference and a
     * logical tensor of runs of different rank counts say what they are. */
    int restore = !strcmp(kind, "restore"), logical = json_is_true(json_object_get(first, "logical"));
    if (restore)
        snprintf(summary, sizeof(summary), "twin group %s: a resumed run restored step %lld with other state (rank %d, "
                 "%s): %s", g->name, (long long)step, rank, name, cause);
    else if (logical)
        snprintf(summary, sizeof(summary), "twin group %s diverged at step %lld (logical tensor %s, runs of different "
                 "rank counts): %s", g->name, (long long)step, name, cause);
    else
        snprintf(summary, sizeof(summary), "twin group %s diverged at step %lld (rank %d, %s): %s", g->name,
                 (long long)step, rank, name, cause);
    /* the group name is percent-encoded in the link */
    size_t fl = (size_t)snprintf(frag, sizeof(frag), "/twins/");
    for (const unsigned char *c = (const unsigned char *)g->name; *c && fl + 4 < sizeof(frag); c++)
        fl += (size_t)(isalnum(*c) || strchr("-._~", *c) ? snprintf(frag + fl, sizeof(frag) - fl, "%c", *c)
                                                         : snprintf(frag + fl, sizeof(frag) - fl, "%%%02X", *c));
    char *url = alert_url(frag);
    size_t bl;
    long long occ = (long long)json_integer_value(json_object_get(first, "occurrence"));
    if (restore)
        bl = (size_t)snprintf(body, sizeof(body),
                              "Twin group %s: restore difference at step %lld, rank %d: state entry %s (occurrence "
                              "%lld) of the resumed run is not what its twin saved in the checkpoint of that step; "
                              "every later step is suspect.\n"
                              "Cause: %s: %s.\n",
                              g->name, (long long)step, rank, name, occ, cause, vd->cause_why);
    else if (logical)
        bl = (size_t)snprintf(body, sizeof(body),
                              "Twin group %s diverged: first divergence at step %lld in logical tensor %s (occurrence "
                              "%lld, %s), its shards combined across ranks (the runs have different rank counts).\n"
                              "Cause: %s: %s.\n",
                              g->name, (long long)step, name, occ, kind, cause, vd->cause_why);
    else
        bl = (size_t)snprintf(body, sizeof(body),
                              "Twin group %s diverged: first divergence at step %lld, rank %d, record %s "
                              "(occurrence %lld, seq %lld, %s)%s%s.\n"
                              "Cause: %s: %s.\n",
                              g->name, (long long)step, rank, name, occ,
                              (long long)json_integer_value(json_object_get(first, "seq")), kind,
                              site_text ? ", called at " : "", site_text ? site_text : "", cause, vd->cause_why);
    if (vd->suggest[0] && bl < sizeof(body))
        bl += (size_t)snprintf(body + bl, sizeof(body) - bl,
                               "If these are run-specific values (timings, process ids), leave them out: "
                               "--lockstep-ignore='%s' (LOCKSTEP_IGNORE='%s').\n",
                               vd->suggest, vd->suggest);
    json_t *runs = json_array();
    const char *users[GROUP_MAX_RUNS];
    int nusers = 0;
    for (int a = 0; a < g->nruns; a++) {
        json_t *e, *mine = NULL;
        json_array_foreach(
            entries, i, e) if (!strcmp(json_string_value(json_object_get(e, "run_id")) ?: "", g->runs[a].id)) mine = e;
        const hw_slot *s = group_slot(g, a, rank);
        json_t *val = mine ? json_object_get(mine, "value") : NULL;
        char vtxt[64] = "none", exit_txt[48] = "running";
        if (json_is_number(val))
            snprintf(vtxt, sizeof(vtxt), "%.17g", json_number_value(val));
        json_t *run = run_of(vd, g->runs[a].id), *code = json_object_get(run, "exit_code");
        if (json_is_integer(code))
            snprintf(exit_txt, sizeof(exit_txt), "exit %lld", (long long)json_integer_value(code));
        const char *fp = mine ? json_string_value(json_object_get(mine, "fp")) : NULL;
        const char *vb = mine ? json_string_value(json_object_get(mine, "value_bits")) : NULL;
        int present = mine && json_is_true(json_object_get(mine, "present"));
        const char *role = mine ? json_string_value(json_object_get(mine, "role")) : NULL;
        if (bl < sizeof(body))
            bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "  run %s (job %s, user %s, node %s, %s)%s%s: %s\n",
                                   g->runs[a].id, g->runs[a].job, g->runs[a].user, s->node ? s->node : "?", exit_txt,
                                   role ? ", " : "", role ? role : "",
                                   present ? "" : restore && role && !strcmp(role, "restored") ? "not restored"
                                                                                               : "record missing");
        if (present && bl < sizeof(body)) {
            bl--; /* replace the newline */
            bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "fp %s, value %s%s%s%s\n", fp ? fp : "?", vtxt,
                                   vb ? " (bits " : "", vb ? vb : "", vb ? ")" : "");
        }
        json_array_append_new(runs, json_pack("{s:s, s:s, s:s, s:s?, s:b, s:s?, s:O?, s:s?, s:O?, s:s?}", "run_id",
                                              g->runs[a].id, "job_id", g->runs[a].job, "user", g->runs[a].user, "node",
                                              s->node, "present", present, "fp", fp, "value", val, "value_bits", vb,
                                              "exit_code", code, "role", role));
        int seen = !*g->runs[a].user;
        for (int u = 0; u < nusers && !seen; u++)
            seen = !strcmp(users[u], g->runs[a].user);
        if (!seen)
            users[nusers++] = g->runs[a].user;
    }
    if (bl < sizeof(body))
        bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "Group status: %s (%s).\nClassified as %s: %s.\nDashboard: %s\n",
                               vd->status, vd->status_why, v->cls, v->reason, url);
    json_t *details = json_pack(
        "{s:s, s:I, s:i, s:s, s:I, s:I, s:s, s:s, s:s, s:O, s:O, s:s?, s:s, s:s, s:s, s:o}", "group", g->name, "step",
        step, "rank", rank, "name", name, "occurrence", json_integer_value(json_object_get(first, "occurrence")),
        "seq", json_integer_value(json_object_get(first, "seq")), "kind", kind, "cause", cause, "cause_detail",
        vd->cause_why, "origin_ranks", json_object_get(first, "origin_ranks"), "site", site ? site : json_null(),
        "suggest_ignore", vd->suggest[0] ? vd->suggest : NULL, "status", vd->status, "classification", v->cls, "reason",
        v->reason, "runs", runs);
    char key[300];
    snprintf(key, sizeof(key), "group:%s", g->name);
    alert_spec a = {.dedup_key = key,
                    .kind = "divergence",
                    .group = g->name,
                    .severity = "warning",
                    .summary = summary,
                    .body = body,
                    .url = url,
                    .details = details,
                    .recipients = users,
                    .nrecipients = nusers};
    long long id = alert_enqueue(&a, err, cap);
    json_decref(details);
    free(url);
    return id < 0 ? -1 : 0;
}
