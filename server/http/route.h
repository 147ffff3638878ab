/* route.h - the route table: each handler module registers its routes (method, path pattern, metric label, auth class); the router includes no handler. */
#ifndef SERVER_HTTP_ROUTE_H
#define SERVER_HTTP_ROUTE_H

#include <stddef.h>
#include <microhttpd.h>

#include "server/http/request.h"

/* route_fn - handle a fully received request; `args` are the path segments
 * the pattern's "{}" matched, in order. */
typedef enum MHD_Result (*route_fn)(http_req *req, char **args);

/* Who may call a route; the router checks it before the handler runs. */
enum route_auth {
    AUTH_OPEN,  /* anyone */
    AUTH_READ,  /* read_access: anyone when open, else the admin token */
    AUTH_ADMIN, /* the admin token */
    AUTH_SELF,  /* the handler decides (job tokens: it must find the run or job first) */
};

typedef struct route {
    const char *method;  /* "GET" (HEAD as well) or "POST" */
    const char *pattern; /* "/api/v1/runs/{}/records": each {} matches one path segment */
    int metric;          /* the label it is counted under in /metrics (enum metric_route) */
    int auth;            /* enum route_auth */
    route_fn fn;
} route;

#define ROUTE_MAX_ARGS 4

/* route_add - register `n` routes of `table` (borrowed: it must outlive the
 * server). Call before http_start. */
void route_add(const route *table, size_t n);

/* route_set_fallback - the handler of every GET outside /api/ that no route
 * takes (the dashboard's static files), counted under `metric`. */
void route_set_fallback(route_fn fn, int metric);

/* route_dispatch - find the request's route and call it: 404 when no
 * pattern matches, 405 with an Allow header when the path exists for other
 * methods, the auth class's 401/403, else the handler's reply. */
enum MHD_Result route_dispatch(http_req *req);

#endif /* SERVER_HTTP_ROUTE_H */
