/* twins_list.c - GET /api/v1/twins: the twin groups, newest first, each with its kind, status, first divergence,
 * classification, suspected hardware and odd runs, filtered by kind, status, user, node and time. */
#include "server/api/twins_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/group.h"
#include "server/api/list.h"
#include "server/api/pgjson.h"
#include "server/api/twin_row.h"
#include "server/twins/glance.h"
#include "server/rules/outcome.h"
#include "server/twins/findings.h"
#include "server/twins/twin_read.h"
#include "server/core/limits.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/rules/group_rule.h"

/* The twin-group list: candidates are read newest first (by their newest run) with the SQL filters applied; a
 * kind or status filter is applied to them with group_kind_of (server/rules/group_rule.h: the kind is read from the
 * key) and twin_status (the status facts of LIST_SCAN_CHUNK candidates at a time from findings_facts), looking at
 * most at LIST_SCAN_MAX candidates per request (scan). The cursor is a position among the candidates. */
#define LIST_SCAN_CHUNK 200
#define LIST_SCAN_MAX 5000
#define LIST_MAX 500

/* One group of the page being built. */
typedef struct list_group {
    char *name;
    twin_facts facts;
    group_kind kind;
} list_group;

/* What the request filters on besides SQL's filters: a status (NULL: any) and a set of kinds (bit k: group_kind k). */
typedef struct list_filter {
    const char *status;
    unsigned kinds;
} list_filter;

#define NKINDS (GROUP_EXPERIMENT + 1)
#define ALL_KINDS ((1u << NKINDS) - 1)

/* kind_parse - the group kind named `s` (group_kind_name), or -1. */
static int kind_parse(const char *s)
{
    for (int k = 0; k < NKINDS; k++)
        if (!strcmp(group_kind_name((group_kind)k), s))
            return k;
    return -1;
}

/* list_item - the page's JSON item of group `lg`: its kind, its status by the one rule; runs, users, times, first
 * divergence, classification, suspected hardware, odd runs and the newest replay verdict are filled in later. */
static json_t *list_item(const list_group *lg)
{
    char why[512];
    const char *status = twin_status(&lg->facts, why, sizeof(why));
    json_t *o = json_pack("{s:s, s:s, s:n, s:s, s:s, s:s, s:i, s:[], s:[], s:n, s:n, s:n, s:n, s:n, s:[]}", "group",
                          lg->name, "name", lg->name, "owner", "kind", group_kind_name(lg->kind), "status", status,
                          "status_reason", why, "run_count", 0, "runs", "users", "created_at", "last_run_at",
                          "first_divergence", "classification", "replay", "odd_runs");
    return o;
}

/* fill_replays_owners - each item's name and owner, and its newest narrow (lockstep narrow): its state and verdict. */
static void fill_replays_owners(json_t *items, PGresult *nr, PGresult *ow)
{
    /* each group's name and owner (a group holds its name as its key unless another owner's holds it) */
    for (int i = 0; i < PQntuples(ow); i++) {
        json_t *it = json_object_get(items, PQgetvalue(ow, i, 0));
        if (!it)
            continue;
        json_object_set_new(it, "name", json_string(PQgetvalue(ow, i, 1)));
        json_object_set_new(
            it, "owner",
            json_pack("{s:s, s:b}", "user", PQgetvalue(ow, i, 2), "attested", PQgetvalue(ow, i, 3)[0] == 't'));
    }
    for (int i = 0; i < PQntuples(nr); i++) {
        json_t *it = json_object_get(items, PQgetvalue(nr, i, 0));
        if (it)
            json_object_set_new(it, "replay",
                                json_pack("{s:I, s:s, s:o, s:o}", "id",
                                          (json_int_t)strtoll(PQgetvalue(nr, i, 1), NULL, 10), "state",
                                          PQgetvalue(nr, i, 2), "verdict", pg_str(nr, i, 3), "node", pg_str(nr, i, 4)));
    }
}

/* fill_runs - each item's runs (their outcomes: fill_findings), users, run count and times, from the twins_runs rows
 * `r` (in run order). */
static void fill_runs(json_t *items, PGresult *r)
{
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *it = json_object_get(items, PQgetvalue(r, i, 0));
        if (!it)
            continue;
        json_t *runs = json_object_get(it, "runs"), *users = json_object_get(it, "users");
        const char *created = PQgetvalue(r, i, 7), *user = PQgetvalue(r, i, 4);
        json_object_set_new(it, "run_count", json_integer(json_integer_value(json_object_get(it, "run_count")) + 1));
        if (json_array_size(runs) < GROUP_MAX_RUNS)
            json_array_append_new(runs,
                                  json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "run_id", PQgetvalue(r, i, 1),
                                            "job_id", PQgetvalue(r, i, 2), "step_id", PQgetvalue(r, i, 3), "user", user,
                                            "nodes", PQgetvalue(r, i, 5), "status", PQgetvalue(r, i, 6), "created_at",
                                            created, "ended_at", pg_str(r, i, 8)));
        int seen = !*user;
        size_t k;
        json_t *u;
        json_array_foreach(users, k, u) seen |= !strcmp(json_string_value(u), user);
        if (!seen)
            json_array_append_new(users, json_string(user));
        if (json_is_null(json_object_get(it, "created_at")))
            json_object_set_new(it, "created_at", json_string(created));
        json_object_set_new(it, "last_run_at", json_string(created)); /* rows in run order: the newest last */
    }
}

/* fill_findings - for each group of `page` that diverged, its findings (findings_load): the first divergence (the
 * object GET /twins/G shows, with its cause, origin ranks and call site); then each run's outcome (glance_run_outcomes,
 * as GET /twins/G's runs say it) and every item's odd runs. Returns 0, or -1 with the database's message. */
static int fill_findings(json_t *items, const list_group *page, int n, char *err, size_t cap)
{
    size_t nruns = 0, k;
    json_t *run;
    for (int i = 0; i < n; i++) {
        json_t *it = json_object_get(items, page[i].name);
        nruns += json_array_size(json_object_get(it, "runs"));
        if (!page[i].facts.diverged)
            continue;
        grp_findings vd;
        int got = findings_load(page[i].name, &vd, err, cap);
        if (got < 0)
            return -1;
        if (got > 0 && json_is_object(vd.first)) {
            twin_row_ulps(json_object_get(vd.first, "runs"));
            json_object_set(it, "first_divergence", vd.first);
        }
        findings_release(&vd);
    }
    const char **ids = xcalloc(nruns + 1, sizeof(char *)), **groups = xcalloc(nruns + 1, sizeof(char *)),
               **statuses = xcalloc(nruns + 1, sizeof(char *)), **outcomes = xcalloc(nruns + 1, sizeof(char *));
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        json_t *it = json_object_get(items, page[i].name);
        json_array_foreach(json_object_get(it, "runs"), k, run)
        {
            ids[at] = json_string_value(json_object_get(run, "run_id")) ?: "";
            groups[at] = page[i].name;
            statuses[at++] = json_string_value(json_object_get(it, "status")) ?: "pending";
        }
    }
    int rc = glance_run_outcomes(ids, groups, statuses, (int)nruns, outcomes, err, cap);
    at = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        json_t *it = json_object_get(items, page[i].name);
        json_array_foreach(json_object_get(it, "runs"), k, run)
        {
            const char *o = outcomes[at++] ?: "pending";
            json_object_set_new(run, "outcome", json_string(o));
            json_object_set_new(run, "outcome_why", json_string(twin_outcome_why(o)));
        }
        json_object_set_new(it, "odd_runs", twin_row_odd_runs(json_object_get(it, "runs")));
    }
    free(ids);
    free(groups);
    free(statuses);
    free(outcomes);
    return rc;
}

/* fill_items - every item of `items` (an object keyed by group key; `page` in order) from batched reads: name, owner,
 * newest narrow, runs, users, times, classification, suspected hardware; then the findings (fill_findings). Returns
 * 0, or -1 with the database's message. */
static int fill_items(json_t *items, const char *names_json, const list_group *page, int n, char *err, size_t cap)
{
    PGresult *r = twin_read_runs(names_json, err, cap);
    PGresult *v = r ? twin_read_classes(names_json, err, cap) : NULL;
    PGresult *nr = v ? twin_read_replays(names_json, err, cap) : NULL;
    PGresult *ow = nr ? twin_read_owners(names_json, err, cap) : NULL;
    if (!ow) {
        PQclear(r);
        PQclear(v);
        PQclear(nr);
        return -1;
    }
    fill_replays_owners(items, nr, ow);
    fill_runs(items, r);
    for (int i = 0; i < PQntuples(v); i++) {
        json_t *it = json_object_get(items, PQgetvalue(v, i, TWIN_CLASS_NCOLS));
        if (it)
            json_object_set_new(it, "classification", twin_row_classification(v, i));
    }
    PQclear(ow);
    PQclear(nr);
    PQclear(r);
    PQclear(v);
    if (twin_row_suspected(names_json, items, err, cap) < 0)
        return -1;
    return fill_findings(items, page, n, err, cap);
}

/* parse_filter - ?status= (one of TWIN_STATUSES) and ?kind= (group kinds, comma-separated) into `f`. Returns
 * 0, or -1 after replying 400. */
static int parse_filter(http_req *req, list_filter *f)
{
    const char *want = http_query(req, "status"), *kinds = http_query(req, "kind");
    char detail[400];
    f->status = want && *want ? want : NULL;
    f->kinds = ALL_KINDS;
    if (f->status) {
        int known = 0;
        for (int i = 0; TWIN_STATUSES[i]; i++)
            known |= !strcmp(TWIN_STATUSES[i], f->status);
        if (!known) {
            size_t n = (size_t)snprintf(detail, sizeof(detail), "?status=%.40s is not a group status; one of", want);
            for (int i = 0; TWIN_STATUSES[i] && n < sizeof(detail); i++)
                n += (size_t)snprintf(detail + n, sizeof(detail) - n, "%s %s", i ? "," : "", TWIN_STATUSES[i]);
            http_reply_error(req, 400, "bad query argument", detail, "see docs/server.md");
            return -1;
        }
    }
    if (!kinds || !*kinds)
        return 0;
    f->kinds = 0;
    for (const char *p = kinds;;) { /* every comma-separated part, an empty one included */
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char one[32];
        int k = len < sizeof(one) ? (snprintf(one, sizeof(one), "%.*s", (int)len, p), kind_parse(one)) : -1;
        if (k < 0) {
            size_t n = (size_t)snprintf(detail, sizeof(detail), "?kind=%.60s is not a list of group kinds; each one of",
                                        kinds);
            for (int i = 0; i < NKINDS && n < sizeof(detail); i++)
                n += (size_t)snprintf(detail + n, sizeof(detail) - n, "%s %s", i ? "," : "",
                                      group_kind_name((group_kind)i));
            http_reply_error(req, 400, "bad query argument", detail, "e.g. ?kind=twins, or ?kind=replay,noise");
            return -1;
        }
        f->kinds |= 1u << k;
        if (!e)
            return 0;
        p = e + 1;
    }
}

/* read_candidates - at most `count` candidates from position `from` (those filter `tf` selects), their kinds
 * (group_kind_of) into *kinds (the caller frees it) and how many candidates there are in all into *all (-1 when none
 * was read). Returns the result (the caller clears it), or NULL with the database's message. */
static PGresult *read_candidates(const twin_list_filter *tf, long long from, long long count, group_kind **kinds,
                                 long long *all, char *err, size_t cap)
{
    PGresult *r = twin_read_list(tf, from, count, err, cap);
    if (!r)
        return NULL;
    int rows = PQntuples(r);
    *all = rows ? strtoll(PQgetvalue(r, 0, 1), NULL, 10) : -1;
    *kinds = xcalloc((size_t)rows + 1, sizeof(group_kind));
    for (int j = 0; j < rows; j++)
        (*kinds)[j] = group_kind_of(PQgetvalue(r, j, 0));
    return r;
}

/* scan - the page from position `cursor` (a position among the candidates) into page[0..*n), and the envelope's
 * *total and *next (-1: null). Without a filter, one read of `limit` candidates, `total` every candidate. With one,
 * up to LIST_SCAN_MAX candidates are read at once with their kinds (from the first one while the cursor is among
 * them, so that a kind filter's total is exact: the front page's default), and their status facts are read
 * LIST_SCAN_CHUNK kind-matching ones at a time (the page's only, with no status filter) until the page is full.
 * Returns 0, or -1 with the database's message. */
static int scan(const twin_list_filter *tf, const list_filter *f, long long limit, long long cursor, list_group *page,
                int *n, long long *total, long long *next, char *err, size_t cap)
{
    int filtered = f->status || f->kinds != ALL_KINDS, more = 0, rc = 0;
    long long base = !filtered || (f->status && f->kinds == ALL_KINDS) || cursor >= LIST_SCAN_MAX ? cursor : 0;
    long long all;
    group_kind *kinds = NULL;
    PGresult *r = read_candidates(tf, base, filtered ? LIST_SCAN_MAX : limit, &kinds, &all, err, cap);
    if (!r)
        return -1;
    int rows = PQntuples(r), j = (int)(cursor - base), matching = 0;
    *n = 0;
    for (int k = 0; k < rows; k++)
        matching += (f->kinds & (1u << kinds[k])) != 0;
    const char **names = xcalloc((size_t)rows + 1, sizeof(char *));
    int *at = xcalloc((size_t)rows + 1, sizeof(int));
    twin_facts *facts = xcalloc((size_t)rows + 1, sizeof(twin_facts));
    while (j < rows && !more && rc == 0) {
        /* the next kind-matching candidates, and their status facts */
        int want = f->status ? LIST_SCAN_CHUNK : (int)(limit + 1 - *n), cnt = 0, k = j;
        for (; k < rows && cnt < want; k++)
            if (f->kinds & (1u << kinds[k])) {
                names[cnt] = PQgetvalue(r, k, 0);
                at[cnt++] = k;
            }
        if (findings_facts(names, cnt, facts, err, cap) < 0) {
            rc = -1;
            break;
        }
        for (int i = 0; i < cnt; i++) {
            char why[512];
            if (f->status && strcmp(twin_status(&facts[i], why, sizeof(why)), f->status))
                continue;
            if (*n == limit) { /* a further match: the next page starts with it */
                more = 1;
                *next = base + at[i];
                break;
            }
            page[*n] = (list_group){xstrdup(names[i]), facts[i], kinds[at[i]]};
            (*n)++;
        }
        j = k;
    }
    int read_all = all < 0 || base + rows >= all;
    if (!more)
        *next = read_all ? -1 : base + rows;
    if (!filtered)
        *total = *n || cursor == 0 ? (all >= 0 ? all : 0) : -1;
    else if (!f->status)
        *total = base == 0 && read_all ? matching : -1; /* every candidate's kind is known */
    else
        *total = cursor == 0 && read_all && !more ? *n : -1; /* every candidate was looked at */
    if (!filtered)                                           /* one read of the page: the next page follows it */
        *next = *total >= 0 && cursor + *n < *total ? cursor + *n : -1;
    free(names);
    free(at);
    free(facts);
    free(kinds);
    PQclear(r);
    return rc;
}

/* read_twins_list - GET /api/v1/twins: the twin groups, newest first, filtered by kind and status (the rules),
 * user, node and time, in the list envelope. */
static enum MHD_Result read_twins_list(http_req *req, char **args)
{
    (void)args;
    long long limit, cursor, total = -1, next = -1;
    char since[64], err[512];
    group_viewer viewer;
    list_filter f;
    if (group_reader(req, &viewer) < 0)
        return MHD_YES;
    if (api_page(req, 50, LIST_MAX, "offset", 0, &limit, &cursor) < 0 ||
        api_time_arg(req, "since", since, sizeof(since)) < 0 || parse_filter(req, &f) < 0)
        return MHD_YES;
    const char *user = http_query(req, "user"), *node = http_query(req, "node");
    twin_list_filter tf = {user ? user : "", node ? node : "", since, viewer.user, viewer.attested};
    list_group *page = xcalloc((size_t)limit + 1, sizeof(*page));
    int n = 0;
    int rc = scan(&tf, &f, limit, cursor, page, &n, &total, &next, err, sizeof(err));
    json_t *byname = json_object(), *items = json_array();
    const char **names = xcalloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++) {
        json_t *it = list_item(&page[i]);
        json_object_set(byname, page[i].name, it);
        json_array_append_new(items, it);
        names[i] = page[i].name;
    }
    char *arr = group_names_json(names, n);
    free(names);
    if (rc == 0 && n)
        rc = fill_items(byname, arr, page, n, err, sizeof(err));
    free(arr);
    json_decref(byname);
    for (int i = 0; i < n; i++)
        free(page[i].name);
    free(page);
    if (rc < 0) {
        json_decref(items);
        return http_reply_db_down(req, err);
    }
    json_t *o = api_list(items, total, limit, next), *statuses = json_array();
    for (int i = 0; TWIN_STATUSES[i]; i++) /* what ?status= takes: the dashboard's filter offers these */
        json_array_append_new(statuses, json_string(TWIN_STATUSES[i]));
    json_object_set_new(o, "statuses", statuses);
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    /* open, the admin, or a job's own token (?job=J) for its user's groups (group_reader) */
    {"GET", "/api/v1/twins", MR_READ, AUTH_SELF, read_twins_list, .reads = 1},
};

void api_twins_list_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
