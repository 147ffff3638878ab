/* server.h - lockstepd's HTTP transport on libmicrohttpd: the daemon, one request's life, its body and arguments. */
#ifndef SERVER_HTTP_SERVER_H
#define SERVER_HTTP_SERVER_H

#include <stddef.h>
#include <jansson.h>
#include <microhttpd.h>

/* One request while it is being received and handled. */
typedef struct http_req {
    struct MHD_Connection *conn;
    const char *method;
    const char *url;
    char *body;
    size_t len, cap;
    int too_large;
    int busy;          /* the server-wide body budget was exhausted */
    int route;         /* metrics route (enum metric_route) */
    int status;        /* the status replied */
    double t0;         /* monotonic seconds at arrival */
    const char *allow; /* with a 405: the methods the path takes (the Allow header) */
    int reply_status;  /* set by a database worker before it resumes the connection */
    json_t *reply;
} http_req;

/* http_start - bind and start the daemon with the settings in g_srv.cfg
 * (thread pool, limits, TLS), and the database workers (http_defer). Returns
 * 0, or -1 after logging. The bound port goes to `*port`. */
int http_start(int *port);

/* http_stop - shut the HTTP side down in order: stop accepting, let
 * in-flight requests finish (up to `grace_s` seconds; a request waiting on a
 * database worker is in flight), stop the database workers (each finishes its
 * queue and replies), then stop the daemon. No request is handled after it
 * returns. */
void http_stop(int grace_s);

/* http_query - the query argument `key`, or NULL. Borrowed from MHD. */
const char *http_query(http_req *req, const char *key);

/* http_header - the request header `key`, or NULL. */
const char *http_header(http_req *req, const char *key);

#endif /* SERVER_HTTP_SERVER_H */
