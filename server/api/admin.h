/* admin.h - lockstepd's admin endpoints: minting job tokens, retention now. */
#ifndef SERVER_API_ADMIN_H
#define SERVER_API_ADMIN_H

/* api_admin_register - add POST /api/v1/admin/tokens ({"job_id"} -> the job's
 * ingest token) and POST /api/v1/admin/retention (drop old record partitions
 * now) to the route table; both need the admin token. */
void api_admin_register(void);

#endif /* SERVER_API_ADMIN_H */
