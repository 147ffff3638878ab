/* fleet_metrics.c - the fleet's state as Prometheus series (server/fleet/fleet_metrics.h): counts that are the same on
 * every lockstepd of one database, and one series per node for its score and state. */
#include "server/fleet/fleet_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/xalloc.h"
#include "server/alerts/alerts.h"
#include "server/store/db.h"

#define STR(x) #x
#define XSTR(x) STR(x)

/* The series, in the order they are written (numbers, not an enum: the statement below names them). Counts read
 * from the database have every label value always present (a series that is 0 is still there). Alerts are never
 * deleted, so their counts only grow: counters. */
#define FM_ALERTS_RAISED 0
#define FM_ALERTS_OPEN 1
#define FM_ALERTS_RESOLVED 2
#define FM_NODES 3
#define FM_SUSPECTS 4
#define FM_DIVERGED_GROUPS 5
#define FM_VERDICTS 6
#define FM_NODE_SCORE 7
#define FM_NODE_STATE 8
#define FM_NODE_INVOLVEMENTS 9
#define FM_NODE_RUNS 10
#define FM_CONSENSUS 11
#define FM_N 12

static const struct {
    const char *name, *type, *help;
} SERIES[FM_N] = {
    [FM_ALERTS_RAISED] =
        {"lockstepd_alerts_raised_total", "counter",
         "Alerts raised, by kind (divergence: a twin group's first divergence; suspect: a node turning "
         "suspect; verdict: a replay experiment's follow-up), as GET /api/v1/alerts?kind= counts them."},
    [FM_ALERTS_OPEN] = {"lockstepd_alerts_open", "gauge",
                        "Alerts open (neither acknowledged nor resolved), by kind, as GET /api/v1/alerts?state=open "
                        "counts them."},
    [FM_ALERTS_RESOLVED] = {"lockstepd_alerts_resolved_total", "counter", "Alerts resolved, by reason."},
    [FM_NODES] = {"lockstepd_nodes", "gauge", "Nodes seen in manifests, by state."},
    [FM_SUSPECTS] = {"lockstepd_suspects", "gauge", "Hardware suspects now: nodes and GPUs in state suspect."},
    [FM_DIVERGED_GROUPS] = {"lockstep_diverged_groups", "gauge",
                            "Twin groups whose first divergence the fleet classified, by classification (replay "
                            "groups and noise replicas left out)."},
    [FM_VERDICTS] = {"lockstep_replay_verdicts", "gauge",
                     "Replay experiments (lockstep narrow) that gave a verdict, by verdict."},
    [FM_NODE_SCORE] = {"lockstep_node_score", "gauge",
                       "A node's suspect score: the probability that its divergence rate is above suspect_ratio x the "
                       "rest of the fleet's rate (0..1)."},
    [FM_NODE_STATE] = {"lockstep_node_state", "gauge", "A node's state: 1 for the state it is in, 0 for the others."},
    [FM_NODE_INVOLVEMENTS] = {"lockstep_node_involvements", "gauge",
                              "Divergences a node was blamed for since its last repair (strong 1, weak a share)."},
    [FM_NODE_RUNS] = {"lockstep_node_runs", "gauge",
                      "Twin-compared runs a node took part in since its last repair (its exposures)."},
    [FM_CONSENSUS] = {"lockstep_consensus_disagreements", "gauge",
                      "Runs whose copies disagreed inside the run (a consensus disagreement, no twin needed) that the "
                      "fleet classified, by classification: hardware (evidence against the odd rank's node), "
                      "inconclusive, software."},
};

/* Node states, the replay verdicts (server/rules/replay.h) and the classifications, as text[] literals. */
#define NODE_STATES_SQL "'{ok,suspect,drained,repaired}'"
#define VERDICTS_SQL "'{software,persistent-hardware,transient-hardware,inconclusive}'"
#define CLASSES_SQL "'{hardware,software}'"
#define CONSENSUS_CLASSES_SQL "'{hardware,inconclusive,software}'"

/* One row a series: (series, label, value, count). */
#define COUNTS_SQL                                                                                                                                                                                                                                                                            \
    "SELECT " XSTR(                                                                                                                                                                                                                                                                           \
        FM_ALERTS_RAISED) ", 'kind', k, (SELECT count(*) FROM alerts WHERE kind = k) "                                                                                                                                                                                                        \
                          "FROM unnest(" ALERT_KINDS_SQL "::text[]) k "                                                                                                                                                                                                                       \
                          "UNION ALL SELECT " XSTR(                                                                                                                                                                                                                                           \
                              FM_ALERTS_OPEN) ", 'kind', k, (SELECT count(*) FROM alerts WHERE kind = k "                                                                                                                                                                                     \
                                              "AND acked_at IS NULL AND resolved_at IS NULL) FROM "                                                                                                                                                                                           \
                                              "unnest(" ALERT_KINDS_SQL "::text[]) k "                                                                                                                                                                                                        \
                                              "UNION ALL SELECT " XSTR(                                                                                                                                                                                                                       \
                                                  FM_ALERTS_RESOLVED) ", 'reason', k, (SELECT count(*) FROM alerts "                                                                                                                                                                          \
                                                                      "WHERE resolved_reason = k) FROM "                                                                                                                                                                                      \
                                                                      "unnest(" ALERT_RESOLVED_REASONS_SQL                                                                                                                                                                                    \
                                                                      "::text[]) k "                                                                                                                                                                                                          \
                                                                      "UNION ALL SELECT " XSTR(                                                                                                                                                                                               \
                                                                          FM_NODES) ", 'state', k, (SELECT count(*) "                                                                                                                                                                         \
                                                                                    "FROM hw_nodes WHERE state = k) "                                                                                                                                                                         \
                                                                                    "FROM unnest(" NODE_STATES_SQL                                                                                                                                                                            \
                                                                                    "::text[]) k "                                                                                                                                                                                            \
                                                                                    "UNION ALL SELECT " XSTR(                                                                                                                                                                                 \
                                                                                        FM_SUSPECTS) ", 'kind', "                                                                                                                                                                             \
                                                                                                     "'node', "                                                                                                                                                                               \
                                                                                                     "(SELECT "                                                                                                                                                                               \
                                                                                                     "count(*) FROM "                                                                                                                                                                         \
                                                                                                     "hw_nodes WHERE "                                                                                                                                                                        \
                                                                                                     "state = "                                                                                                                                                                               \
                                                                                                     "'suspect') "                                                                                                                                                                            \
                                                                                                     "UNION ALL "                                                                                                                                                                             \
                                                                                                     "SELECT " XSTR(                                                                                                                                                                          \
                                                                                                         FM_SUSPECTS) ", 'kind', 'gpu', (SELECT count(*) FROM hw_gpus WHERE state = 'suspect') "                                                                                              \
                                                                                                                      "UNION ALL SELECT " XSTR(                                                                                                                                               \
                                                                                                                          FM_DIVERGED_GROUPS) ", 'class', k, (SELECT count(*) FROM group_evidence WHERE "                                                                                     \
                                                                                                                                              "class = k AND step IS NOT NULL AND reason_code <> 'nondeterministic') FROM unnest(" CLASSES_SQL                                                \
                                                                                                                                              "::text[]) k "                                                                                                                                  \
                                                                                                                                              "UNION ALL SELECT " XSTR(                                                                                                                       \
                                                                                                                                                  FM_VERDICTS) ", 'verdict', k, (SELECT count(*) FROM narrows WHERE state = 'done' "                                                          \
                                                                                                                                                               "AND verdict = k) FROM unnest(" VERDICTS_SQL                                                                                   \
                                                                                                                                                               "::text[]) k UNION ALL SELECT " XSTR(                                                                                          \
                                                                                                                                                                   FM_CONSENSUS) ", 'class', k, (SELECT count(*) FROM consensus_evidence WHERE class = k) FROM unnest(" CONSENSUS_CLASSES_SQL \
                                                                                                                                                                                 "::text[]) k ORDER BY 1"

/* The nodes, highest score first (one more than shown, to tell that some were left out). */
#define NODES_SQL                                                                                                      \
    "SELECT name, state, score, involvements, exposures FROM hw_nodes ORDER BY score DESC, name "                      \
    "LIMIT " XSTR(FLEET_METRICS_NODES) " + 1"

typedef struct text_buf {
    char *s;
    size_t len, cap;
} text_buf;

static void put(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap * 2 + (n > 0 ? (size_t)n : 0);
        b->s = xrealloc(b->s, b->cap);
    }
}

static void head(text_buf *b, int m)
{
    put(b, "# HELP %s %s\n# TYPE %s %s\n", SERIES[m].name, SERIES[m].help, SERIES[m].name, SERIES[m].type);
}

/* label_value - `v` escaped as the text format's label values are (\\, \", \n), into `out`. */
static void label_value(const char *v, char *out, size_t cap)
{
    size_t o = 0;
    for (; *v && o + 3 < cap; v++) {
        if (*v == '\\' || *v == '"' || *v == '\n') {
            out[o++] = '\\';
            out[o++] = *v == '\n' ? 'n' : *v;
        } else
            out[o++] = *v;
    }
    out[o] = 0;
}

/* why_missing - one comment line saying that `what` is missing and why (a new string). */
static char *why_missing(const char *what, const char *err)
{
    size_t n = strlen(err) + strlen(what) + 100;
    char *t = xmalloc(n);
    snprintf(t, n, "# %s missing: the database did not answer (%s)\n", what, err);
    for (char *c = t + 2; *c && c[1]; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    return t;
}

/* put_nodes - the per-node series of the rows of NODES_SQL. */
static void put_nodes(text_buf *b, PGresult *r)
{
    static const char *const states[] = {"ok", "suspect", "drained", "repaired"};
    int n = PQntuples(r) > FLEET_METRICS_NODES ? FLEET_METRICS_NODES : PQntuples(r);
    char(*names)[600] = xcalloc((size_t)n + 1, sizeof(*names));
    for (int i = 0; i < n; i++)
        label_value(PQgetvalue(r, i, 0), names[i], sizeof(names[i]));
    static const int per_node[] = {FM_NODE_SCORE, FM_NODE_STATE, FM_NODE_INVOLVEMENTS, FM_NODE_RUNS};
    for (size_t s = 0; s < sizeof(per_node) / sizeof(per_node[0]); s++) {
        int m = per_node[s];
        head(b, m);
        for (int i = 0; i < n; i++) {
            if (m == FM_NODE_STATE)
                for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++)
                    put(b, "%s{node=\"%s\",state=\"%s\"} %d\n", SERIES[m].name, names[i], states[k],
                        !strcmp(PQgetvalue(r, i, 1), states[k]));
            else
                put(b, "%s{node=\"%s\"} %s\n", SERIES[m].name, names[i],
                    PQgetvalue(r, i,
                               m == FM_NODE_SCORE          ? 2
                               : m == FM_NODE_INVOLVEMENTS ? 3
                                                           : 4));
        }
    }
    if (PQntuples(r) > FLEET_METRICS_NODES)
        put(b, "# per-node series: the %d highest scores shown, the fleet has more nodes\n", FLEET_METRICS_NODES);
    free(names);
}

char *fleet_metrics_text(void)
{
    char err[256];
    PGresult *r = db_exec("metrics_fleet", 0, NULL, err, sizeof(err));
    if (!r)
        return why_missing("the fleet series are", err);
    text_buf b = {xmalloc(8192), 0, 8192};
    b.s[0] = 0;
    int last = -1;
    for (int i = 0; i < PQntuples(r); i++) {
        int m = atoi(PQgetvalue(r, i, 0));
        if (m < 0 || m >= FM_N)
            continue;
        if (m != last)
            head(&b, m);
        last = m;
        put(&b, "%s{%s=\"%s\"} %s\n", SERIES[m].name, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3));
    }
    PQclear(r);
    r = db_exec("metrics_nodes", 0, NULL, err, sizeof(err));
    if (!r) {
        char *w = why_missing("the per-node series are", err);
        put(&b, "%s", w);
        free(w);
        return b.s;
    }
    put_nodes(&b, r);
    PQclear(r);
    return b.s;
}

void fleet_metrics_register(void)
{
    db_register("metrics_fleet", COUNTS_SQL);
    db_register("metrics_nodes", NODES_SQL);
}
