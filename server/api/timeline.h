/* timeline.h - GET /api/v1/fleet/timeline: incidents by classification and open suspects, day by day (the front page's
 * chart strip). */
#ifndef SERVER_API_TIMELINE_H
#define SERVER_API_TIMELINE_H

/* api_timeline_register - prepare the statements and add GET /api/v1/fleet/timeline?days=14 to the route table:
 * {"days", "from", "buckets": [{"day", "hardware", "software", "unclassified", "suspect", "drained"}], "other_kinds",
 * "truncated"} (docs/server.md). */
void api_timeline_register(void);

#endif /* SERVER_API_TIMELINE_H */
