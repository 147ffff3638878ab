/* admin.h - lockstepd's admin endpoints beside retention: minting job tokens. */
#ifndef SERVER_ADMIN_H
#define SERVER_ADMIN_H

#include "server/http.h"

/* admin_mint_token - POST /api/v1/admin/tokens {"job_id": "123"} → 200
 * {"job_id", "token"}: the ingest token of a job, for an admin who launches
 * work outside the SPANK plugin. Needs the admin token (401/403), and a site
 * secret (409 when ingest is open, since no token is needed then). */
enum MHD_Result admin_mint_token(http_req *req);

#endif /* SERVER_ADMIN_H */
