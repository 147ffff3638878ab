/* http.c - a small HTTP client for the agent and `lockstep replay`: libcurl, loaded with dlopen on first use. */
#include "agent/http.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/servers.h"

/* The few libcurl entry points we use, resolved once. */
static struct {
    int loaded; /* 1 ok, -1 failed */
    char why[200];
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLcode (*global_init)(long);
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

struct http_client {
    CURL *h;
    server_list servers; /* tried in turn: the next one after a request that got no answer, or 502-504 */
    int cur;
    char auth[1100];
    char ca[1024];
    const int64_t *abort_at;
    char *resp;
    size_t resp_len, resp_cap;
};

int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void load_curl(void)
{
    static const char *const names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4", "libcurl.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(cu.why, sizeof(cu.why), "cannot load libcurl (libcurl.so.4): %s", dlerror());
        cu.loaded = -1;
        return;
    }
#define SYM(field, name)                                                                                               \
    do {                                                                                                               \
        *(void **)&cu.field = dlsym(lib, name);                                                                        \
        if (!cu.field) {                                                                                               \
            snprintf(cu.why, sizeof(cu.why), "libcurl lacks %s", name);                                                \
            cu.loaded = -1;                                                                                            \
            return;                                                                                                    \
        }                                                                                                              \
    } while (0)
    SYM(easy_init, "curl_easy_init");
    SYM(easy_setopt, "curl_easy_setopt");
    SYM(easy_perform, "curl_easy_perform");
    SYM(easy_getinfo, "curl_easy_getinfo");
    SYM(easy_cleanup, "curl_easy_cleanup");
    SYM(easy_strerror, "curl_easy_strerror");
    SYM(slist_append, "curl_slist_append");
    SYM(slist_free_all, "curl_slist_free_all");
    SYM(global_init, "curl_global_init");
#undef SYM
    /* ALL initializes TLS once, here, under pthread_once. */
    if (cu.global_init(CURL_GLOBAL_ALL) != CURLE_OK) {
        snprintf(cu.why, sizeof(cu.why), "curl_global_init failed");
        cu.loaded = -1;
        return;
    }
    cu.loaded = 1;
}

int http_global_init(char *why, size_t cap)
{
    pthread_once(&cu_once, load_curl);
    if (cu.loaded < 0) {
        snprintf(why, cap, "%s", cu.why);
        return -1;
    }
    return 0;
}

http_client *http_open(const char *base_url, const char *token, const char *ca_file, char *why, size_t cap)
{
    if (http_global_init(why, cap) < 0)
        return NULL;
    http_client *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    if (servers_parse(base_url, &c->servers, why, cap) < 0)
        goto out_free;
    if (token && *token)
        snprintf(c->auth, sizeof(c->auth), "Authorization: Bearer %s", token);
    if (ca_file && *ca_file)
        snprintf(c->ca, sizeof(c->ca), "%s", ca_file);
    c->h = cu.easy_init();
    if (!c->h) {
        snprintf(why, cap, "curl_easy_init failed");
        goto out_free;
    }
    return c;

out_free:
    free(c);
    return NULL;
}

void http_set_abort(http_client *c, const int64_t *abort_at_ns)
{
    c->abort_at = abort_at_ns;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    http_client *c = arg;
    size_t n = size * nmemb;
    if (c->resp && c->resp_len + 1 < c->resp_cap) {
        size_t room = c->resp_cap - 1 - c->resp_len;
        size_t k = n < room ? n : room;
        memcpy(c->resp + c->resp_len, data, k);
        c->resp_len += k;
        c->resp[c->resp_len] = 0;
    }
    return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    http_client *c = arg;
    if (!c->abort_at)
        return 0;
    int64_t at = __atomic_load_n(c->abort_at, __ATOMIC_RELAXED);
    return at != 0 && mono_ns() >= at;
}

long http_request(http_client *c, const char *method, const char *path, const char *ctype, const void *body, size_t len,
                  long timeout_ms, char *resp, size_t resp_cap, char *why, size_t cap)
{
    char url[2048];
    struct curl_slist *hdrs = NULL;
    long status = -1;

    if (c->abort_at) {
        int64_t at = __atomic_load_n(c->abort_at, __ATOMIC_RELAXED);
        if (at) {
            int64_t left_ms = (at - mono_ns()) / 1000000;
            if (left_ms <= 0) {
                snprintf(why, cap, "no time left to send");
                return -1;
            }
            if (left_ms < timeout_ms)
                timeout_ms = left_ms;
        }
    }
    snprintf(url, sizeof(url), "%s%s", c->servers.url[c->cur], path);
    c->resp = resp;
    c->resp_cap = resp_cap;
    c->resp_len = 0;
    if (resp && resp_cap)
        resp[0] = 0;

    CURL *h = c->h;
    char ct[128];
    snprintf(ct, sizeof(ct), "Content-Type: %s", ctype ? ctype : "application/json");
    if (c->auth[0])
        hdrs = cu.slist_append(hdrs, c->auth);
    if (body)
        hdrs = cu.slist_append(hdrs, ct);
    hdrs = cu.slist_append(hdrs, "Expect:");
    cu.easy_setopt(h, CURLOPT_URL, url);
    cu.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu.easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    cu.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 3000 ? timeout_ms : 3000L);
    cu.easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    cu.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    cu.easy_setopt(h, CURLOPT_WRITEDATA, c);
    cu.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    cu.easy_setopt(h, CURLOPT_XFERINFODATA, c);
    cu.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    cu.easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    if (c->ca[0])
        cu.easy_setopt(h, CURLOPT_CAINFO, c->ca);
    if (strcmp(method, "GET") == 0) {
        cu.easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        cu.easy_setopt(h, CURLOPT_POST, 1L);
        cu.easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        cu.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
    }
    CURLcode rc = cu.easy_perform(h);
    if (rc != CURLE_OK) {
        snprintf(why, cap, "%s %s: %s", method, url, cu.easy_strerror(rc));
    } else {
        cu.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (status <= 0) {
            snprintf(why, cap, "%s %s: no HTTP status", method, url);
            status = -1;
        }
    }
    cu.easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    cu.slist_free_all(hdrs);
    c->resp = NULL;
    /* no answer, or a proxy's or a stopping lockstepd's: the caller's next try goes to the next lockstepd (every
     * request the agent sends is safe to send again: batches carry their dedup key) */
    if (c->servers.n > 1 && (status < 0 || (status >= 502 && status <= 504)))
        c->cur = (c->cur + 1) % c->servers.n;
    return status;
}

void http_close(http_client *c)
{
    if (!c)
        return;
    if (c->h)
        cu.easy_cleanup(c->h);
    free(c);
}
