/* series.h - GET /api/v1/runs/{id}/series: a run's scalar metrics as compact step/value arrays (the curves). */
#ifndef SERVER_API_SERIES_H
#define SERVER_API_SERIES_H

#include <stddef.h>

/* api_series_register - prepare the statement and add
 * GET /api/v1/runs/{id}/series?rank=R&name=loss,grad_norm&limit=N to the route
 * table: {"run_id", "rank", "series": [{"name", "steps": [...], "values":
 * [...], "value_bits": [...]}]} for occurrence 0 of each named scalar record,
 * by step; at most `limit` (default 100000) points in all. A value JSON cannot
 * hold (NaN, infinities) is null in `values` and exact in `value_bits`. */
void api_series_register(void);

/* Most names one series request takes. */
#define SERIES_MAX_NAMES 16

/* series_name_list - "loss,grad_norm" split into `names` (at most SERIES_MAX_NAMES pointers into `buf`, a copy of
 * `list` of `cap` bytes); -1 when a name is empty, there are too many, or `list` does not fit. */
int series_name_list(const char *list, char *buf, size_t cap, const char **names, int *count);

#endif /* SERVER_API_SERIES_H */
