/* twin_records.h - GET /api/v1/twins/{group}/records: every run's records at one step and rank, side by side, judged by
 * the one rule. */
#ifndef SERVER_API_TWIN_RECORDS_H
#define SERVER_API_TWIN_RECORDS_H

#include <jansson.h>
#include <microhttpd.h>

#include "server/api/group.h"
#include "server/http/request.h"

/* api_twin_records_register - prepare the statement and add
 * GET /api/v1/twins/{group}/records?rank=R&step=S to the route table: the
 * list envelope of rows, one per (name, occurrence) in sequence order, each
 * with per-run cells, its status (match, diverged, missing), the kind of
 * difference (common/recmatch.h), the ULP distance from the reference run,
 * what the input fingerprints say and the first differing 1 MiB chunk
 * (docs/server.md). api_twins_register must run first (the group's runs). */
void api_twin_records_register(void);

/* api_records_side_by_side - reply with the records of the runs of `g` (whose result it clears) at one rank and
 * step, side by side: the list envelope of rows, one per (name, occurrence) in sequence order, each judged by
 * the one record rule, page `offset`/`limit`, with "rank", "step", "runs" and the members of `extras` (stolen,
 * may be NULL) beside it. GET /api/v1/twins/{group}/records and GET /api/v1/compare/records answer with it. */
enum MHD_Result api_records_side_by_side(http_req *req, group_runs *g, long long rank, long long step, long long limit,
                                         long long offset, json_t *extras);

#endif /* SERVER_API_TWIN_RECORDS_H */
