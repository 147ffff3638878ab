/* conntrack.h - every open HTTP connection with the phase it is in and since when; a watchdog closes those that take
 * too long to send their headers or their body.
 *
 * libmicrohttpd only knows an idle timeout, which a client defeats by sending one byte now and then. Here
 * each connection has deadlines for the phases a client controls: its request's headers must be in within
 * header_timeout seconds (counted from the connection's start, or from the end of its previous request),
 * its body within body_timeout seconds of its headers. A connection past its deadline is shut down
 * (shutdown(2) on its socket, under the same lock that its close takes, so the descriptor is never one
 * reused by another connection); libmicrohttpd then sees the connection end and cleans up. Time spent on
 * the server's side (handlers, database workers, sending the answer) is not counted.
 */
#ifndef SERVER_HTTP_CONNTRACK_H
#define SERVER_HTTP_CONNTRACK_H

#include <microhttpd.h>

enum conn_phase {
    CONN_HEADERS, /* waiting for a request line and its headers */
    CONN_BODY,    /* the headers are in; receiving the body */
    CONN_SERVER,  /* the request is the server's to answer */
};

struct conn_track;

/* conntrack_notify - libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback:
 * starts tracking a connection (in CONN_HEADERS) and stops when it closes. */
void conntrack_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code);

/* conntrack_of - the tracking record of `conn` (NULL when untracked). */
struct conn_track *conntrack_of(struct MHD_Connection *conn);

/* conntrack_phase - move a connection to `phase` now (NULL is ignored). */
void conntrack_phase(struct conn_track *t, enum conn_phase phase);

/* conntrack_start - start the watchdog with these deadlines (seconds; 0
 * turns a deadline off). Returns 0 or -1. */
int conntrack_start(int header_timeout_s, int body_timeout_s);

/* conntrack_stop - stop the watchdog. */
void conntrack_stop(void);

#endif /* SERVER_HTTP_CONNTRACK_H */
