/* uplink.c - one rank's conversation with lockstepd: find or register the run, post batches, manifest and end. */
#include "agent/uplink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "common/wire.h"

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

/* list_runs - GET the server's runs of m->job_id and m->step_id: their list's text in *out (the caller frees it).
 * Returns UP_OK, UP_RETRY (no answer, or *out could not be made) or UP_REJECT. */
static int list_runs(uplink *u, char **out)
{
    spool_meta *m = u->m;
    char path[1600];
    *out = NULL;
    if (wire_lookup_path(m->job_id, m->step_id, path, sizeof(path)) < 0) {
        snprintf(u->last_error, sizeof(u->last_error), "job %.40s step %.40s: too long to look up", m->job_id,
                 m->step_id);
        return UP_REJECT;
    }
    size_t cap = 256 * 1024;
    char *resp = malloc(cap);
    if (!resp)
        return UP_RETRY;
    long status = http_request(u->http, "GET", path, NULL, NULL, 0, u->timeout_ms, resp, cap, u->last_error,
                               sizeof(u->last_error));
    int rc = classify(u, status, resp);
    if (rc != UP_OK) {
        free(resp);
        return rc == UP_REJECT ? UP_REJECT : UP_RETRY;
    }
    *out = resp;
    return UP_OK;
}

/* lookup - find the run of m->job_id and m->step_id in the server's list.
 * Returns UP_OK with m->run_id set, UP_RETRY when absent or unreachable. */
static int lookup(uplink *u)
{
    spool_meta *m = u->m;
    char *resp;
    int rc = list_runs(u, &resp);
    if (rc != UP_OK)
        return rc;
    int got = wire_lookup_pick(resp, m->job_id, m->step_id, m->run_id, sizeof(m->run_id));
    free(resp);
    if (got == 0)
        return UP_OK;
    snprintf(u->last_error, sizeof(u->last_error),
             got > 0 ? "no run of job %s step %s on the server yet"
                     : "the server's runs list for job %s step %s is unreadable",
             m->job_id, m->step_id);
    return UP_RETRY;
}

int uplink_confirm(uplink *u)
{
    spool_meta *m = u->m;
    char *resp;
    if (!m->run_id[0])
        return UP_OK;
    int rc = list_runs(u, &resp);
    if (rc == UP_RETRY)
        return UP_RETRY;
    int has = rc == UP_OK ? wire_lookup_has(resp, m->job_id, m->step_id, m->run_id) : -1;
    free(resp);
    return has == 1 ? UP_REJECT : UP_OK; /* a refusal or an unreadable list cannot tell: kept */
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
    if (wire_obj_string(resp, "run_id", id, sizeof(id)) < 0) {
        snprintf(u->last_error, sizeof(u->last_error), "lockstepd registered the run but sent no run_id: %.300s", resp);
        return UP_REJECT;
    }
    snprintf(m->run_id, sizeof(m->run_id), "%s", id);
    return UP_OK;
}

int uplink_post_batch(uplink *u, const unsigned char *buf, size_t len, char *resp_out, size_t resp_cap)
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
    char local[1024], *resp = resp_out ? resp_out : local;
    size_t cap = resp_out ? resp_cap : sizeof(local);
    resp[0] = 0;
    long status;
    if (relay_post(u->relay, u->m->run_id, out, hlen + (len - body_off), u->timeout_ms, &status, resp, cap)) {
        free(out);
        return classify(u, status, resp);
    }
    status = http_request(u->http, "POST", path, "application/x-lockstep", out, hlen + (len - body_off), u->timeout_ms,
                          resp, cap, u->last_error, sizeof(u->last_error));
    free(out);
    return classify(u, status, resp);
}

int uplink_post_json(uplink *u, const char *what, const char *json, char *resp_out, size_t resp_cap)
{
    char path[400], local[1024], *resp = resp_out ? resp_out : local;
    size_t cap = resp_out ? resp_cap : sizeof(local);
    resp[0] = 0;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/%s", u->m->run_id, what);
    long status = http_request(u->http, "POST", path, "application/json", json, strlen(json), u->timeout_ms, resp, cap,
                               u->last_error, sizeof(u->last_error));
    return classify(u, status, resp);
}
