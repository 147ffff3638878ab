/* post.c - bench/fleet's poster: see post.h. */
#include "bench/fleet/post.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define HEAD_MAX 4096 /* a reply's status line and headers */

int fleet_conn_init(fleet_conn *c, const char *base)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    const char *p = "http://127.0.0.1:";
    if (strncmp(base, p, strlen(p)) != 0)
        return -1;
    char *end;
    long port = strtol(base + strlen(p), &end, 10);
    if (port <= 0 || port > 65535 || (*end && strcmp(end, "/") != 0))
        return -1;
    c->port = (int)port;
    snprintf(c->host, sizeof(c->host), "127.0.0.1:%d", c->port);
    return 0;
}

void fleet_conn_close(fleet_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

static int open_conn(fleet_conn *c)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    struct timeval tv = {.tv_sec = 60};
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    c->fd = fd;
    return 0;
}

static int send_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        size_t k = (size_t)w; /* past the parts sent whole, into the one sent in part */
        while (n > 0 && k >= iov->iov_len) {
            k -= iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= k;
        }
    }
    return 0;
}

/* header - the value of header `name` (with its colon) in the head, or NULL. */
static const char *header(const char *head, const char *name)
{
    size_t l = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n"))
        if (!strncasecmp(p + 2, name, l)) {
            p += 2 + l;
            while (*p == ' ' || *p == '\t')
                p++;
            return p;
        }
    return NULL;
}

/* exchange - one request and its reply on the open connection. Returns the status; -1 when the connection failed
 * before any byte of the reply (*none set: a resend may follow), -2 when it failed later or the reply is bad. */
static long exchange(fleet_conn *c, const char *path, const char *ctype, const void *body, size_t len, int *none)
{
    char head[HEAD_MAX + 1];
    int hl =
        snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                 path, c->host, ctype, len);
    if (hl < 0 || hl >= (int)sizeof(head))
        return -2;
    struct iovec iov[2] = {{head, (size_t)hl}, {(void *)body, len}};
    *none = 1;
    if (send_all(c->fd, iov, len ? 2 : 1) < 0)
        return -1;
    size_t got = 0;
    char *eoh = NULL;
    while (!eoh) {
        if (got == HEAD_MAX)
            return -2;
        ssize_t r = recv(c->fd, head + got, HEAD_MAX - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return got ? -2 : -1;
        *none = 0;
        got += (size_t)r;
        head[got] = 0;
        eoh = strstr(head, "\r\n\r\n");
    }
    int status = 0;
    if (sscanf(head, "HTTP/1.%*d %d", &status) != 1)
        return -2;
    const char *cl = header(head, "Content-Length:"), *conn = header(head, "Connection:");
    if (!cl)
        return -2; /* lockstepd answers with a length; nothing here reads to the end of a connection */
    size_t want = strtoul(cl, NULL, 10), have = got - (size_t)(eoh + 4 - head);
    int closing = conn && !strncasecmp(conn, "close", 5);
    if (want > FLEET_REPLY_MAX || have > want)
        return -2;
    memcpy(c->reply, eoh + 4, have);
    while (have < want) {
        ssize_t r = recv(c->fd, c->reply + have, want - have, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -2;
        have += (size_t)r;
    }
    c->reply[have] = 0;
    c->reply_len = have;
    if (closing)
        fleet_conn_close(c);
    return status;
}

long fleet_post(fleet_conn *c, const char *path, const char *ctype, const void *body, size_t len)
{
    c->reply[0] = 0;
    c->reply_len = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = c->fd >= 0, none = 0;
        if (!reused && open_conn(c) < 0)
            return -1;
        long st = exchange(c, path, ctype, body, len, &none);
        if (st >= 0)
            return st;
        fleet_conn_close(c);
        if (!(st == -1 && none && reused))
            return -1; /* only a kept-alive connection closed under the request is worth a second try */
    }
    return -1;
}
