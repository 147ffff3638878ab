/* read.h - the read endpoints: runs, run detail and records, twin groups, step map, manifest diff, health, metrics. */
#ifndef SERVER_READ_H
#define SERVER_READ_H

#include "server/http.h"

/* read_register - register this module's prepared statements. */
void read_register(void);

/* Each handles one GET endpoint of docs/server.md and replies. */
enum MHD_Result read_health(http_req *req);
enum MHD_Result read_metrics(http_req *req);
enum MHD_Result read_runs(http_req *req);
enum MHD_Result read_run(http_req *req, const char *run_id);
enum MHD_Result read_run_records(http_req *req, const char *run_id);
enum MHD_Result read_twins(http_req *req, const char *group);
enum MHD_Result read_twin_steps(http_req *req, const char *group);
enum MHD_Result read_manifest_diff(http_req *req, const char *group);

/* read_admin_retention - POST /api/v1/admin/retention: drop record
 * partitions older than retain_days now (admin token required). */
enum MHD_Result read_admin_retention(http_req *req);

#endif /* SERVER_READ_H */
