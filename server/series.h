/* series.h - GET /api/v1/runs/{id}/series: a run's scalar metrics as compact step/value arrays (the curves). */
#ifndef SERVER_SERIES_H
#define SERVER_SERIES_H

#include "server/http.h"

/* series_register - prepare the statements (called with the other reads). */
void series_register(void);

/* read_run_series - GET /api/v1/runs/{id}/series?rank=R&name=loss,grad_norm&limit=N:
 * {"run_id", "rank", "series": [{"name", "steps": [...], "values": [...],
 * "value_bits": [...]}]} for occurrence 0 of each named scalar record, by
 * step; at most `limit` (default 100000) points in all. A value JSON cannot
 * hold (NaN, infinities) is null in `values` and exact in `value_bits`. */
enum MHD_Result read_run_series(http_req *req, const char *run_id);

#endif /* SERVER_SERIES_H */
