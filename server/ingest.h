/* ingest.h - the write endpoints: register a run, manifests, record batches, rank ends. */
#ifndef SERVER_INGEST_H
#define SERVER_INGEST_H

#include "server/http.h"

/* ingest_run_create - POST /api/v1/runs. */
enum MHD_Result ingest_run_create(http_req *req);

/* ingest_manifest - POST /api/v1/runs/{run_id}/manifest. */
enum MHD_Result ingest_manifest(http_req *req, const char *run_id);

/* ingest_records - POST /api/v1/runs/{run_id}/records (binary or JSON). */
enum MHD_Result ingest_records(http_req *req, const char *run_id);

/* ingest_end - POST /api/v1/runs/{run_id}/end. */
enum MHD_Result ingest_end(http_req *req, const char *run_id);

#endif /* SERVER_INGEST_H */
