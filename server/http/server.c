/* server.c - lockstepd's HTTP transport on libmicrohttpd: the daemon, bodies in bounded memory, orderly shutdown. */
#include "server/http/server.h"

#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/http/defer.h"
#include "server/http/reply.h"
#include "server/http/route.h"

static struct MHD_Daemon *daemon_;
static atomic_int in_flight;
static atomic_size_t buffered; /* body bytes held by all requests together */
static char *tls_key_pem, *tls_cert_pem;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    http_req *req = *con_cls;
    if (!req) {
        req = xcalloc(1, sizeof(*req));
        req->conn = conn;
        req->url = url;
        req->method = method;
        req->route = MR_OTHER;
        req->t0 = clock_mono_s();
        *con_cls = req;
        atomic_fetch_add(&in_flight, 1);
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > g_srv.cfg.max_body)
            req->too_large = 1;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (req->too_large)
            return MHD_YES;
        if (req->len + n + 1 > req->cap && atomic_load(&buffered) + n > g_srv.cfg.max_buffered) {
            req->busy = 1;
            req->too_large = 1;
        }
        if (req->too_large || req->len + n > g_srv.cfg.max_body) {
            req->too_large = 1;
            atomic_fetch_sub(&buffered, req->cap);
            free(req->body);
            req->body = NULL;
            req->len = req->cap = 0;
            return MHD_YES;
        }
        if (req->len + n + 1 > req->cap) {
            size_t cap = req->cap ? req->cap : 65536;
            while (cap < req->len + n + 1)
                cap *= 2;
            char *b = xrealloc(req->body, cap);
            atomic_fetch_add(&buffered, cap - req->cap);
            req->body = b;
            req->cap = cap;
        }
        memcpy(req->body + req->len, upload, n);
        req->len += n;
        req->body[req->len] = 0;
        return MHD_YES;
    }
    if (req->reply_status) {
        json_t *reply = req->reply; /* a database worker finished this request */
        req->reply = NULL;
        return http_reply_json(req, req->reply_status, reply);
    }
    if (req->busy)
        return http_reply_error(req, 503, "server busy", "too many request bodies are being received at once",
                                "retry in a moment");
    if (req->too_large) {
        char detail[128];
        snprintf(detail, sizeof(detail), "bodies are limited to %zu bytes", g_srv.cfg.max_body);
        return http_reply_error(req, 413, "request body too large", detail,
                                "send smaller batches, or raise max_body_mb in lockstepd.conf");
    }
    return route_dispatch(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    http_req *req = *con_cls;
    if (!req)
        return;
    metrics_request(req->route, req->status ? req->status : 500, clock_mono_s() - req->t0);
    atomic_fetch_sub(&buffered, req->cap);
    json_decref(req->reply);
    free(req->body);
    free(req);
    *con_cls = NULL;
    atomic_fetch_sub(&in_flight, 1);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof(line), fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = 0;
    log_debug("http: %s", line);
}

static char *load_pem(const char *path)
{
    fs_blob b;
    if (fs_blob_load(&b, path) < 0) {
        log_error("cannot read %s: %s (hint: check --tls-cert / --tls-key)", path, strerror(errno));
        return NULL;
    }
    char *s = xmalloc(b.len + 1);
    memcpy(s, b.data, b.len);
    s[b.len] = 0;
    fs_blob_release(&b);
    return s;
}

int http_start(int *port)
{
    const srv_config *c = &g_srv.cfg;
    if (defer_start(c->db_workers) < 0)
        return -1;
    struct addrinfo hints = {0}, *ai = NULL;
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", c->listen_port);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    const char *host = strcmp(c->listen_host, "*") == 0 ? NULL : c->listen_host;
    int gai = getaddrinfo(host, portstr, &hints, &ai);
    if (gai != 0) {
        log_error("cannot resolve listen address %s: %s", c->listen_host, gai_strerror(gai));
        return -1;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG |
                     MHD_ALLOW_SUSPEND_RESUME;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    int tls = c->tls_cert[0] || c->tls_key[0];
    if (tls) {
        if (!c->tls_cert[0] || !c->tls_key[0]) {
            log_error("TLS needs both --tls-cert and --tls-key");
            freeaddrinfo(ai);
            return -1;
        }
        if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
            log_error("this libmicrohttpd has no TLS support");
            freeaddrinfo(ai);
            return -1;
        }
        tls_cert_pem = load_pem(c->tls_cert);
        tls_key_pem = load_pem(c->tls_key);
        if (!tls_cert_pem || !tls_key_pem) {
            freeaddrinfo(ai);
            return -1;
        }
        flags |= MHD_USE_TLS;
    }
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_SOCK_ADDR, 0, ai->ai_addr},
        {MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)c->threads, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)c->max_connections, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)c->connection_timeout_s, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 256 * 1024, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL},
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, NULL},
        {MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL},
        {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, tls_cert_pem},
        {tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, tls_key_pem},
        {MHD_OPTION_END, 0, NULL},
    };
    daemon_ = MHD_start_daemon(flags, (uint16_t)c->listen_port, NULL, NULL, on_request, NULL, MHD_OPTION_ARRAY,
                               opts, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!daemon_) {
        log_error("cannot listen on %s:%d (hint: is the port in use? pass --listen ADDR:PORT)", c->listen_host,
                  c->listen_port);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : c->listen_port;
    return 0;
}

void http_stop(int grace_s)
{
    if (!daemon_) {
        defer_stop();
        return;
    }
    MHD_socket s = MHD_quiesce_daemon(daemon_);
    if (s != MHD_INVALID_SOCKET)
        close(s);
    for (int i = 0; i < grace_s * 20 && atomic_load(&in_flight) > 0; i++)
        usleep(50000);
    if (atomic_load(&in_flight) > 0)
        log_warn("%d requests still in flight after %d s; stopping anyway", atomic_load(&in_flight), grace_s);
    /* Every request a worker holds is replied to and resumed before the daemon, which owns the
     * connections, goes away. */
    defer_stop();
    MHD_stop_daemon(daemon_);
    daemon_ = NULL;
    free(tls_cert_pem);
    free(tls_key_pem);
    tls_cert_pem = tls_key_pem = NULL;
}
