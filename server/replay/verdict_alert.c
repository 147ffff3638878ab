/* verdict_alert.c - the follow-up alert that states a replay experiment's verdict (server/replay/verdict_alert.h). */
#include "server/replay/verdict_alert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/limits.h"
#include "server/alerts/alerts.h"
#include "server/store/db.h"

static const char *jstr(json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : dflt;
}

/* What the follow-up says, borrowed from the narrow's document. */
typedef struct vinfo {
    json_t *doc, *fd, *rec; /* the narrow, its first divergence and the record its finer trace names */
    const char *group, *verdict, *node, *gpu, *ngroup;
    long long id;
} vinfo;

/* body_text - the follow-up's text up to the record: the experiment, its verdict, each placement, the design's
 * notes, the reasoning and the record. Returns how long it would be (as snprintf). */
static size_t body_text(const vinfo *v, char *body, size_t cap)
{
    json_t *doc = v->doc, *fd = v->fd, *rec = v->rec;
    const char *node = v->node, *gpu = v->gpu;
    size_t bl = (size_t)snprintf(
        body, cap,
        "Lockstep replayed the diverging window of twin group %s (first divergence at step %lld, rank %lld, record %s; "
        "cause %s) as narrow %lld, replay group %s.\nVerdict: %s%s%s%s%s: %s.\n",
        v->group, (long long)json_integer_value(json_object_get(fd, "step")),
        (long long)json_integer_value(json_object_get(fd, "rank")), jstr(fd, "name", "?"), jstr(doc, "cause", "?"),
        v->id, v->ngroup, v->verdict, node ? ", node " : "", node ? node : "", gpu ? ", GPU " : "", gpu ? gpu : "",
        jstr(doc, "reason", ""));
    size_t i;
    json_t *p;
    if (bl < cap)
        bl += (size_t)snprintf(body + bl, cap - bl, "Placements tried:\n");
    json_array_foreach(json_object_get(doc, "placements"), i, p)
    {
        json_t *dv = json_object_get(p, "diverged");
        if (bl < cap)
            bl += (size_t)snprintf(body + bl, cap - bl, "  %s on %s (job %s): %s%s; %s\n", jstr(p, "role", "?"),
                                   jstr(p, "nodes", "?"), jstr(p, "job_id", "none"), jstr(p, "outcome", "?"),
                                   json_is_true(dv)    ? ", reproduced the divergence"
                                   : json_is_false(dv) ? ", clean"
                                                       : "",
                                   jstr(p, "detail", ""));
    }
    json_array_foreach(json_object_get(doc, "notes"), i, p) if (bl < cap) bl +=
        (size_t)snprintf(body + bl, cap - bl, "  not placed: %s\n", json_string_value(p));
    if (bl < cap)
        bl += (size_t)snprintf(body + bl, cap - bl, "Reasoning:\n");
    json_array_foreach(json_object_get(doc, "reasoning"), i, p) if (bl < cap) bl +=
        (size_t)snprintf(body + bl, cap - bl, "  - %s\n", json_string_value(p));
    if (json_is_object(rec) && bl < cap)
        bl +=
            (size_t)snprintf(body + bl, cap - bl, "Record: step %lld, rank %lld, \"%s\" occurrence %lld (%s)%s.\n",
                             (long long)json_integer_value(json_object_get(rec, "step")),
                             (long long)json_integer_value(json_object_get(rec, "rank")), jstr(rec, "name", "?"),
                             (long long)json_integer_value(json_object_get(rec, "occurrence")), jstr(rec, "level", "?"),
                             json_is_true(json_object_get(rec, "output_differs_while_inputs_matched"))
                                 ? ": its output differs while its inputs matched"
                                 : ": the first differing record at the finest level traced");
    return bl;
}

/* details_json - the alert's details: the experiment, its verdict and reasoning, each placement, the record and
 * the fleet's classification `cls` ("" none). A new reference. */
static json_t *details_json(const vinfo *v, const char *cls)
{
    size_t i;
    json_t *p, *doc = v->doc;
    json_t *placements = json_array();
    json_array_foreach(json_object_get(doc, "placements"), i, p) json_array_append_new(
        placements, json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "role", json_object_get(p, "role"), "nodes",
                              json_object_get(p, "nodes"), "job_id", json_object_get(p, "job_id"), "run_id",
                              json_object_get(p, "run_id"), "outcome", json_object_get(p, "outcome"), "diverged",
                              json_object_get(p, "diverged"), "detail", json_object_get(p, "detail")));
    return json_pack("{s:s, s:I, s:s, s:s, s:s?, s:s?, s:O?, s:O?, s:o, s:O?, s:O?, s:s?}", "group", v->group, "narrow",
                     (json_int_t)v->id, "narrow_group", v->ngroup, "verdict", v->verdict, "node", v->node, "gpu",
                     v->gpu, "reason", json_object_get(doc, "reason"), "reasoning", json_object_get(doc, "reasoning"),
                     "placements", placements, "record", v->rec, "first_divergence", v->fd, "classification",
                     *cls ? cls : NULL);
}

/* supersede - alert `aid`, the group's newer report, supersedes the group's open divergence alert and an
 * earlier narrow's open follow-up, as a re-evaluation's new alert does (server/fleet/divergence_alert.h). 0, or
 * -1 with the database's message. */
static int supersede(const char *group, long long aid, char *err, size_t cap)
{
    char aids[32];
    snprintf(aids, sizeof(aids), "%lld", aid);
    const char *po[] = {group, aids};
    PGresult *o = db_exec_once("valert_superseded", 2, po, err, cap);
    if (!o)
        return -1;
    int rc = 0;
    for (int k = 0; k < PQntuples(o) && rc == 0; k++)
        if (alert_resolve(strtoll(PQgetvalue(o, k, 0), NULL, 10), "superseded", NULL, aid, err, cap) < 0)
            rc = -1;
    PQclear(o);
    return rc;
}

int verdict_alert_enqueue(json_t *doc, char *err, size_t cap)
{
    vinfo v = {doc,
               json_object_get(doc, "first_divergence"),
               json_object_get(doc, "record"),
               jstr(doc, "group", ""),
               jstr(doc, "verdict", "inconclusive"),
               jstr(doc, "node", NULL),
               jstr(doc, "gpu", NULL),
               jstr(doc, "narrow_group", ""),
               (long long)json_integer_value(json_object_get(doc, "id"))};
    const char *group = v.group, *verdict = v.verdict, *node = v.node, *gpu = v.gpu, *ngroup = v.ngroup;
    long long id = v.id;
    char summary[600], body[12000], key[64];
    snprintf(summary, sizeof(summary), "twin group %s: replay verdict %s%s%s%s%s", group, verdict, node ? " on " : "",
             node ? node : "", gpu ? " GPU " : "", gpu ? gpu : "");
    char *url = alert_group_url(group);
    size_t bl = body_text(&v, body, sizeof(body));

    /* The fleet's classification of the group (said beside the verdict, never replaced by it). */
    const char *pg[] = {group};
    PGresult *c = db_exec_once("valert_class", 1, pg, err, cap);
    if (!c) {
        free(url);
        return -1;
    }
    const char *cls = PQntuples(c) ? PQgetvalue(c, 0, 0) : "";
    if (*cls && bl < sizeof(body))
        bl += (size_t)snprintf(body + bl, sizeof(body) - bl,
                               "The fleet's classification of the group (its rules, not the "
                               "replay): %s: %s.\n",
                               cls, PQgetvalue(c, 0, 1));
    if (bl < sizeof(body))
        bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "Dashboard: %s\n", url);
    json_t *details = details_json(&v, cls);
    /* Alertmanager: the group, and the node and GPU a hardware verdict names; what it says as annotations. */
    char narrow_s[32], step_s[32], facts[800];
    snprintf(narrow_s, sizeof(narrow_s), "%lld", id);
    snprintf(step_s, sizeof(step_s), "%lld", (long long)json_integer_value(json_object_get(v.fd, "step")));
    json_t *labels = json_pack("{s:s, s:s, s:s}", "group", group, "node", node ? node : "", "gpu", gpu ? gpu : "");
    char description[1600];
    snprintf(description, sizeof(description), "Replayed as narrow %lld (%s): %s%s%s%s%s: %s.", id, ngroup, verdict,
             node ? " on node " : "", node ? node : "", gpu ? " GPU " : "", gpu ? gpu : "", jstr(doc, "reason", ""));
    json_t *ann = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "verdict", verdict, "reason", jstr(doc, "reason", ""),
                            "narrow", narrow_s, "narrow_group", ngroup, "first_step", step_s, "classification", cls);
    /* A persistent-hardware verdict blames its node: a repair of the node resolves the alert. */
    const char *blames[1] = {node};
    int nblames = node && !strcmp(verdict, "persistent-hardware") ? 1 : 0;
    snprintf(facts, sizeof(facts), "narrow %lld|%s|%s|%s", id, verdict, node ? node : "", gpu ? gpu : "");
    snprintf(key, sizeof(key), "narrow:%lld", id);
    alert_spec a = {.dedup_key = key,
                    .kind = "verdict",
                    .group = group,
                    .node = node,
                    .severity = !strcmp(verdict, "persistent-hardware") ? "critical" : "warning",
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
                    .facts = facts};
    long long aid = alert_enqueue(&a, err, cap);
    json_decref(details);
    json_decref(labels);
    json_decref(ann);
    PQclear(c);
    free(url);
    if (aid <= 0)
        return aid < 0 ? -1 : 0;
    return supersede(group, aid, err, cap);
}

void verdict_alert_register(void)
{
    db_register("valert_superseded",
                "SELECT id FROM alerts WHERE twin_group = $1 AND kind IN ('divergence', 'verdict') AND "
                "resolved_at IS NULL AND id <> $2::bigint ORDER BY id");
    db_register("valert_class", "SELECT class, reason FROM group_evidence WHERE twin_group = $1");
}
