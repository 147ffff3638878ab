/* spank_reg.c - talk to lockstepd from slurmstepd: one short POST each, bounded in time, never retried. */
#include "spank/spank_reg.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * when an HTTP answer came (any status), -1 with `why` on a transport error or timeout. */
static int post_json(const char *url, const char *token, const char *body, int timeout_ms, long *status, reg_buf *resp,
                     char *why, size_t cap)
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

int lsp_reg_register(const char *server, const char *token, const wire_run *info, int timeout_ms, char *run_id,
                     size_t run_id_cap, char *why, size_t cap)
{
    int rv = -1;
    long status = 0;
    reg_buf resp;
    char url[600];
    why[0] = 0;
    snprintf(url, sizeof(url), "%s/api/v1/runs", server);
    char *body = wire_run_body(info);
    if (!body) {
        snprintf(why, cap, "out of memory building the registration");
        return -1;
    }
    if (post_json(url, token, body, timeout_ms, &status, &resp, why, cap))
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
    snprintf(url, sizeof(url), "%s/api/v1/attest", server);
    char *body = wire_attest_body(a);
    if (!body) {
        snprintf(why, cap, "out of memory building the attestation");
        return -1;
    }
    int rv = -1;
    if (post_json(url, attest_token, body, timeout_ms, &status, &resp, why, cap) == 0) {
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
    char url[700], body[96];
    long status = 0;
    reg_buf resp;
    why[0] = 0;
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/end", server, run_id);
    snprintf(body, sizeof(body), "{\"rank\":%ld,\"exit_code\":%d}", rank, exit_code);
    if (post_json(url, token, body, timeout_ms, &status, &resp, why, cap))
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
    snprintf(url, sizeof(url), "%s%s", server, path);
    if (post_json(url, token, NULL, timeout_ms, &status, &resp, why, cap))
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
