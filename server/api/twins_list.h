/* twins_list.h - GET /api/v1/twins: the twin-group list, filtered by kind, status, user, node and time. */
#ifndef SERVER_API_TWINS_LIST_H
#define SERVER_API_TWINS_LIST_H

/* api_twins_list_register - prepare the list's statements and add GET /api/v1/twins to the route table
 * (docs/server.md). */
void api_twins_list_register(void);

#endif /* SERVER_API_TWINS_LIST_H */
