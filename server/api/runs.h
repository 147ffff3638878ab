/* runs.h - the run read endpoints: the runs list, one run with its manifests and ranks, a run's records. */
#ifndef SERVER_API_RUNS_H
#define SERVER_API_RUNS_H

/* api_runs_register - prepare this module's statements and add GET
 * /api/v1/runs, /api/v1/runs/{id} and /api/v1/runs/{id}/records to the route
 * table (docs/server.md). */
void api_runs_register(void);

#endif /* SERVER_API_RUNS_H */
