/* consensus_alert.c - the alert a run's consensus disagreement raises (server/fleet/consensus_alert.h): its summary,
 * text, details, recipients and Alertmanager labels. */
#include "server/fleet/consensus_alert.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/state.h"
#include "server/alerts/alerts.h"
#include "server/store/db.h"

#define MAX_OPEN 16

/* earlier - the run's earlier consensus alerts: 1 when one already reports `facts`; else 0 with how many there are
 * and the open ones' ids (which a new alert supersedes). -1 on a database error. */
static int earlier(const cons_report *r, const char *facts, int *count, long long *open, int *nopen, char *err,
                   size_t cap)
{
    char key[128];
    snprintf(key, sizeof(key), "consensus:%s", r->run_id);
    const char *p[] = {key};
    PGresult *q = db_exec_once("calert_earlier", 1, p, err, cap);
    if (!q)
        return -1;
    int same = 0;
    *count = PQntuples(q);
    *nopen = 0;
    for (int i = 0; i < PQntuples(q); i++) {
        same |= !strcmp(PQgetvalue(q, i, 1), facts);
        if (PQgetvalue(q, i, 2)[0] == 't' && *nopen < MAX_OPEN)
            open[(*nopen)++] = strtoll(PQgetvalue(q, i, 0), NULL, 10);
    }
    PQclear(q);
    return same;
}

/* site_text - the call site as one line (its "text" when the JSON has one, else the JSON), into `out`. */
static void site_text(const char *site, char *out, size_t cap)
{
    *out = 0;
    if (!site)
        return;
    json_t *j = json_loads(site, JSON_DECODE_ANY, NULL);
    const char *t = json_string_value(json_object_get(j, "text"));
    snprintf(out, cap, "%s", t ? t : json_is_object(j) && json_object_size(j) ? site : "");
    json_decref(j);
}

/* int_array - a PostgreSQL int[] text ("{1,2}") as a JSON array (new reference). */
static json_t *int_array(const char *text)
{
    json_t *a = json_array();
    int64_t v[1024];
    int n = db_int_array_parse(text, v, 1024);
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

int consensus_alert_enqueue(const cons_report *r, char *err, size_t cap)
{
    char facts[2400];
    snprintf(facts, sizeof(facts), "%s|%s|%s|%s|%s", r->cls, r->code, r->odd_ranks, r->nodes, r->gpus);
    long long open[MAX_OPEN];
    int count = 0, nopen = 0;
    int same = earlier(r, facts, &count, open, &nopen, err, cap);
    if (same != 0)
        return same < 0 ? -1 : 0;
    char site[600], record[700], where[1200], frag[80];
    site_text(r->site, site, sizeof(site));
    if (*r->name)
        snprintf(record, sizeof(record), "%s (occurrence %d)", r->name, r->occ);
    else
        snprintf(record, sizeof(record),
                 "(its records were not sent: lockstepd found the disagreement in the "
                 "consensus digests)");
    snprintf(where, sizeof(where), "%s%s%s%s", *r->nodes ? "node " : "no attested node", r->nodes,
             *r->gpus ? ", GPU " : "", r->gpus);
    snprintf(frag, sizeof(frag), "/runs/%s", r->run_id);
    char *url = alert_url(frag);
    char summary[900], body[6000], description[2400];
    snprintf(summary, sizeof(summary), "run %s: copies disagree at step %lld (%s, odd rank%s %s on %s): %s", r->run_id,
             r->step, *r->name ? r->name : "consensus digest", r->clear && !strchr(r->odd_ranks, ',') ? "" : "s",
             r->odd_ranks, *r->nodes ? r->nodes : "no attested node", r->cls);
    snprintf(body, sizeof(body),
             "Run %s (job %s): copies that must be bit-identical disagree at step %lld, record %s%s%s.\n"
             "Communicator of %d ranks %s; odd rank%s %s (%s), on %s.\n"
             "Classified as %s (%s): %s.\n"
             "The run's results after step %lld are suspect.\nDashboard: %s\n",
             r->run_id, r->job, r->step, record, *site ? ", called at " : "", site, r->comm_size,
             strcmp(r->comm_ranks, "{}") ? r->comm_ranks : "(more than listed)", strchr(r->odd_ranks, ',') ? "s" : "",
             r->odd_ranks, r->clear ? "outside the majority" : "no majority: one of these", where, r->cls, r->code,
             r->reason, r->step, url);
    snprintf(description, sizeof(description), "Copies disagree at step %lld (%s), odd rank%s %s of %d on %s. %s: %s.",
             r->step, *r->name ? r->name : "consensus digest", strchr(r->odd_ranks, ',') ? "s" : "", r->odd_ranks,
             r->comm_size, where, r->cls, r->reason);
    json_t *sitej = r->site ? json_loads(r->site, JSON_DECODE_ANY, NULL) : NULL;
    json_t *details =
        json_pack("{s:s, s:s, s:I, s:s, s:i, s:o, s:i, s:o, s:b, s:o, s:s, s:s, s:s, s:s, s:s, s:s}", "run_id",
                  r->run_id, "job_id", r->job, "step", (json_int_t)r->step, "name", r->name, "occurrence", r->occ,
                  "comm_ranks", int_array(r->comm_ranks), "comm_size", r->comm_size, "odd_ranks",
                  int_array(r->odd_ranks), "clear", r->clear, "site", sitej ? sitej : json_null(), "node", r->nodes,
                  "gpu", r->gpus, "classification", r->cls, "code", r->code, "reason", r->reason, "url", url);
    const char *blames[64];
    int nblames = 0;
    char nodes[1024];
    snprintf(nodes, sizeof(nodes), "%s", r->nodes);
    if (r->evidence)
        for (char *save = NULL, *t = strtok_r(nodes, ",", &save); t && nblames < 64; t = strtok_r(NULL, ",", &save))
            blames[nblames++] = t;
    char key[160], step_s[32], size_s[16];
    if (count == 0)
        snprintf(key, sizeof(key), "consensus:%s", r->run_id);
    else
        snprintf(key, sizeof(key), "consensus:%s#%d", r->run_id, count + 1);
    snprintf(step_s, sizeof(step_s), "%lld", r->step);
    snprintf(size_s, sizeof(size_s), "%d", r->comm_size);
    json_t *labels =
        json_pack("{s:s, s:s, s:s, s:s}", "run_id", r->run_id, "job_id", r->job, "node", r->nodes, "gpu", r->gpus);
    json_t *ann = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "step", step_s, "record",
                            *r->name ? record : "", "site", site, "comm_ranks", r->comm_ranks, "comm_size", size_s,
                            "odd_ranks", r->odd_ranks, "classification", r->cls, "reason", r->reason);
    alert_spec a = {.dedup_key = key,
                    .kind = "consensus",
                    .run = r->run_key,
                    .node = nblames == 1 ? blames[0] : NULL,
                    .severity = r->evidence ? "critical" : "warning",
                    .summary = summary,
                    .description = description,
                    .body = body,
                    .url = url,
                    .details = details,
                    .mail_users = 1, /* the run's attested user, at the address the site maps */
                    .mail_to = g_srv.cfg.mail_admin[0] ? g_srv.cfg.mail_admin : NULL, /* the site */
                    .labels = labels,
                    .annotations = ann,
                    .blames = blames,
                    .nblames = nblames,
                    .facts = facts};
    int rc = alert_enqueue_superseding(&a, open, nopen, err, cap);
    json_decref(details);
    json_decref(labels);
    json_decref(ann);
    free(url);
    return rc;
}

void consensus_alert_register(void)
{
    db_register("calert_earlier", "SELECT id, facts, resolved_at IS NULL FROM alerts WHERE kind = 'consensus' AND "
                                  "(dedup_key = $1 OR dedup_key LIKE $1 || '#%') ORDER BY id");
}
