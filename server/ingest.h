/* ingest.h - the write endpoints: register a run, manifests, record batches, rank ends. */
#ifndef SERVER_INGEST_H
#define SERVER_INGEST_H

#include "server/http.h"
#include "server/store.h"

/* ingest_run_create - POST /api/v1/runs. */
enum MHD_Result ingest_run_create(http_req *req);

/* ingest_manifest - POST /api/v1/runs/{run_id}/manifest. */
enum MHD_Result ingest_manifest(http_req *req, const char *run_id);

/* ingest_records - POST /api/v1/runs/{run_id}/records (binary or JSON). */
enum MHD_Result ingest_records(http_req *req, const char *run_id);

/* ingest_store - store decoded batch `b` of `run` (one transaction; see
 * store_batch), count it and queue its comparison. Returns the reply object
 * (a new reference) with its HTTP status in `*status`: 200 once committed or
 * for a replay, 503 with an error object when the database failed. */
json_t *ingest_store(const run_info *run, const srv_batch *b, int *status);

/* ingest_end - POST /api/v1/runs/{run_id}/end. */
enum MHD_Result ingest_end(http_req *req, const char *run_id);

#endif /* SERVER_INGEST_H */
