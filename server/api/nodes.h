/* nodes.h - the hardware suspects endpoints: nodes with their GPUs and scores, a node's history, admin node actions. */
#ifndef SERVER_API_NODES_H
#define SERVER_API_NODES_H

/* api_nodes_register - add GET /api/v1/nodes, /api/v1/nodes/{name},
 * /api/v1/nodes/{name}/history and POST /api/v1/nodes/{name}/actions to the
 * route table (docs/suspects.md). Reads follow read_access; actions need the
 * admin token. */
void api_nodes_register(void);

#endif /* SERVER_API_NODES_H */
