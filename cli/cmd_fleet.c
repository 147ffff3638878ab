/* cmd_fleet.c - `lockstep nodes|node NAME|alerts [ack ID]`: hardware suspects, node history and alerts from lockstepd.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/table.h"

/* cell - a JSON member as short text for a table cell (see client_cell). */
static const char *cell(json_t *o, const char *key, char *buf, size_t cap)
{
    return client_cell(o, key, 1, buf, cap);
}

static int dump(json_t *j)
{
    client_print_json(j);
    return CLI_OK;
}

static void node_table(json_t *nodes)
{
    static const char *const head[] = {"NODE", "STATE", "SCORE", "INVOLVEMENTS", "RUNS", "RATE", "GPUS", "LAST SEEN"};
    table t;
    table_init(&t, 8, head);
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n)
    {
        char b[8][64];
        snprintf(b[6], 64, "%zu", json_array_size(json_object_get(n, "gpus")));
        const char *row[8] = {cell(n, "name", b[0], 64),
                              cell(n, "state", b[1], 64),
                              cell(n, "score", b[2], 64),
                              cell(n, "involvements", b[3], 64),
                              cell(n, "runs", b[4], 64),
                              cell(n, "rate", b[5], 64),
                              b[6],
                              cell(n, "last_seen", b[7], 64)};
        table_add(&t, row);
    }
    table_print(&t, stdout);
    table_free(&t);
}

static int cmd_nodes(const cli_args *a)
{
    if (a->npos)
        return cli_args_fail(a, "unexpected argument '%s'", a->pos[0]);
    client_conf c;
    if (client_conf_load(&c, &a->g) < 0)
        return CLI_BAD_INPUT;
    json_t *reply;
    int rc = client_get(&c, "/api/v1/nodes", &reply, "cannot list nodes");
    if (rc)
        return rc;
    if (c.json)
        return dump(reply);
    json_t *nodes = json_object_get(reply, "items");
    if (!json_array_size(nodes)) {
        printf("no nodes yet: nodes appear once their runs are compared with twins\n");
    } else {
        node_table(nodes);
        json_t *th = json_object_get(reply, "thresholds");
        char b[3][64], base[32] = "-";
        const json_t *bv = json_object_get(reply, "baseline");
        if (json_is_number(bv)) /* one way everywhere: a percentage with one decimal (docs/suspects.md) */
            snprintf(base, sizeof(base), "%.1f%%", 100.0 * json_number_value(bv));
        printf("\nfleet baseline %s; suspect when score >= %s with at least %s involvements\n", base,
               cell(th, "suspect", b[1], 64) ?: "-", cell(th, "min_evidence", b[2], 64) ?: "-");
    }
    json_decref(reply);
    return CLI_OK;
}

static int cmd_node(const cli_args *a)
{
    if (a->npos == 2)
        return cli_args_fail(a, "node NAME %s takes a reason: lockstep node NAME %s \"REASON\"", a->pos[1], a->pos[1]);
    if (a->npos != 1 && a->npos != 3)
        return cli_args_fail(a, "node takes a NAME, or a NAME, an action and its reason");
    client_conf c;
    if (client_conf_load(&c, &a->g) < 0)
        return CLI_BAD_INPUT;
    const char *name = a->pos[0];
    char esc[300], path[600];
    client_escape(name, esc, sizeof(esc));
    if (a->npos == 3) { /* an admin action */
        const char *act = a->pos[1];
        if (strcmp(act, "drain") && strcmp(act, "repair") && strcmp(act, "note"))
            return cli_args_fail(a, "unknown action '%s' (drain, repair or note)", act);
        const char *who = getenv("USER");
        json_t *body = json_pack("{s:s, s:s, s:s}", "action", act, "reason", a->pos[2], "actor", who ? who : "cli");
        json_t *reply;
        snprintf(path, sizeof(path), "/api/v1/nodes/%s/actions", esc);
        int rc = client_post(&c, path, body, &reply, "the action was refused");
        json_decref(body);
        if (rc)
            return rc;
        if (c.json)
            return dump(reply);
        char b[64];
        printf("%s: %s (%s)\n", name, cell(json_object_get(reply, "node"), "state", b, sizeof(b)) ?: "?",
               json_string_value(json_object_get(json_object_get(reply, "event"), "detail")) ?: act);
        json_decref(reply);
        return CLI_OK;
    }

    json_t *node, *hist;
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", esc);
    int rc = client_get(&c, path, &node, "cannot show the node");
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/api/v1/nodes/%s/history?limit=200", esc);
    if ((rc = client_get(&c, path, &hist, "cannot read the node's history"))) {
        json_decref(node);
        return rc;
    }
    if (c.json) {
        json_object_set(node, "history", json_object_get(hist, "items"));
        json_decref(hist);
        return dump(node);
    }
    json_t *n = json_object_get(node, "node");
    json_t *arr = json_array();
    json_array_append(arr, n);
    node_table(arr);
    json_decref(arr);
    json_t *gpus = json_object_get(n, "gpus");
    if (json_array_size(gpus)) {
        printf("\n");
        static const char *const head[] = {"GPU", "NAME", "STATE", "SCORE", "INVOLVEMENTS", "RUNS"};
        table t;
        table_init(&t, 6, head);
        size_t i;
        json_t *g;
        json_array_foreach(gpus, i, g)
        {
            char b[6][64];
            const char *row[6] = {cell(g, "uuid", b[0], 64),         cell(g, "name", b[1], 64),
                                  cell(g, "state", b[2], 64),        cell(g, "score", b[3], 64),
                                  cell(g, "involvements", b[4], 64), cell(g, "runs", b[5], 64)};
            table_add(&t, row);
        }
        table_print(&t, stdout);
        table_free(&t);
    }
    json_t *events = json_object_get(hist, "items");
    printf("\nhistory (newest first):\n");
    if (!json_array_size(events))
        printf("  nothing recorded yet\n");
    static const char *const head[] = {"WHEN", "KIND", "GROUP", "DETAIL"};
    table t;
    table_init(&t, 4, head);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        char b[4][64];
        const char *row[4] = {cell(e, "at", b[0], 64), cell(e, "kind", b[1], 64), cell(e, "group", b[2], 64),
                              cell(e, "detail", b[3], 64)};
        table_add(&t, row);
    }
    if (t.rows)
        table_print(&t, stdout);
    table_free(&t);
    json_decref(hist);
    json_decref(node);
    return CLI_OK;
}

static int cmd_alerts(const cli_args *a)
{
    if (a->npos == 1 && !strcmp(a->pos[0], "ack"))
        return cli_args_fail(a, "alerts ack needs the alert's id");
    if (a->npos && !(a->npos == 2 && !strcmp(a->pos[0], "ack")))
        return cli_args_fail(a, "unexpected argument '%s'", a->pos[0]);
    client_conf c;
    if (client_conf_load(&c, &a->g) < 0)
        return CLI_BAD_INPUT;
    if (a->npos == 2) {
        char esc[100], path[300];
        client_escape(a->pos[1], esc, sizeof(esc));
        snprintf(path, sizeof(path), "/api/v1/alerts/%s/ack", esc);
        const char *who = getenv("USER");
        json_t *body = json_pack("{s:s}", "actor", who ? who : "cli"), *reply;
        int rc = client_post(&c, path, body, &reply, "cannot acknowledge the alert");
        json_decref(body);
        if (rc)
            return rc;
        if (c.json)
            return dump(reply);
        printf("alert %s acknowledged\n", a->pos[1]);
        json_decref(reply);
        return CLI_OK;
    }
    json_t *reply;
    int rc = client_get(&c, "/api/v1/alerts?limit=100", &reply, "cannot list alerts");
    if (rc)
        return rc;
    if (c.json)
        return dump(reply);
    json_t *alerts = json_object_get(reply, "items");
    if (!json_array_size(alerts)) {
        printf("no alerts: no twin group has diverged and no node has turned suspect\n");
        json_decref(reply);
        return CLI_OK;
    }
    static const char *const head[] = {"ID", "KIND", "STATE", "CREATED", "DELIVERED", "SUMMARY"};
    table t;
    table_init(&t, 6, head);
    size_t i, k;
    json_t *al, *d;
    json_array_foreach(alerts, i, al)
    {
        char b[5][64], deliv[128] = "";
        size_t done = 0, all = 0;
        json_array_foreach(json_object_get(al, "deliveries"), k, d)
        {
            all++;
            const char *st = json_string_value(json_object_get(d, "state"));
            done += st && !strcmp(st, "delivered");
        }
        snprintf(deliv, sizeof(deliv), "%zu/%zu", done, all);
        /* how it ended: "resolved (repaired)", "resolved (superseded)" */
        char state[96];
        const char *st = cell(al, "state", b[2], 64), *why = json_string_value(json_object_get(al, "resolved_reason"));
        snprintf(state, sizeof(state), "%s%s%s%s", st ? st : "?", why && st && strcmp(st, why) ? " (" : "",
                 why && st && strcmp(st, why) ? why : "", why && st && strcmp(st, why) ? ")" : "");
        const char *row[6] = {
            cell(al, "id", b[0], 64),     cell(al, "kind", b[1], 64), state, cell(al, "created_at", b[3], 64), deliv,
            cell(al, "summary", b[4], 64)};
        table_add(&t, row);
    }
    table_print(&t, stdout);
    table_free(&t);
    json_decref(reply);
    return CLI_OK;
}

const cli_command cli_cmd_nodes = {
    .name = "nodes",
    .run = cmd_nodes,
    .synopsis = "nodes",
    .summary = "nodes and GPUs with their suspect scores and states",
    .globals = CLI_G_SERVER | CLI_G_JSON,
};

const cli_command cli_cmd_node = {
    .name = "node",
    .run = cmd_node,
    .synopsis = "node NAME\nnode NAME drain|repair|note REASON",
    .summary = "a node's defect history; admin actions (admin token)",
    .globals = CLI_G_SERVER | CLI_G_JSON,
    .complete = {NULL, "drain repair note", NULL},
};

const cli_command cli_cmd_alerts = {
    .name = "alerts",
    .run = cmd_alerts,
    .synopsis = "alerts\nalerts ack ID",
    .summary = "alerts and their deliveries; acknowledge one (admin token)",
    .globals = CLI_G_SERVER | CLI_G_JSON,
    .complete = {"ack", NULL},
};
