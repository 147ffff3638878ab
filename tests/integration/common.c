/* common.c - helpers the lockstepd integration test binaries share on top of harness.h: JSON calls, runs, batches. */
#include "tests/integration/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/lsfp1.h"

long it_call(const h_srv *s, const char *method, const char *path, const char *body, const char *token, json_t **out)
{
    char url[1024], *resp = NULL;
    snprintf(url, sizeof(url), "%s%s", s->base, path);
    long code = h_http(method, url, NULL, body, body ? strlen(body) : 0, token, &resp);
    if (out)
        *out = json_loads(resp, 0, NULL);
    free(resp);
    return code;
}

int it_register(const h_srv *s, const char *job, const char *group, int ranks, long long start_step,
                const char *token, char *run_id)
{
    char body[512];
    if (group)
        snprintf(body, sizeof(body),
                 "{\"job_id\": \"%s\", \"twin_group\": \"%s\", \"ranks\": %d, \"start_step\": %lld, "
                 "\"user\": \"alice\", \"nodes\": \"n[1-2]\", \"command\": \"train\", \"mode\": \"det\"}",
                 job, group, ranks, start_step);
    else
        snprintf(body, sizeof(body), "{\"job_id\": \"%s\", \"ranks\": %d, \"user\": \"bob\"}", job, ranks);
    json_t *o = NULL;
    long code = it_call(s, "POST", "/api/v1/runs", body, token, &o);
    const char *id = json_string_value(json_object_get(o, "run_id"));
    int rc = -1;
    if (code == 201 && id) {
        snprintf(run_id, 40, "%s", id);
        rc = 0;
    }
    json_decref(o);
    return rc;
}

long it_post_steps(const h_srv *s, const char *run_id, int rank, uint64_t batch_seq, int64_t first, int count,
                   int per_step, int64_t flip_step, int flip, int64_t drop_step, int drop, uint64_t *seq,
                   const char *token)
{
    h_batch b = {0};
    h_batch_begin(&b, run_id, (uint32_t)rank, batch_seq);
    for (int64_t step = first; step < first + count; step++) {
        for (int i = 0; i < per_step; i++) {
            if (step == drop_step && i == drop)
                continue;
            char name[64];
            rec_record r = {0};
            uint64_t key[3] = {(uint64_t)rank, (uint64_t)step, (uint64_t)i};
            r.seq = (*seq)++;
            r.step = step;
            r.t_ns = 1000 * (int64_t)r.seq;
            if (i == 0) {
                double loss = 10.0 / (double)(step + 1);
                snprintf(name, sizeof(name), "loss");
                r.level = LS_LEVEL_METRIC;
                r.dtype = LS_F64;
                r.nbytes = 8;
                memcpy(&r.value, &loss, 8);
                r.flags = REC_HAS_VALUE;
                r.fp = fp_lsfp1(&loss, 8);
            } else {
                snprintf(name, sizeof(name), "layer%d.out", i);
                r.level = LS_LEVEL_MODULE;
                r.dtype = LS_F32;
                r.ndim = 2;
                r.shape[0] = 4;
                r.shape[1] = 256;
                r.nbytes = 4096;
                r.fp = fp_lsfp1(key, sizeof(key));
            }
            if (step == flip_step && i == flip) {
                r.fp ^= 0x10;
                r.value ^= 1;
            }
            r.name = name;
            r.name_len = (uint16_t)strlen(name);
            h_batch_add(&b, &r);
        }
    }
    char url[512];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", s->base, run_id);
    long code = h_http("POST", url, "application/x-lockstep", b.buf, b.len, token, NULL);
    h_batch_free(&b);
    return code;
}

long it_end(const h_srv *s, const char *run_id, int rank, const char *token)
{
    char path[256], body[64];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/end", run_id);
    snprintf(body, sizeof(body), "{\"rank\": %d, \"exit_code\": 0}", rank);
    return it_call(s, "POST", path, body, token, NULL);
}

json_t *it_wait_group(const h_srv *s, const char *group, const char *want)
{
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/twins/%s", group);
    json_t *o = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(o);
        o = NULL;
        if (it_call(s, "GET", path, NULL, NULL, &o) == 200 &&
            !strcmp(json_string_value(json_object_get(o, "status")) ?: "", want))
            return o;
        usleep(50000);
    }
    return o;
}
