/* twin_deltas.h - GET /api/v1/twins/{group}/deltas: each run's per-step distance from the majority on a scalar series.
 */
#ifndef SERVER_API_TWIN_DELTAS_H
#define SERVER_API_TWIN_DELTAS_H

/* api_twin_deltas_register - add GET /api/v1/twins/{group}/deltas?rank=0&name=loss,grad_norm&limit=N to the route
 * table: {"group", "rank", "limit" (points read of each run), "truncated", "series": [{"name", "dtype", "steps",
 * "first_step", "runs": [{"run_id", "ulp": [...], "rel": [...]}]}]} (server/rules/delta.h; docs/server.md). */
void api_twin_deltas_register(void);

#endif /* SERVER_API_TWIN_DELTAS_H */
