/* divergence_alert.c - the alert a twin group's first divergence raises: its summary, text, details and recipients. */
#include "server/fleet/divergence_alert.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/fleet/alerts.h"

int divergence_alert_enqueue(const grp *g, PGresult *divs, json_t *entries, const verdict *v, char *err, size_t cap)
{
    const char *step = PQgetvalue(divs, 0, 1), *rank_s = PQgetvalue(divs, 0, 0), *name = PQgetvalue(divs, 0, 3);
    int rank = atoi(rank_s);
    char summary[600], frag[600], body[8192];
    snprintf(summary, sizeof(summary), "twin group %s diverged at step %s (rank %s, %s)", g->name, step, rank_s, name);
    /* the group name is percent-encoded in the link */
    size_t fl = (size_t)snprintf(frag, sizeof(frag), "/twins/");
    for (const unsigned char *c = (const unsigned char *)g->name; *c && fl + 4 < sizeof(frag); c++)
        fl += (size_t)(isalnum(*c) || strchr("-._~", *c) ? snprintf(frag + fl, sizeof(frag) - fl, "%c", *c)
                                                         : snprintf(frag + fl, sizeof(frag) - fl, "%%%02X", *c));
    char *url = alert_url(frag);
    size_t bl = (size_t)snprintf(body, sizeof(body),
                                 "Twin group %s diverged: first divergence at step %s, rank %s, record %s "
                                 "(occurrence %s, seq %s, %s).\n",
                                 g->name, step, rank_s, name, PQgetvalue(divs, 0, 4), PQgetvalue(divs, 0, 2),
                                 PQgetvalue(divs, 0, 5));
    json_t *runs = json_array();
    const char *users[GROUP_MAX_RUNS];
    int nusers = 0;
    for (int a = 0; a < g->nruns; a++) {
        size_t i;
        json_t *e, *mine = NULL;
        json_array_foreach(
            entries, i, e) if (!strcmp(json_string_value(json_object_get(e, "run_id")) ?: "", g->runs[a].id)) mine = e;
        const hw_slot *s = group_slot(g, a, rank);
        json_t *val = mine ? json_object_get(mine, "value") : NULL;
        char vtxt[64] = "none";
        if (json_is_number(val))
            snprintf(vtxt, sizeof(vtxt), "%.17g", json_number_value(val));
        const char *fp = mine ? json_string_value(json_object_get(mine, "fp")) : NULL;
        const char *vb = mine ? json_string_value(json_object_get(mine, "value_bits")) : NULL;
        int present = mine && json_is_true(json_object_get(mine, "present"));
        char where[300];
        if (s->node)
            snprintf(where, sizeof(where), "%s", s->node);
        else if (s->reported && *s->reported)
            snprintf(where, sizeof(where), "%.200s, reported, not attested", s->reported);
        else
            snprintf(where, sizeof(where), "?");
        if (bl < sizeof(body))
            bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "  run %s (job %s, user %s, node %s): %s\n",
                                   g->runs[a].id, g->runs[a].job, g->runs[a].user, where,
                                   present ? "" : "record missing");
        if (present && bl < sizeof(body)) {
            bl--; /* replace the newline */
            bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "fp %s, value %s%s%s%s\n", fp ? fp : "?", vtxt,
                                   vb ? " (bits " : "", vb ? vb : "", vb ? ")" : "");
        }
        json_array_append_new(runs, json_pack("{s:s, s:s, s:s, s:s?, s:b, s:s?, s:O?, s:s?}", "run_id", g->runs[a].id,
                                              "job_id", g->runs[a].job, "user", g->runs[a].user, "node", s->node,
                                              "present", present, "fp", fp, "value", val, "value_bits", vb));
        int seen = !*g->runs[a].user;
        for (int u = 0; u < nusers && !seen; u++)
            seen = !strcmp(users[u], g->runs[a].user);
        if (!seen)
            users[nusers++] = g->runs[a].user;
    }
    if (bl < sizeof(body))
        bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "Classified as %s: %s.\nDashboard: %s\n", v->cls,
                               v->reason, url);
    json_t *details =
        json_pack("{s:s, s:I, s:i, s:s, s:i, s:I, s:s, s:s, s:s, s:o}", "group", g->name, "step",
                  (json_int_t)strtoll(step, NULL, 10), "rank", rank, "record", name, "occurrence",
                  atoi(PQgetvalue(divs, 0, 4)), "seq", (json_int_t)strtoll(PQgetvalue(divs, 0, 2), NULL, 10), "kind",
                  PQgetvalue(divs, 0, 5), "classification", v->cls, "reason", v->reason, "runs", runs);
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

