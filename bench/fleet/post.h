/* post.h - bench/fleet's poster: HTTP/1.1 POSTs on one kept-alive plain TCP connection, written and read with a
 * few system calls and no allocation, so that ten thousand simulated ranks leave the machine to the server they
 * measure (libcurl cost the simulation ~90 µs of CPU a post, as much as lockstepd spent on it). Plain http only:
 * the bench starts its own lockstepd on loopback. */
#ifndef BENCH_FLEET_POST_H
#define BENCH_FLEET_POST_H

#include <stddef.h>

#define FLEET_REPLY_MAX 65536 /* a reply's body kept (a bundle of 256 batches: ~36 KB); longer ones fail the post */

typedef struct fleet_conn {
    int fd;        /* -1: not connected */
    int port;      /* 127.0.0.1:port */
    char host[64]; /* for the Host header */
    char reply[FLEET_REPLY_MAX + 1];
    size_t reply_len;
} fleet_conn;

/* fleet_conn_init - a connection to `base` ("http://127.0.0.1:PORT"), opened at the first post. Returns -1 when
 * `base` is not a plain http address of 127.0.0.1. */
int fleet_conn_init(fleet_conn *c, const char *base);

/* fleet_post - POST `len` bytes of `ctype` to `path`; the reply's body, NUL-terminated, in c->reply. A connection
 * the server closed while idle is opened again and the post sent once more (a batch stored twice is a replay the
 * server refuses, so a resend is safe). Returns the HTTP status, or -1 when no answer came. */
long fleet_post(fleet_conn *c, const char *path, const char *ctype, const void *body, size_t len);

/* fleet_conn_close - close the connection, if open. */
void fleet_conn_close(fleet_conn *c);

#endif /* BENCH_FLEET_POST_H */
