/* server.h - lockstepd's HTTP transport on libmicrohttpd: the daemon, bodies in bounded memory, orderly shutdown. */
#ifndef SERVER_HTTP_SERVER_H
#define SERVER_HTTP_SERVER_H

#include "server/http/request.h"

/* http_start - bind and start the daemon with the settings in g_srv.cfg
 * (thread pool, limits, timeouts, TLS), the connection watchdog and the
 * database workers (http_defer_grouped). Returns 0, or -1 after logging. The bound
 * port goes to `*port`. */
int http_start(int *port);

/* http_stop - shut the HTTP side down in order: stop accepting, let
 * in-flight requests finish (up to `grace_s` seconds; a request waiting on a
 * database worker is in flight), stop the database workers (each finishes its
 * queue and replies), then stop the daemon. No request is handled after it
 * returns. */
void http_stop(int grace_s);

#endif /* SERVER_HTTP_SERVER_H */
