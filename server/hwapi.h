/* hwapi.h - the suspects and alerts endpoints: nodes, node detail and history, admin node actions, alerts and acknowledging them. */
#ifndef SERVER_HWAPI_H
#define SERVER_HWAPI_H

#include "server/http.h"

/* Each handles one endpoint of docs/suspects.md and replies (JSON; errors
 * as {"error", "detail", "hint"}). Reads follow read_access; actions and
 * acknowledgements need the admin token. */
enum MHD_Result hw_nodes_list(http_req *req);
enum MHD_Result hw_node_get(http_req *req, const char *name);
enum MHD_Result hw_node_history(http_req *req, const char *name);
enum MHD_Result hw_node_action(http_req *req, const char *name);
enum MHD_Result hw_alerts_list(http_req *req);
enum MHD_Result hw_alert_ack(http_req *req, const char *id);

#endif /* SERVER_HWAPI_H */
