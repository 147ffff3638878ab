/* spank_reg.c - talk to lockstepd from slurmstepd: one short POST each, bounded in time, never retried. */
#include "spank/spank_reg.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/servers.h"

/* A response body, kept up to a small cap. */
typedef struct reg_buf {
    char data[4096];
    size_t len;
} reg_buf;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    reg_buf *b = ud;
    size_t n = size * nmemb;
    size_t room = sizeof(b->data) - 1 - b->len;
    size_t take = n < room ? n : room;
    memcpy(b->data + b->len, ptr, take);
    b->len += take;
    b->data[b->len] = 0;
    return n;
}

/* post_json - POST `body` (GET when NULL) to `url`; the status in *status, the answer in `resp`. Returns 0
 * when an HTTP answer came (any status), -1 with `why` on a transport error or timeout (*unreached set when the
 * request never reached the server). */
static int post_json(const char *url, const char *token, const char *body, int timeout_ms, long *status, reg_buf *resp,
                     int *unreached, char *why, size_t cap)
{
    int rv = -1;
    char auth[256];
    struct curl_slist *hdr = NULL;
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(why, cap, "libcurl could not start a request (out of memory?)");
        return -1;
    }
    struct curl_slist *h1 = curl_slist_append(NULL, "Content-Type: application/json");
    if (!h1)
        goto out_cleanup_curl;
    hdr = h1;
    if (token && *token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        struct curl_slist *h2 = curl_slist_append(hdr, auth);
        if (!h2)
            goto out_free_headers;
        hdr = h2;
    }
    resp->len = 0;
    resp->data[0] = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    else
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms < 1000 ? timeout_ms : 1000));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM inside slurmstepd */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        snprintf(why, cap, "%s: %s", url, curl_easy_strerror(cc));
        *unreached = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST;
        goto out_free_headers;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    rv = 0;
out_free_headers:
    curl_slist_free_all(hdr);
out_cleanup_curl:
    curl_easy_cleanup(c);
    if (rv && !why[0])
        snprintf(why, cap, "out of memory");
    return rv;
}

/* post_servers - post_json to `path` of the first lockstepd of list `server` (common/servers.h) that answers: one
 * the request never reached is passed over, and so is any that does not answer a GET (sent twice, it does no
 * harm); a POST that may have arrived is not sent again. The URL asked in `url`. */
static int post_servers(const char *server, const char *path, const char *token, const char *body, int timeout_ms,
                        long *status, reg_buf *resp, char *url, size_t url_cap, char *why, size_t cap)
{
    server_list list;
    if (servers_parse(server, &list, why, cap) < 0)
        return -1;
    int rv = -1;
    for (int k = 0; k < list.n; k++) {
        int unreached = 0;
        snprintf(url, url_cap, "%s%s", list.url[k], path);
        rv = post_json(url, token, body, timeout_ms, status, resp, &unreached, why, cap);
        if (rv == 0 || (!unreached && body))
            break;
    }
    return rv;
}

int lsp_reg_register(const char *server, const char *token, const wire_run *info, int timeout_ms, char *run_id,
                     size_t run_id_cap, char *why, size_t cap)
{
    int rv = -1;
    long status = 0;
    reg_buf resp;
    char url[600];
    why[0] = 0;
    char *body = wire_run_body(info);
    if (!body) {
        snprintf(why, cap, "out of memory building the registration");
        return -1;
    }
    if (post_servers(server, "/api/v1/runs", token, body, timeout_ms, &status, &resp, url, sizeof(url), why, cap))
        goto out_free_body;
    if (status != 201 && status != 200) {
        snprintf(why, cap, "%s answered %ld: %.300s", url, status, resp.data);
        goto out_free_body;
    }
    json_error_t jerr;
    json_t *ans = json_loads(resp.data, 0, &jerr);
    const char *id = ans ? json_string_value(json_object_get(ans, "run_id")) : NULL;
    if (!id || !*id || strlen(id) >= run_id_cap) {
        snprintf(why, cap, "%s answered %ld without a run_id: %.300s", url, status, resp.data);
    } else {
        memcpy(run_id, id, strlen(id) + 1);
        rv = 0;
    }
    json_decref(ans);
out_free_body:
    free(body);
    return rv;
}

int lsp_reg_attest(const char *server, const char *attest_token, const wire_attest *a, int timeout_ms, char *why,
                   size_t cap)
{
    char url[600];
    long status = 0;
    reg_buf resp;
    why[0] = 0;
    char *body = wire_attest_body(a);
    if (!body) {
        snprintf(why, cap, "out of memory building the attestation");
        return -1;
    }
    int rv = -1;
    if (post_servers(server, "/api/v1/attest", attest_token, body, timeout_ms, &status, &resp, url, sizeof(url), why,
                     cap) == 0) {
        if (status == 200)
            rv = 0;
        else
            snprintf(why, cap, "%s answered %ld: %.300s", url, status, resp.data);
    }
    free(body);
    return rv;
}

int lsp_reg_end(const char *server, const char *token, const char *run_id, long rank, int exit_code, int timeout_ms,
                char *why, size_t cap)
{
    char url[700], path[200], body[96];
    long status = 0;
    reg_buf resp;
    why[0] = 0;
    snprintf(path, sizeof(path), "/api/v1/runs/%.100s/end", run_id);
    snprintf(body, sizeof(body), "{\"rank\":%ld,\"exit_code\":%d}", rank, exit_code);
    if (post_servers(server, path, token, body, timeout_ms, &status, &resp, url, sizeof(url), why, cap))
        return -1;
    if (status < 200 || status > 299) {
        snprintf(why, cap, "%s answered %ld: %.300s", url, status, resp.data);
        return -1;
    }
    return 0;
}

int lsp_reg_lookup(const char *server, const char *token, const char *job_id, const char *step_id, int timeout_ms,
                   char *run_id, size_t run_id_cap, char *why, size_t cap)
{
    char url[2200], path[1700];
    long status = 0;
    reg_buf resp;
    why[0] = 0;
    if (wire_lookup_path(job_id, step_id, path, sizeof(path)) < 0) {
        snprintf(why, cap, "job %.40s step %.40s: too long to look up", job_id, step_id);
        return -1;
    }
    if (post_servers(server, path, token, NULL, timeout_ms, &status, &resp, url, sizeof(url), why, cap))
        return -1;
    if (status != 200) {
        snprintf(why, cap, "%s answered %ld: %.300s", url, status, resp.data);
        return -1;
    }
    int got = wire_lookup_pick(resp.data, job_id, step_id, run_id, run_id_cap);
    if (got < 0) {
        snprintf(why, cap, "%s answered with no runs list: %.300s", url, resp.data);
        return -1;
    }
    if (got > 0)
        snprintf(why, cap, "no run of job %s step %s on %s", job_id, step_id, server);
    return got;
}
