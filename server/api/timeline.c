/* timeline.c - GET /api/v1/fleet/timeline: the front page's chart strip, day by day: incidents that diverged by the
 * fleet's classification, and nodes that are open suspects. */
#include "server/api/timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/list.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/fleet/timeline.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/db.h"
#include "server/rules/group_rule.h"

#define TIMELINE_MAX_DAYS 90
#define TIMELINE_MAX_GROUPS 20000 /* diverged groups one answer counts (the oldest first) */

/* One day of the answer. */
typedef struct day_counts {
    char day[16];
    long hardware, software, unclassified, suspect, drained;
} day_counts;

/* count_groups - each group that first diverged in the window (rows of tl_divergences: key, day, class) into its
 * day's count by class, when it is an incident (group_kind_of: twins); *others counts the other kinds. */
static void count_groups(PGresult *r, day_counts *days, int ndays, long *others)
{
    for (int i = 0; i < PQntuples(r); i++) {
        if (group_kind_of(PQgetvalue(r, i, 0)) != GROUP_TWINS) {
            (*others)++;
            continue;
        }
        for (int d = 0; d < ndays; d++) {
            if (strcmp(days[d].day, PQgetvalue(r, i, 1)))
                continue;
            const char *cls = PQgetvalue(r, i, 2);
            if (!strcmp(cls, "hardware"))
                days[d].hardware++;
            else if (!strcmp(cls, "software"))
                days[d].software++;
            else
                days[d].unclassified++;
            break;
        }
    }
}

/* fleet_timeline - GET /api/v1/fleet/timeline?days=14: the last `days` days (UTC, today last): per day, the incidents
 * (twin groups of kind twins) whose first divergence was detected that day, by the fleet's classification now
 * (hardware, software, unclassified: not evaluated yet, or found incomplete), and the nodes that were suspect or
 * drained at the day's end (today: now), from their history. */
static enum MHD_Result fleet_timeline(http_req *req, char **args)
{
    (void)args;
    long long ndays;
    if (api_int_arg(req, "days", 1, TIMELINE_MAX_DAYS, 14, &ndays) < 0)
        return MHD_YES;
    char err[512];
    PGresult *s = timeline_node_states(ndays, err, sizeof(err));
    PGresult *d = s ? timeline_divergences(ndays, TIMELINE_MAX_GROUPS, err, sizeof(err)) : NULL;
    if (!d) {
        PQclear(s);
        return http_reply_db_down(req, err);
    }
    int n = PQntuples(s);
    day_counts *days = xcalloc((size_t)n + 1, sizeof(day_counts));
    for (int i = 0; i < n; i++) {
        snprintf(days[i].day, sizeof(days[i].day), "%s", PQgetvalue(s, i, 0));
        days[i].suspect = atol(PQgetvalue(s, i, 1));
        days[i].drained = atol(PQgetvalue(s, i, 2));
    }
    long others = 0;
    int truncated = PQntuples(d) == TIMELINE_MAX_GROUPS;
    count_groups(d, days, n, &others);
    PQclear(s);
    PQclear(d);
    json_t *buckets = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(buckets, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}", "day", days[i].day, "hardware",
                                                 (int)days[i].hardware, "software", (int)days[i].software,
                                                 "unclassified", (int)days[i].unclassified, "suspect",
                                                 (int)days[i].suspect, "drained", (int)days[i].drained));
    json_t *o = json_pack("{s:I, s:s, s:o, s:i, s:b}", "days", (json_int_t)ndays, "from", n ? days[0].day : "",
                          "buckets", buckets, "other_kinds", (int)others, "truncated", truncated);
    free(days);
    return http_reply_json(req, 200, o);
}

static const route ROUTES[] = {
    {"GET", "/api/v1/fleet/timeline", MR_READ, AUTH_READ, fleet_timeline, .reads = 1},
};

void api_timeline_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}
