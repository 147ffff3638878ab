/* request.h - one HTTP request as every handler sees it: method, path, body, and its query and header values. */
#ifndef SERVER_HTTP_REQUEST_H
#define SERVER_HTTP_REQUEST_H

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

/* http_query - the query argument `key`, or NULL. Borrowed from MHD. */
const char *http_query(http_req *req, const char *key);

/* http_header - the request header `key`, or NULL. */
const char *http_header(http_req *req, const char *key);

#endif /* SERVER_HTTP_REQUEST_H */
