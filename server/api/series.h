/* series.h - GET /api/v1/runs/{id}/series: a run's scalar metrics as compact step/value arrays (the curves). */
#ifndef SERVER_API_SERIES_H
#define SERVER_API_SERIES_H

/* api_series_register - prepare the statement and add
 * GET /api/v1/runs/{id}/series?rank=R&name=loss,grad_norm&limit=N to the route
 * table: {"run_id", "rank", "series": [{"name", "steps": [...], "values":
 * [...], "value_bits": [...]}]} for occurrence 0 of each named scalar record,
 * by step; at most `limit` (default 100000) points in all. A value JSON cannot
 * hold (NaN, infinities) is null in `values` and exact in `value_bits`. */
void api_series_register(void);

#endif /* SERVER_API_SERIES_H */
