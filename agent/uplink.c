/* uplink.c - one rank's conversation with lockstepd: find or register the run, post batches, manifest and end. */
#include "agent/uplink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"

int uplink_open(uplink *u, spool_meta *m, long timeout_ms, char *why, size_t cap)
{
    memset(u, 0, sizeof(*u));
    u->m = m;
    u->timeout_ms = timeout_ms;
    u->last_status = -1;
    u->http = http_open(m->server, m->token, m->ca_file, why, cap);
    return u->http ? 0 : -1;
}

void uplink_close(uplink *u)
{
    http_close(u->http);
    u->http = NULL;
}

static int classify(uplink *u, long status, const char *resp)
{
    u->last_status = status;
    if (status < 0)
        return UP_RETRY;
    if (status >= 200 && status < 300)
        return UP_OK;
    snprintf(u->last_error, sizeof(u->last_error), "lockstepd answered %ld: %.400s", status, resp ? resp : "");
    if (status >= 500 || status == 408 || status == 429)
        return UP_RETRY;
    return UP_REJECT;
}

/* url_escape - percent-encode `s` for a query string. */
static void url_escape(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n + 4 < cap; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
            *p == '_' || *p == '.' || *p == '~')
            out[n++] = (char)*p;
        else
            n += (size_t)snprintf(out + n, cap - n, "%%%02X", *p);
    }
    out[n] = 0;
}

/* next_element - the bounds of the next object inside the first JSON array
 * of `s`, scanning from *pos (0 on the first call): returns 1 with [*b, *e)
 * the object's text, 0 when there are no more. Strings are skipped, so
 * brackets inside them are fine. */
static int next_element(const char *s, size_t *pos, size_t *b, size_t *e)
{
    size_t i = *pos;
    if (i == 0) {
        const char *a = strchr(s, '[');
        if (!a)
            return 0;
        i = (size_t)(a - s) + 1;
    }
    int depth = 0, in_str = 0;
    size_t start = 0;
    for (; s[i]; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\' && s[i + 1])
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (depth++ == 0)
                start = i;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return 0; /* the end of the list */
            if (--depth == 0 && c == '}') {
                *b = start;
                *e = i + 1;
                *pos = i + 1;
                return 1;
            }
        }
    }
    return 0;
}

/* lookup - find the run of m->job_id and m->step_id in the server's list.
 * Returns UP_OK with m->run_id set, UP_RETRY when absent or unreachable. */
static int lookup(uplink *u)
{
    spool_meta *m = u->m;
    char path[1200], job[500], step[500], id[256], sid[256];
    size_t cap = 256 * 1024;
    char *resp = malloc(cap);
    if (!resp)
        return UP_RETRY;
    url_escape(m->job_id, job, sizeof(job));
    url_escape(m->step_id, step, sizeof(step));
    snprintf(path, sizeof(path), "/api/v1/runs?job=%s&step=%s&limit=1000", job, step);
    long status = http_request(u->http, "GET", path, NULL, NULL, 0, u->timeout_ms, resp, cap, u->last_error,
                               sizeof(u->last_error));
    int rc = classify(u, status, resp);
    if (rc != UP_OK) {
        free(resp);
        return rc == UP_REJECT ? UP_REJECT : UP_RETRY;
    }
    /* Pick the run whose step matches: a server that filters by job only
     * lists every step of the job. */
    size_t pos = 0, b, e;
    rc = UP_RETRY;
    snprintf(u->last_error, sizeof(u->last_error), "no run of job %s step %s on the server yet", m->job_id,
             m->step_id);
    while (next_element(resp, &pos, &b, &e)) {
        char save = resp[e];
        resp[e] = 0;
        int ok = http_json_string(resp + b, "run_id", id, sizeof(id)) == 0 &&
                 (http_json_string(resp + b, "step_id", sid, sizeof(sid)) < 0 || strcmp(sid, m->step_id) == 0);
        char jid[256];
        if (ok && http_json_string(resp + b, "job_id", jid, sizeof(jid)) == 0 && strcmp(jid, m->job_id) != 0)
            ok = 0;
        resp[e] = save;
        if (ok) {
            snprintf(m->run_id, sizeof(m->run_id), "%s", id);
            rc = UP_OK;
            break;
        }
    }
    free(resp);
    return rc;
}

int uplink_resolve(uplink *u)
{
    spool_meta *m = u->m;
    char resp[4096], id[256];

    if (m->run_id[0])
        return UP_OK;
    if (m->rank != 0 || u->reg_tried) {
        /* Other ranks find rank 0's run; rank 0 looks first after an attempt
         * whose answer it never saw, so that it does not register twice. */
        int rc = lookup(u);
        if (rc == UP_OK || m->rank != 0 || u->last_status < 0)
            return rc;
    }
    u->reg_tried = 1;
    long status = http_request(u->http, "POST", "/api/v1/runs", "application/json", m->reg, strlen(m->reg),
                               u->timeout_ms, resp, sizeof(resp), u->last_error, sizeof(u->last_error));
    int rc = classify(u, status, resp);
    if (rc != UP_OK)
        return rc;
    if (http_json_string(resp, "run_id", id, sizeof(id)) < 0) {
        snprintf(u->last_error, sizeof(u->last_error), "lockstepd registered the run but sent no run_id: %.300s",
                 resp);
        return UP_REJECT;
    }
    snprintf(m->run_id, sizeof(m->run_id), "%s", id);
    return UP_OK;
}

int uplink_post_batch(uplink *u, const unsigned char *buf, size_t len)
{
    rec_reader rd;
    char path[400];

    if (rec_reader_init(&rd, buf, len) < 0) {
        snprintf(u->last_error, sizeof(u->last_error), "spooled batch is unreadable: %s", rd.err);
        return UP_REJECT;
    }
    /* The batch may have been framed before the server's run id was known. */
    rec_header h = rd.hdr;
    size_t body_off = rd.off;
    rec_reader_release(&rd);
    snprintf(h.run_id, sizeof(h.run_id), "%s", u->m->run_id);
    size_t hlen = rec_header_size(&h);
    unsigned char *out = malloc(hlen + (len - body_off));
    if (!out) {
        snprintf(u->last_error, sizeof(u->last_error), "out of memory");
        return UP_RETRY;
    }
    rec_header_encode(&h, out);
    memcpy(out + hlen, buf + body_off, len - body_off);

    snprintf(path, sizeof(path), "/api/v1/runs/%s/records", u->m->run_id);
    char resp[1024];
    long status = http_request(u->http, "POST", path, "application/x-lockstep", out, hlen + (len - body_off),
                               u->timeout_ms, resp, sizeof(resp), u->last_error, sizeof(u->last_error));
    free(out);
    return classify(u, status, resp);
}

int uplink_post_json(uplink *u, const char *what, const char *json)
{
    char path[400], resp[1024];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/%s", u->m->run_id, what);
    long status = http_request(u->http, "POST", path, "application/json", json, strlen(json), u->timeout_ms, resp,
                               sizeof(resp), u->last_error, sizeof(u->last_error));
    return classify(u, status, resp);
}
