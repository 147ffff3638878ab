/* server.c - lockstepd's HTTP transport on libmicrohttpd: the daemon, one request's life, its checks, its body and
 * arguments. */
#include "server/http/server.h"

#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/text.h"
#include "server/core/clock.h"
#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/state.h"
#include "server/core/xalloc.h"
#include "server/http/conntrack.h"
#include "server/http/defer.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/http/slow.h"
#include "server/http/target.h"

static struct MHD_Daemon *daemon_;
static atomic_int in_flight;
static atomic_size_t buffered; /* body bytes held by all requests together */
static char *tls_key_pem, *tls_cert_pem;

/* on_uri - the request line is in: make the request, keep and check its raw target (libmicrohttpd decodes
 * it in place later; "%00" would cut the path short there, unseen). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    http_req *req = xcalloc(1, sizeof(*req));
    req->conn = conn;
    req->route_metric = MR_OTHER;
    req->t0 = clock_mono_s();
    size_t n = strlen(uri);
    req->target = xmalloc(n + 1);
    memcpy(req->target, uri, n + 1);
    http_target_check(uri, HTTP_TARGET_MAX, req->target_bad, sizeof(req->target_bad));
    return req;
}

/* What the header walk finds. */
typedef struct head_scan {
    int content_length, transfer_encoding;
    char te[64];
    char bad[160];
} head_scan;

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                   const char *value, size_t value_size)
{
    (void)kind;
    head_scan *s = cls;
    if (key_size == 14 && !strncasecmp(key, "Content-Length", 14))
        s->content_length++;
    if (key_size == 17 && !strncasecmp(key, "Transfer-Encoding", 17)) {
        s->transfer_encoding++;
        snprintf(s->te, sizeof(s->te), "%.*s", (int)(value_size < 60 ? value_size : 60), value ? value : "");
    }
    /* Header values: UTF-8, no control bytes but the tab (RFC 9110 field values). */
    int ok = value && strlen(value) == value_size && text_utf8_valid(value, value_size);
    for (size_t i = 0; ok && i < value_size; i++)
        if (((unsigned char)value[i] < 0x20 && value[i] != '\t') || value[i] == 0x7f)
            ok = 0;
    if (!ok && !s->bad[0]) {
        char k[64];
        snprintf(s->bad, sizeof(s->bad), "the value of header %s is not UTF-8 text without control bytes",
                 key ? text_sanitize(key, k, sizeof(k)) : "?");
    }
    return MHD_YES;
}

/* check_head - the request's target, framing and headers, once they are in. Returns 0, or -1 after replying. */
static int check_head(http_req *req)
{
    if (req->target_bad[0]) {
        http_reply_error(req, 400, "bad request target", req->target_bad,
                         "percent-encode the path and query as UTF-8; control bytes are refused");
        return -1;
    }
    head_scan s = {0};
    MHD_get_connection_values_n(req->conn, MHD_HEADER_KIND, scan_header, &s);
    if (s.bad[0]) {
        http_reply_error(req, 400, "bad header", s.bad, "send header values as UTF-8 text");
        return -1;
    }
    if (s.content_length > 1 || s.transfer_encoding > 1 || (s.content_length && s.transfer_encoding)) {
        http_reply_error(req, 400, "bad framing",
                         s.content_length > 1      ? "more than one Content-Length header"
                         : s.transfer_encoding > 1 ? "more than one Transfer-Encoding header"
                                                   : "both Content-Length and Transfer-Encoding",
                         "send exactly one of Content-Length or Transfer-Encoding: chunked");
        return -1;
    }
    if (s.transfer_encoding && strcasecmp(s.te, "chunked") != 0) {
        char detail[128];
        snprintf(detail, sizeof(detail), "Transfer-Encoding \"%s\" is not supported", s.te);
        http_reply_error(req, 501, "unsupported transfer encoding", detail,
                         "send Content-Length, or Transfer-Encoding: chunked");
        return -1;
    }
    return 0;
}

/* begin - the headers are in: check them and the route (auth before any body), and the declared length. */
static int begin(http_req *req)
{
    if (check_head(req) < 0 || route_begin(req) < 0)
        return -1;
    const char *cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
    if (declared > req->body_max) {
        char detail[160];
        snprintf(detail, sizeof(detail), "this endpoint takes bodies of at most %zu bytes; this one is %.30s",
                 req->body_max, cl);
        http_reply_error(req, 413, "request body too large", detail,
                         req->body_max == g_srv.cfg.max_body
                             ? "send smaller batches, or raise max_body_mb in lockstepd.conf"
                             : "see the limits in docs/server.md");
        return -1;
    }
    req->declared = (size_t)declared;
    return 0;
}

static enum MHD_Result too_large(http_req *req)
{
    char detail[128];
    snprintf(detail, sizeof(detail), "this endpoint takes bodies of at most %zu bytes", req->body_max);
    return http_reply_error(req, 413, "request body too large", detail,
                            req->body_max == g_srv.cfg.max_body
                                ? "send smaller batches, or raise max_body_mb in lockstepd.conf"
                                : "see the limits in docs/server.md");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    http_req *req = *con_cls;
    if (!req) /* no request line was seen (cannot happen with on_uri installed) */
        *con_cls = req = on_uri(NULL, url, conn);
    if (!req->started) {
        req->started = 1;
        req->url = url;
        req->method = method;
        req->track = conntrack_of(conn);
        conntrack_phase(req->track, CONN_BODY);
        atomic_fetch_add(&in_flight, 1);
        if (begin(req) < 0)
            req->replied_early = 1; /* the body is never read; libmicrohttpd closes the connection after it */
        return MHD_YES;
    }
    if (req->replied_early) {
        *upload_size = 0;
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
        if (req->too_large || req->len + n > req->body_max) {
            req->too_large = 1;
            atomic_fetch_sub(&buffered, req->cap);
            free(req->body);
            req->body = NULL;
            req->len = req->cap = 0;
            return MHD_YES;
        }
        if (req->len + n + 1 > req->cap) {
            /* a body's first buffer holds what it declared: a digest batch is a few hundred bytes, and a 64 KiB
             * buffer freed for each made glibc's free consolidate its bins every request */
            size_t cap = req->cap ? req->cap : req->declared && req->declared < 65536 ? req->declared + 1 : 65536;
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
    conntrack_phase(req->track, CONN_SERVER);
    if (req->held) { /* a slow thread answered this request (server/http/slow.h) */
        struct MHD_Response *resp = req->held;
        req->held = NULL;
        enum MHD_Result r = MHD_queue_response(conn, (unsigned)req->status, resp);
        MHD_destroy_response(resp);
        return r;
    }
    if (req->reply_status) {
        json_t *reply = req->reply; /* a database worker finished this request */
        req->reply = NULL;
        return http_reply_json(req, req->reply_status, reply);
    }
    if (req->busy)
        return http_reply_error(req, 503, "server busy", "too many request bodies are being received at once",
                                "retry in a moment");
    if (req->too_large)
        return too_large(req);
    return route_dispatch(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)toe;
    http_req *req = *con_cls;
    if (!req)
        return;
    int status = req->status;
    if (!status) {
        /* libmicrohttpd's own answer (a malformed request, headers too large), or none at all */
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
        status = ci ? (int)ci->http_status : 0;
    }
    if (status)
        metrics_request(req->route_metric, status, clock_mono_s() - req->t0);
    else if (req->started)
        metrics_abandoned(req->route_metric); /* the client went away (or timed out) before an answer */
    atomic_fetch_sub(&buffered, req->cap);
    json_decref(req->reply);
    if (req->held)
        MHD_destroy_response(req->held);
    free(req->body);
    free(req->target);
    free(req->segbuf);
    free(req->ctx);
    if (req->started) {
        atomic_fetch_sub(&in_flight, 1);
        conntrack_phase(conntrack_of(conn), CONN_HEADERS); /* the next request on this connection */
    }
    free(req);
    *con_cls = NULL;
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
    if (defer_start(c->db_workers, c->db_group_wait_ms / 1000) < 0 || slow_start(COMPARE_WORKERS) < 0)
        return -1;
    if (conntrack_start(c->header_timeout_s, c->body_timeout_s) < 0)
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
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
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
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)c->max_connections_per_ip, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)c->connection_timeout_s, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_HEAD_MEMORY, NULL},
        {MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)conntrack_notify, NULL},
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, NULL},
        {MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL},
        {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, tls_cert_pem},
        {tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, tls_key_pem},
        {MHD_OPTION_END, 0, NULL},
    };
    daemon_ = MHD_start_daemon(flags, (uint16_t)c->listen_port, NULL, NULL, on_request, NULL, MHD_OPTION_ARRAY, opts,
                               MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!daemon_) {
        log_error("cannot listen on %s:%d (hint: is the port in use? pass --listen ADDR:PORT)", c->listen_host,
                  c->listen_port);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : c->listen_port;
    if (c->read_open && strcmp(c->listen_host, "127.0.0.1") && strcmp(c->listen_host, "::1") &&
        strcmp(c->listen_host, "localhost"))
        log_warn("read_access = open on %s: anyone who reaches it reads every run, manifest and group (hint: serve "
                 "it on a trusted network or behind the site's login proxy, or set read_access = admin; "
                 "docs/server.md, \"Authentication\")",
                 c->listen_host);
    return 0;
}

void http_stop(int grace_s)
{
    if (!daemon_) {
        slow_stop();
        defer_stop();
        conntrack_stop();
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
    slow_stop();
    defer_stop();
    MHD_stop_daemon(daemon_);
    daemon_ = NULL;
    conntrack_stop();
    free(tls_cert_pem);
    free(tls_key_pem);
    tls_cert_pem = tls_key_pem = NULL;
}
