/* route.h - the route table: each handler module registers its routes (method, path pattern, metric label, auth class,
 * body limit, early check); the router includes no handler. */
#ifndef SERVER_HTTP_ROUTE_H
#define SERVER_HTTP_ROUTE_H

#include <stddef.h>
#include <stdint.h>
#include <microhttpd.h>

#include "server/http/request.h"

/* route_fn - handle a fully received request; `args` are the path segments
 * the pattern's "{}" matched, in order (percent-decoded, clean UTF-8). */
typedef enum MHD_Result (*route_fn)(http_req *req, char **args);

/* route_check_fn - a route's own check once its headers are in, before any
 * of its body is read (a job's token against the run in the path, say).
 * Returns 0 to go on, or -1 after replying: the body is then never read. */
typedef int (*route_check_fn)(http_req *req, char **args);

/* Who may call a route; the router checks it before the body is read. */
enum route_auth {
    AUTH_OPEN,  /* anyone */
    AUTH_READ,  /* read_access: anyone when open, else the admin token */
    AUTH_ADMIN, /* the admin token */
    AUTH_SELF,  /* the route's check and handler decide (job tokens: they must find the run or job first) */
};

/* A route's body limit: 0 takes HTTP_BODY_DEFAULT (server/core/limits.h),
 * ROUTE_BODY_CONFIG the configured max_body_mb. */
#define ROUTE_BODY_CONFIG SIZE_MAX

typedef struct route {
    const char *method;  /* "GET" (HEAD as well) or "POST" */
    const char *pattern; /* "/api/v1/runs/{}/records": each {} matches one path segment */
    int metric;          /* the label it is counted under in /metrics (enum metric_route) */
    int auth;            /* enum route_auth */
    route_fn fn;
    size_t max_body;      /* bytes of body it reads (see above) */
    route_check_fn check; /* NULL, or its own check before the body (AUTH_SELF writes) */
    int reads;            /* 1: its statements are reads that may lag a little (the dashboard's, the CLI's): a read
                           * replica answers them when one is configured (db_reads_begin, --read-db), and a JSON
                           * object answer says so ("read_from", "read_lag_s"). 0: the primary's (agents, writes) */
} route;

#define ROUTE_MAX_ARGS HTTP_MAX_ARGS

/* route_add - register `n` routes of `table` (borrowed: it must outlive the
 * server). Call before http_start. */
void route_add(const route *table, size_t n);

/* route_set_fallback - the handler of every GET outside /api/ that no route
 * takes (the dashboard's static files), counted under `metric`. */
void route_set_fallback(route_fn fn, int metric);

/* route_begin - once the request's headers are in: find its route from the
 * raw path (each segment percent-decoded on its own, so "%2F" stays inside
 * its segment), then check the auth class and the route's own check, and set
 * req->body_max. Replies 404 when no pattern matches, 405 with an Allow
 * header when the path takes other methods, the auth class's 401/403, or
 * what the check replies. Returns 0 to read the body, -1 when it replied. */
int route_begin(http_req *req);

/* Where the routes of reads (route.reads) run: main.c gives the database layer's db_reads_begin, db_reads_end,
 * db_reads_on_replica and db_read_lag (server/store/db.h). Without them every route runs as any other. */
typedef struct route_reads_hooks {
    int (*begin)(void);  /* 1 when a read replica takes this thread's statements now */
    void (*end)(void);   /* they go to the primary again */
    int (*on)(void);     /* 1 while they still go to the replica (not given up mid-request) */
    double (*lag)(void); /* the replica's lag in seconds, -1 when unknown */
} route_reads_hooks;

/* route_set_reads - install `h` (borrowed: it must outlive the server). Call before http_start. */
void route_set_reads(const route_reads_hooks *h);

/* route_dispatch - call the handler route_begin found (or the fallback); a route of reads on the read replica when
 * there is one. */
enum MHD_Result route_dispatch(http_req *req);

#endif /* SERVER_HTTP_ROUTE_H */
