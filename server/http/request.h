/* request.h - one HTTP request as every handler sees it: method, path, body, and its query and header values. */
#ifndef SERVER_HTTP_REQUEST_H
#define SERVER_HTTP_REQUEST_H

#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

#define HTTP_MAX_ARGS 4 /* path segments a route pattern's {} can take */

struct conn_track;

/* One request while it is being received and handled.
 *
 * Its life: the request line arrives (the raw target is kept and checked), the headers arrive (framing,
 * header values, the route, its auth class and its own checks, the body limit: any refusal is answered
 * now, before a byte of the body is read), the body arrives (buffered up to the route's limit and the
 * server's budget), then the handler runs, or a database worker does and the connection waits suspended. */
typedef struct http_req {
    struct MHD_Connection *conn;
    struct conn_track *track; /* the connection's deadlines (server/http/conntrack.h) */
    const char *method;
    const char *url;           /* the decoded path, as libmicrohttpd gives it */
    char *target;              /* the raw request target (path and query), our copy */
    char target_bad[160];      /* why the raw target is refused ("" when it is fine) */
    char *segbuf;              /* the decoded path segments, NUL-separated */
    char *args[HTTP_MAX_ARGS]; /* the segments the route pattern's {} took (into segbuf) */
    const void *route;         /* the route found (const struct route *); NULL: the static fallback */
    size_t body_max;           /* what this request may send */
    int started;               /* the headers were seen and checked */
    int replied_early;         /* a reply was queued before the body was read */
    char *body;
    size_t len, cap;
    size_t declared; /* the Content-Length the client sent (0: none): the body's first buffer */
    int too_large;
    int busy;          /* the server-wide body budget was exhausted */
    int route_metric;  /* metrics route (enum metric_route) */
    int status;        /* the status replied */
    double t0;         /* monotonic seconds at arrival */
    const char *allow; /* with a 405: the methods the path takes (the Allow header) */
    int reply_status;  /* set by a database worker before it resumes the connection */
    json_t *reply;
    int hold_reply; /* a slow thread runs the handler: http_reply keeps the answer in `held` (server/http/slow.h) */
    struct MHD_Response *held; /* the answer the connection's thread queues once it resumes */
    void *ctx;                 /* what a route's check left for its handler (freed with free()) */
    int (*reads_on)(void);     /* the handler began its reads on the read replica (route.h: reads): whether this
                                * thread still reads there (route_reads_hooks.on); NULL when it did not */
    double read_lag;           /* then: the replica's lag in seconds, -1 when unknown */
} http_req;

/* http_query - the query argument `key`, or NULL. Borrowed from MHD. The raw
 * target was checked before (well-formed UTF-8 once decoded, no control bytes),
 * so the value is clean text. */
const char *http_query(http_req *req, const char *key);

/* http_header - the request header `key`, or NULL. Header values were
 * checked before (no control bytes, UTF-8). */
const char *http_header(http_req *req, const char *key);

#endif /* SERVER_HTTP_REQUEST_H */
