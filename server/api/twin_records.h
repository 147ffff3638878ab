/* twin_records.h - GET /api/v1/twins/{group}/records: every run's records at one step and rank, side by side, judged by the one rule. */
#ifndef SERVER_API_TWIN_RECORDS_H
#define SERVER_API_TWIN_RECORDS_H

/* api_twin_records_register - prepare the statement and add
 * GET /api/v1/twins/{group}/records?rank=R&step=S to the route table: the
 * list envelope of rows, one per (name, occurrence) in sequence order, each
 * with per-run cells, its status (match, diverged, missing), the kind of
 * difference (common/recmatch.h), the ULP distance from the reference run,
 * what the input fingerprints say and the first differing 1 MiB chunk
 * (docs/server.md). api_twins_register must run first (the group's runs). */
void api_twin_records_register(void);

#endif /* SERVER_API_TWIN_RECORDS_H */
