/* ingest.h - the write endpoints: register a run, manifests, record batches, rank ends. */
#ifndef SERVER_API_INGEST_H
#define SERVER_API_INGEST_H

/* api_ingest_register - add POST /api/v1/runs, .../manifest, .../records and
 * .../end to the route table (docs/server.md). Each checks the job's token
 * itself, once it knows the job. */
void api_ingest_register(void);

#endif /* SERVER_API_INGEST_H */
