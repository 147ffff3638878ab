/* run_ref.h - the run a URL names (/api/v1/runs/{id}/...): found through the store's cache, or a 404 that says so. */
#ifndef SERVER_API_RUN_REF_H
#define SERVER_API_RUN_REF_H

#include "server/http/request.h"
#include "server/store/runs.h"

/* api_run_reply_unknown - 404 {"error": "unknown run"} for `run_id`, with `hint`. */
enum MHD_Result api_run_reply_unknown(http_req *req, const char *run_id, const char *hint);

/* api_run_find - the run `run_id` into `run`. Returns 0, or -1 after replying
 * 404 (unknown, with `hint`) or 503 (the database failed). */
int api_run_find(http_req *req, const char *run_id, run_info *run, const char *hint);

#endif /* SERVER_API_RUN_REF_H */
